//! The insides of the parts drawn once per key (a row's line and details, a needs-you line, a
//! line of "since you last looked"), written as markup text and set as one element's
//! `inner_html`. Each `view!` of distinct shape is a type of its own that the renderer is
//! compiled for (build, rebuild, mount, unmount): the rows' nested options and lists cost
//! more of the page's WebAssembly than a writer of text does (scripts/size-report). Nothing
//! inside follows a signal: what does (a row's opening, a tap) stays on the `view!` around.
//!
//! Every text is escaped here, so a word from the snapshot (a card's title, a reason) is shown
//! as text, never read as markup.

use fleetdash_model::glance::changes::{Change, SinceLooked};
use fleetdash_model::glance::{Checks, Group, HELD_ICON, Need, Row, Section, Strip};
use fleetdash_model::{Band, Glance};

/// A fact longer than this (characters) spans both columns of the facts.
const WIDE_FACT: usize = 20;

/// Markup being written; every text and attribute value escaped.
#[derive(Default)]
struct Markup(String);

impl Markup {
    /// `<name a="v" ...>`.
    fn open(&mut self, name: &str, attrs: &[(&str, &str)]) -> &mut Self {
        self.0.push('<');
        self.0.push_str(name);
        for (key, value) in attrs {
            self.0.push(' ');
            self.0.push_str(key);
            self.0.push_str("=\"");
            self.text(value);
            self.0.push('"');
        }
        self.0.push('>');
        self
    }

    fn close(&mut self, name: &str) -> &mut Self {
        self.0.push_str("</");
        self.0.push_str(name);
        self.0.push('>');
        self
    }

    /// `<name a="v" ...>text</name>`.
    fn element(&mut self, name: &str, attrs: &[(&str, &str)], text: &str) -> &mut Self {
        self.open(name, attrs).text(text).close(name)
    }

    fn text(&mut self, text: &str) -> &mut Self {
        for c in text.chars() {
            match c {
                '&' => self.0.push_str("&amp;"),
                '<' => self.0.push_str("&lt;"),
                '>' => self.0.push_str("&gt;"),
                '"' => self.0.push_str("&quot;"),
                '\'' => self.0.push_str("&#39;"),
                c => self.0.push(c),
            }
        }
        self
    }

    /// A band's icon, hidden from screen readers (the words say the band), then a space.
    fn icon(&mut self, band: Band) -> &mut Self {
        self.icon_text(band.icon())
    }

    fn icon_text(&mut self, icon: &str) -> &mut Self {
        self.open("span", &[("aria-hidden", "true")])
            .text(icon)
            .text(" ")
            .close("span")
    }

    /// An element's alerts held back, in muted words under what it qualifies: it is still shown
    /// in its band, only nobody is paged about it.
    fn held(&mut self, held: Option<&String>) -> &mut Self {
        if let Some(words) = held {
            self.open("small", &[("class", "held")])
                .icon_text(HELD_ICON)
                .text(words)
                .close("small");
        }
        self
    }

    /// The 24 h strip as runs of one kind; labelled for screen readers when `label` is given
    /// (the one in a row's line is decoration: the details say it in words).
    fn strip(&mut self, s: &Strip, label: Option<&str>) -> &mut Self {
        match label {
            Some(l) => self.open(
                "span",
                &[("class", "strip big"), ("role", "img"), ("aria-label", l)],
            ),
            None => self.open("span", &[("class", "strip"), ("aria-hidden", "true")]),
        };
        for (class, n) in s.runs() {
            let style = format!("--n:{n}");
            self.open("i", &[("class", class), ("style", &style)])
                .close("i");
        }
        self.close("span")
    }

    /// A line of "since you last looked": what, how it changed, why, when; leading to its row.
    fn change(&mut self, c: &Change, words: &str) -> &mut Self {
        self.open("li", &[("class", c.band.class())])
            .open("a", &[("href", &format!("#{}", c.anchor))])
            .icon(c.band)
            .element("b", &[], &c.what)
            .text(" ")
            .text(words);
        if let Some(reason) = &c.reason {
            self.text(" · ").text(reason);
        }
        self.text(" ")
            .element("small", &[], &c.when)
            .close("a")
            .close("li")
    }

    /// "and 3 more recovered", when more than [`SINCE_SHOWN`] lines of a kind changed.
    fn more(&mut self, n: usize, what: &str) -> &mut Self {
        if n > SINCE_SHOWN {
            let words = format!("and {} more {what}", n - SINCE_SHOWN);
            self.element("li", &[("class", "more-changes")], &words);
        }
        self
    }

