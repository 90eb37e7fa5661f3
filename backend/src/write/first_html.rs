//! `index.html` with the verdict already in it (issue 46): the page's own index.html with the
//! glance's header of the snapshot just written, so a phone on a slow link paints the verdict
//! and the needs-you lines one round trip after asking, before the WebAssembly arrives. The
//! collector is a static-site generator here: it writes the file into `output_dir` beside
//! status.json, with each snapshot; `serve` and the nginx site answer `/` with it.
//!
//! The header is the model's markup ([`markup::first_header`]), the glance frozen at the
//! snapshot's own time (times of day, never ages: the page says its age in the browser), in the
//! hub's zone, which it names. The page's index.html is the binary's own (the shell): the
//! written file is marked with the shell's id ([`page_id`]), and a server serves it only for
//! the page it was written from ([`is_for`]), never one whose assets it does not name.
//!
//! The header passes the redaction gate (its words are the fleet's); the shell does not: it is
//! the build of the repository's source, and its integrity hashes would read as tokens.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use chrono::FixedOffset;
use fleetdash_model::glance::markup;
use fleetdash_model::{Glance, Snapshot};

use super::atomic;
use crate::redact::RedactionGate;

pub const FILE_NAME: &str = "index.html";

/// The meta element naming the page the file was written from.
const ID_META: &str = "<meta name=fleetdash-page content=";

/// Where the header goes, and the title it replaces: trunk's minified index.html has no
/// `<head>` tag, but always a `</head><body>` and the source's title.
const BODY: &str = "</head><body>";
const TITLE: &str = "<title>fleet</title>";

/// The page's index.html the first HTML is written from, and its id.
#[derive(Debug, Clone)]
pub struct Shell {
    html: String,
    id: String,
}

