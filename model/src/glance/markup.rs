//! The insides of the parts drawn once per key (a row's line and details, a needs-you line, a
//! line of "since you last looked"), written as markup text and set as one element's
//! `inner_html`. Each `view!` of distinct shape is a type of its own that the renderer is
//! compiled for (build, rebuild, mount, unmount): the rows' nested options and lists cost
//! more of the page's WebAssembly than a writer of text does (scripts/size-report). Nothing
//! inside follows a signal: what does (a row's opening, a tap) stays on the `view!` around.
//!
//! Every text is escaped here, so a word from the snapshot (a card's title, a reason) is shown
//! as text, never read as markup.
//!
//! It lives in the model, not the page, because the collector writes the page's header too: the
//! first HTML (issue 46, [`first_header`]) carries the verdict and the needs-you lines in the
//! very markup the page then draws, so they paint before the WebAssembly arrives and the page
//! takes over without a flash or a jump.

use chrono::{DateTime, SecondsFormat, Utc};

use super::changes::{Change, SinceLooked};
use super::{Checks, Glance, Group, HELD_ICON, Need, Row, Section, Strip};
use crate::band::Band;

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

    /// The verdict's line and the counts' line; `id` on the verdict's (the page's own, never
    /// twice in one document).
    fn verdict(&mut self, g: &Glance, trusted: bool, id: Option<&str>) -> &mut Self {
        let (band, words) = g.verdict(trusted);
        let class = format!("verdict {}", band.class());
        let mut attrs = vec![("class", class.as_str())];
        attrs.extend(id.map(|id| ("id", id)));
        self.open("p", &attrs)
            .icon(band)
            .text(&words)
            .close("p")
            .element("p", &[("class", "counts")], &g.counts.sentence())
    }

    /// "3 min old · checking…", the age first (the line is cut at the phone's width, never
    /// wrapped), in a `<time>`, as the first HTML's script writes it in the browser.
    fn checking(&mut self, age: &str) -> &mut Self {
        self.open("small", &[("class", "checking")])
            .element("time", &[], age)
            .text(" · checking…")
            .close("small")
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
    m.element("small", &[("class", "zone")], &format!("times in {zone}"));
    m.0
}

/// The page's header as the collector writes it into the first HTML (issue 46), from the
/// glance frozen at the snapshot's time `at` (times of day, never ages: the HTML is read
/// later than it is written). Its parts are the page's own markup, in the page's order, so the
/// page can take its place unseen. Without ids: the page's own header is in the document too,
/// hidden, until it takes over.
///
/// The age is the browser's to say: index.html's script reads `data-at` and writes it into the
/// `<time>` (which says the time of day without JavaScript), says "· checking…" after it (the
/// page checks; without JavaScript nothing does), and puts the `<template>`'s verdict (never green: stale) in place of the first
/// when the snapshot has grown older than `data-limit` seconds (the rules'
/// `snapshot_stale_after_s`), as the page judges it. A snapshot stamped ahead of the reader's
/// clock is left to the page, which judges by the server's clock: the script has only the
/// phone's.
pub fn first_header(g: &Glance, at: DateTime<Utc>, stale_after_s: u64) -> String {
    let at = at.to_rfc3339_opts(SecondsFormat::Millis, true);
    let (limit, stale_title) = (stale_after_s.to_string(), g.title(false));
    let mut m = Markup::default();
    m.open(
        "header",
        &[
            ("class", "top"),
            ("id", "first"),
            ("data-at", &at),
            ("data-limit", &limit),
            ("data-title", &stale_title),
        ],
    )
    .open("h1", &[])
    .text("fleet")
    .open("span", &[("class", "part")])
    .element(
        "small",
        &[("class", "zone")],
        &format!("times in {}", g.zone),
    )
    .close("span")
    .open("span", &[("class", "part")])
    .open("small", &[("class", "checking")])
    .element("time", &[("datetime", &at)], &format!("as of {}", g.as_of))
    .close("small")
    .close("span")
    .close("h1")
    .open("div", &[("class", "part")])
    .verdict(g, true, None)
    .close("div")
    .open("template", &[])
    .verdict(g, false, None)
    .close("template");
    if !g.needs.is_empty() {
        m.open(
            "section",
            &[("class", "needs"), ("aria-label", "Needs you")],
        )
        .element("h2", &[], "Needs you")
        .open("ol", &[]);
        for n in &g.needs {
            m.open("li", &[("class", n.band.class())])
                .open("a", &[("href", &format!("#{}", n.anchor))]);
            m.0.push_str(&need_line(n, false));
            m.close("a").close("li");
        }
        m.close("ol").close("section");
    }
    m.close("header");
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
    let mut m = Markup::default();
    m.verdict(g, trusted, Some("verdict"));
    m.0
}

/// The mark of a snapshot shown before the server has said it is still the last (the service
/// worker's kept copy, or the first HTML): its age, and that it is being checked. It sits on
/// the name's line, so its going moves nothing below it.
pub fn checking(age: &str) -> String {
    let mut m = Markup::default();
    m.checking(age);
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
    use crate::glance::fixtures::*;

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

    /// The first HTML's header says what the page will: the page's verdict markup (without its
    /// id), the stale one kept aside, every needs-you line as the page writes it; its times are
    /// of day and its age is left to the browser.
    #[test]
    fn the_first_header_is_the_pages_own_markup_without_ids() {
        let s = fleet();
        let g = Glance::frozen(&s, utc());
        let header = first_header(&g, s.generated_at, 600);
        assert!(
            header.starts_with(
                "<header class=\"top\" id=\"first\" data-at=\"2026-11-30T19:20:00.000Z\" \
             data-limit=\"600\" data-title=\"✖ stale · fleet\">"
            ),
            "{header}"
        );
        let shown = verdict(&g, true).replacen(" id=\"verdict\"", "", 1);
        assert!(
            header.contains(&format!("<div class=\"part\">{shown}</div>")),
            "{header}"
        );
        let stale = verdict(&g, false).replacen(" id=\"verdict\"", "", 1);
        assert!(stale.contains("stale · last known"), "{stale}");
        assert!(
            header.contains(&format!("<template>{stale}</template>")),
            "{header}"
        );
        assert!(!g.needs.is_empty());
        for n in &g.needs {
            let line = format!(
                "<li class=\"{}\"><a href=\"#{}\">{}</a></li>",
                n.band.class(),
                n.anchor,
                need_line(n, false)
            );
            assert!(header.contains(&line), "{line} not in {header}");
        }
        assert!(
            header.contains(
                "<small class=\"checking\"><time datetime=\"2026-11-30T19:20:00.000Z\">as of \
                 19:20</time></small>"
            ),
            "{header}"
        );
        assert_eq!(header.matches(" id=").count(), 1, "{header}");
    }

    /// Nothing needing the operator: no needs-you section in the first HTML, as on the page.
    #[test]
    fn a_first_header_without_needs_has_no_needs_section() {
        let s = fleet();
        let mut g = Glance::frozen(&s, utc());
        g.needs.clear();
        let header = first_header(&g, s.generated_at, 600);
        assert!(!header.contains("Needs you"), "{header}");
        assert!(header.ends_with("</template></header>"), "{header}");
    }
}