    fn checks(&mut self, c: &Checks) -> &mut Self {
        self.open("div", &[("class", "checks")])
            .element("h4", &[], c.title)
            .open("ul", &[]);
        if c.items.is_empty() {
            self.element("li", &[("class", "empty")], "none configured");
        }
        for i in &c.items {
            self.open("li", &[("class", &format!("check {}", i.band.class()))])
                .icon(i.band)
                .text(&i.text);
            if let Some(why) = &i.why {
                self.element("small", &[("class", "why")], why);
            }
            self.held(i.held.as_ref()).close("li");
        }
        self.close("ul").close("div")
    }
}

/// A row's line, inside its `<summary>`: badge, name, summary, a small strip, and under it
/// what holds its alerts back.
pub fn row_line(r: &Row) -> String {
    let mut m = Markup::default();
    m.open("span", &[("class", "line")])
        .open("span", &[("class", &format!("badge {}", r.band.class()))])
        .icon(r.band)
        .text(r.badge)
        .close("span")
        .element("strong", &[("class", "name")], &r.title)
        .element("span", &[("class", "sum")], &r.summary);
    if let Some(s) = &r.strip {
        m.strip(s, None);
    }
    m.close("span").held(r.held.as_ref());
    m.0
}

/// What a tap on a row shows, inside its `<div class="more">`: the reason first, the code,
/// the facts, a host's checks, the strip with its words and axis.
pub fn row_details(r: &Row) -> String {
    let mut m = Markup::default();
    if let Some(why) = &r.reason {
        m.element("p", &[("class", "reason")], why);
    }
    if let Some(code) = &r.code {
        m.open("p", &[]).element("code", &[], code).close("p");
    }
    m.open("dl", &[("class", "facts")]);
    for f in &r.facts {
        // A long value takes the row's whole width: half of a phone is a column of fragments.
        let wide = f.text.chars().count() > WIDE_FACT || f.held.is_some();
        m.open("div", if wide { &[("class", "wide")] } else { &[] })
            .element("dt", &[], f.label)
            .open(
                "dd",
                &[("class", f.band.map(Band::class).unwrap_or_default())],
            )
            .text(&f.text)
            .held(f.held.as_ref())
            .close("dd")
            .close("div");
    }
    m.close("dl");
    for c in &r.checks {
        m.checks(c);
    }
    if let Some(s) = &r.strip {
        m.open("div", &[("class", "hist")])
            .strip(s, Some(&s.label))
            .open("div", &[("class", "axis"), ("aria-hidden", "true")]);
        for a in s.axis {
            m.element("span", &[], a);
        }
        m.close("div")
            .element("small", &[("aria-hidden", "true")], &s.label)
            .close("div");
    }
    m.0
}

/// A needs-you line, inside its link: "new" when it turned red or amber since the operator
/// last looked; a line that is one sentence (a failing alert channel's) has no separate reason.
pub fn need_line(n: &Need, new: bool) -> String {
    let mut m = Markup::default();
    m.icon(n.band);
    if new {
        m.element("em", &[("class", "new")], "new").text(" ");
    }
    m.element("b", &[], &n.what);
    if !n.reason.is_empty() {
        m.text(" · ")
            .element("span", &[("class", "because")], &n.reason);
    }
    if let Some(since) = &n.since {
        m.text(" ").element("small", &[], since);
    }
    m.held(n.held.as_ref());
    m.0
}

/// Lines of "since you last looked" shown one by one; the rest are counted (a new one is
/// marked "new" in Needs you anyway).
const SINCE_SHOWN: usize = 4;

/// What changed since the operator last looked, and only that: what turned red or amber (red
/// first), what recovered, then "nothing else changed"; one line when nothing did. Each line
/// leads to its row (`#anchor`: the page opens the row it leads to).
pub fn since_looked(s: &SinceLooked) -> String {
    let mut m = Markup::default();
    if s.is_empty() {
        m.open("p", &[("class", "since quiet"), ("id", "since")])
            .text("Since you last looked ")
            .element("small", &[], &format!("({})", s.looked))
            .text(": nothing changed.")
            .close("p");
        return m.0;
    }
    m.open(
        "section",
        &[
            ("class", "since"),
            ("id", "since"),
            ("aria-labelledby", "since-h"),
        ],
    )
    .open("h2", &[("id", "since-h")])
    .text("Since you last looked ")
    .element("small", &[], &format!("({})", s.looked))
    .close("h2")
    .open("ul", &[]);
    for c in s.turned.iter().take(SINCE_SHOWN) {
        let words = if c.band == Band::Red {
            "turned red"
        } else {
            "turned amber"
        };
        m.change(c, words);
    }
    m.more(s.turned.len(), "(marked new in Needs you)");
    for c in s.recovered.iter().take(SINCE_SHOWN) {
        m.change(c, "recovered");
    }
    m.more(s.recovered.len(), "recovered");
    m.close("ul")
        .element("p", &[("class", "empty")], "Nothing else changed.")
        .close("section");
    m.0
}