impl Shell {
    /// The shell of `index_html`; refused when it has no place for the header (not a build of
    /// frontend/index.html).
    pub fn of(index_html: &[u8]) -> Result<Shell> {
        let html = String::from_utf8(index_html.to_vec()).context("the page's index.html")?;
        if html.matches(BODY).count() != 1 || !html.contains(TITLE) {
            bail!("the page's index.html has no `{BODY}` and `{TITLE}` to write the verdict into");
        }
        Ok(Shell {
            id: page_id(index_html),
            html,
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }
}

/// A page's id: its index.html's SHA-256, cut. A new build names new assets, so has a new id.
pub fn page_id(index_html: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, index_html);
    digest.as_ref()[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether `html` (a first HTML as written) was written from the page of id `id`.
pub fn is_for(html: &str, id: &str) -> bool {
    html.find(ID_META)
        .map(|at| &html[at + ID_META.len()..])
        .and_then(|rest| rest.split_once('>'))
        .is_some_and(|(content, _)| content == id)
}

/// The first HTML of `gated` (a snapshot that passed the gate), times of day at `offset`.
pub fn render(
    shell: &Shell,
    gated: &Snapshot,
    offset: FixedOffset,
    gate: &RedactionGate,
) -> String {
    let glance = Glance::frozen(gated, offset);
    let header = markup::first_header(
        &glance,
        gated.generated_at,
        gated.rules.snapshot_stale_after_s,
    );
    let header = gate.redact_str(&header);
    let title = escape(&glance.title(true));
    let title = gate.redact_str(&title);
    let head = format!("{ID_META}{}>{BODY}{header}", shell.id);
    shell
        .html
        .replacen(TITLE, &format!("<title>{title}</title>"), 1)
        .replacen(BODY, &head, 1)
}

/// A title's text in markup (the icons and dots need none; a zone's name or count never holds
/// markup, but the title is escaped all the same).
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The first HTML's file in `output_dir`, written from one page.
#[derive(Debug, Clone)]
pub struct FirstHtml {
    shell: Shell,
    path: PathBuf,
}

impl FirstHtml {
    /// The first HTML of `shell`, written into `output_dir`. A file there written from another
    /// page is removed now: until the first write, the server falls back to the page alone
    /// (the nginx site cannot tell one page from another).
    pub fn new(shell: Shell, output_dir: &Path) -> FirstHtml {
        let path = output_dir.join(FILE_NAME);
        if let Ok(html) = std::fs::read_to_string(&path)
            && !is_for(&html, shell.id())
            && let Err(e) = std::fs::remove_file(&path)
        {
            tracing::warn!(file = %path.display(), "cannot remove the first HTML of another page: {e}");
        }
        FirstHtml { shell, path }
    }

    /// Writes the first HTML of `gated`. Blocking (fsync).
    pub fn write(&self, gated: &Snapshot, offset: FixedOffset, gate: &RedactionGate) -> Result<()> {
        atomic::write(
            &self.path,
            render(&self.shell, gated, offset, gate).as_bytes(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use fleetdash_model::{Band, Probe};

    /// The page's index.html as trunk minifies it: no `<head>` tag, the source's title.
    pub(crate) const SHELL: &str = "<!doctype html><html lang=en><meta charset=utf-8>\
        <title>fleet</title><script>start()</script></head><body><p id=boot>Loading</p>\
        </body></html>";

    fn snapshot_with_a_red_agent(secret: &str) -> Snapshot {
        let at = Utc.with_ymd_and_hms(2026, 11, 30, 6, 0, 0).unwrap();
        let mut s = Snapshot::empty(at, crate::config::fleet_rules());
        (s.stale, s.stale_reasons) = (false, Vec::new());
        let mut lyra = crate::write::history::tests::agent("lyra", false, at);
        lyra.reason = Some(format!("down: token {secret} refused"));
        lyra.band = Band::Red;
        s.agents = Probe::Value(vec![lyra]);
        s
    }

    #[test]
    fn the_header_goes_first_in_the_body_marked_with_its_page() {
        let shell = Shell::of(SHELL.as_bytes()).unwrap();
        let s = snapshot_with_a_red_agent("x");
        let utc = FixedOffset::east_opt(0).unwrap();
        let html = render(&shell, &s, utc, &RedactionGate::default());
        let header = html.split_once("<body>").unwrap().1;
        assert!(
            header.starts_with(
                "<header class=\"top\" id=\"first\" data-at=\"2026-11-30T06:00:00.000Z\""
            ),
            "{html}"
        );
        assert!(header.contains("agent lyra"), "{html}");
        assert!(
            header.ends_with("</header><p id=boot>Loading</p></body></html>"),
            "{html}"
        );
        // The tab says the verdict before the page runs; the shell's script is untouched.
        assert!(html.contains("<title>✖ 1 · fleet</title>"), "{html}");
        assert!(html.contains("<script>start()</script>"), "{html}");
        assert!(is_for(&html, shell.id()), "{html}");
        assert!(!is_for(&html, &page_id(b"another build")));
        assert!(
            !is_for(SHELL, shell.id()),
            "the page itself is no first HTML"
        );
    }

    /// The header is the fleet's words, and passes the gate.
    #[test]
    fn a_secret_in_a_reason_never_reaches_the_file() {
        let secret = "hunter2hunter2";
        let shell = Shell::of(SHELL.as_bytes()).unwrap();
        let s = snapshot_with_a_red_agent(secret);
        let gate = RedactionGate::new([secret.to_string()]);
        let html = render(&shell, &s, FixedOffset::east_opt(0).unwrap(), &gate);
        assert!(html.contains("agent lyra"), "{html}");
        assert!(!html.contains(secret), "{html}");
    }

    #[test]
    fn a_page_with_nowhere_to_put_the_header_is_refused() {
        let error = Shell::of(b"<html><body>no head</body></html>").unwrap_err();
        assert!(error.to_string().contains("</head><body>"), "{error}");
    }

    /// At start, a first HTML written from another build (naming its assets) goes; one of this
    /// page stays until the next write replaces it.
    #[test]
    fn a_first_html_of_another_page_is_removed_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let s = snapshot_with_a_red_agent("x");
        let utc = FixedOffset::east_opt(0).unwrap();
        let old = Shell::of(SHELL.replace("start()", "old()").as_bytes()).unwrap();
        std::fs::write(&path, render(&old, &s, utc, &RedactionGate::default())).unwrap();
        let shell = Shell::of(SHELL.as_bytes()).unwrap();
        let first = FirstHtml::new(shell.clone(), dir.path());
        assert!(!path.exists());
        first.write(&s, utc, &RedactionGate::default()).unwrap();
        let _ = FirstHtml::new(shell.clone(), dir.path());
        assert!(is_for(&std::fs::read_to_string(&path).unwrap(), shell.id()));
    }
}