/// The zone every time of day is said in, beside the page's name.
pub fn zone(zone: &str) -> String {
    let mut m = Markup::default();
    m.open("small", &[("class", "zone")])
        .text("times in ")
        .text(zone)
        .close("small");
    m.0
}

/// The footer's account of the snapshot shown.
pub fn written(when: &str, schema: &str) -> String {
    let mut m = Markup::default();
    m.text("Snapshot written ")
        .text(when)
        .text(" · schema ")
        .text(schema);
    m.0
}

/// The verdict in words, coloured by the worst band, and the counts. While the page cannot be
/// trusted it never says green: it says stale, and what the last snapshot said.
pub fn verdict(g: &Glance, trusted: bool) -> String {
    let (band, words) = g.verdict(trusted);
    let mut m = Markup::default();
    m.open(
        "p",
        &[
            ("class", &format!("verdict {}", band.class())),
            ("id", "verdict"),
        ],
    )
    .icon(band)
    .text(&words)
    .close("p")
    .element("p", &[("class", "counts")], &g.counts.sentence());
    m.0
}

/// The fleet's alert: shown whenever the page cannot be trusted (`lines` say why), with the
/// moment its bands are frozen at. Nothing when it can be.
pub fn banner(lines: &[String], as_of: Option<&str>) -> String {
    let mut m = Markup::default();
    if lines.is_empty() {
        return m.0;
    }
    m.open(
        "div",
        &[
            ("class", "banner"),
            ("role", "alert"),
            ("id", "stale-banner"),
        ],
    )
    .open("strong", &[])
    .icon(Band::Red)
    .text("Do not trust this page yet")
    .close("strong");
    for line in lines {
        m.element("p", &[], line);
    }
    if let Some(at) = as_of {
        m.open("p", &[("class", "frozen")])
            .text("Bands as of ")
            .text(at)
            .text(", the last snapshot.")
            .close("p");
    }
    m.close("div");
    m.0
}

/// A section's heading (its title and when it was checked), its note, and its problem: a
/// failed section in its band, or one that is not configured.
pub fn section_head(s: &Section) -> String {
    let mut m = Markup::default();
    m.open("h2", &[("id", &format!("{}-h", s.id))])
        .text(s.title)
        .text(" ");
    if let Some(checked) = &s.checked {
        let class = if s.stale { "checked stale" } else { "checked" };
        m.element("small", &[("class", class)], checked);
    }
    m.close("h2");
    if let Some(note) = &s.note {
        m.element("p", &[("class", "note")], note);
    }
    if let Some(p) = &s.problem {
        match p.band {
            Some(band) => {
                m.open(
                    "p",
                    &[
                        ("class", &format!("section-error {}", band.class())),
                        ("role", "status"),
                    ],
                )
                .icon(band)
                .text(&p.text)
                .held(p.held.as_ref())
                .close("p");
            }
            None => {
                m.element("p", &[("class", "not-configured")], &p.text);
            }
        }
    }
    m.0
}

/// A group's title line: a titled group (a board column) says its folded cards and its
/// emptiness on it, an untitled one on a line of its own.
pub fn group_head(g: &Group) -> String {
    let aside = [g.empty.map(str::to_string), g.folded.clone()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" · ");
    let mut m = Markup::default();
    match &g.title {
        Some(title) => {
            m.open("h3", &[]).text(title);
            if !aside.is_empty() {
                m.open("small", &[]).text(" · ").text(&aside).close("small");
            }
            m.close("h3");
        }
        None if !aside.is_empty() => {
            m.element("p", &[("class", "empty")], &aside);
        }
        None => {}
    }
    m.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_from_the_snapshot_is_never_markup() {
        let mut m = Markup::default();
        m.element(
            "b",
            &[("title", "a\"b")],
            "<img src=x onerror=alert(1)> & 'q'",
        );
        assert_eq!(
            m.0,
            "<b title=\"a&quot;b\">&lt;img src=x onerror=alert(1)&gt; &amp; &#39;q&#39;</b>"
        );
    }
}
