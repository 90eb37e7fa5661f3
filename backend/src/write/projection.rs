//! Vault projections: one Hermes board rendered as an Obsidian Kanban board file
//! (`Docs/Kanban/<board>.kanban`, `Pulse/Kanban/<board>.kanban`), the read-only view of
//! spec §3.1 and §3.4. Task truth stays in the Hermes kanban; this file only mirrors it.
//!
//! # Format
//!
//! Exactly the layout the Obsidian Kanban plugin (mgmeyers/obsidian-kanban) writes itself
//! (`templates/board.kanban`): the front matter `kanban-plugin: board`, one `## <Lane>` per
//! board column in board order, `- [ ] <card>` lines (`- [x] ` and a leading `**Complete**` in
//! the `done` lane), the plugin's archive (`***`, `## Archive`) for the `archived` column when the
//! board includes it, and the `%% kanban:settings` block last, with no trailing newline. Cards
//! whose status is not a column get a lane of their own after the columns: nothing is dropped.
//!
//! # The marker, and failing closed
//!
//! Right after the front matter stands an Obsidian comment paragraph whose first line is the
//! marker, `%% fleetdash:generated board=<name> — do not edit: … %%`, followed by a line saying
//! which database the cards come from and as of when. The plugin's parser walks the top-level
//! nodes and only acts from the first `## ` heading on, so a paragraph before the first lane is
//! ignored by it, and Obsidian hides `%% … %%` in reading view. The plugin does not keep that
//! paragraph when it saves a board itself (it writes front matter, lanes, archive and settings
//! only): a board edited through the plugin therefore loses the marker, and from then on this
//! writer refuses it — a human edit is never overwritten. The marker is recognised only in that
//! place (first non-blank line after the front matter), so a note that merely quotes it is not
//! mistaken for a projection.
//!
//! A file is written only when the board declares a target and the target either does not exist
//! or carries the marker of this same board. Anything else (a register such as
//! `fleet-board.md`, a hand-written note, a symbolic link, another board's projection) is left
//! byte for byte as it is and the outcome says why. A retired board writes nothing at all.
//!
//! # Idempotence
//!
//! Only stable card fields are projected (title, assignee, priority, block kind, conditions, id;
//! never ages, `checked_at` or `stale`), in the order the reader gives them. The header's time is
//! when the file's *content* was produced: before writing, the board is rendered again with the
//! time found in the existing file's header, and when that is byte for byte the file on disk the
//! file is not touched ("unchanged", mtime kept). So the time reads "cards as of": an old time
//! means the board has not changed since, and the dashboard shows each run's outcome.
//!
//! # Card text
//!
//! Every piece of card text (and unknown lane names, the database path, the plane) is flattened
//! to one line, passed through the [`RedactionGate`], then escaped (see [`escape`]) so that no
//! title can start a lane, a settings block, a comment, a link, a tag, an embed, a date or a
//! block id; the whole file passes the gate once more before it is written.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::ErrorKind;
use std::path::Path;

use askama::Template;
use chrono::{DateTime, SecondsFormat, Utc};
use fleetdash_model::{Card, Probe};

use super::atomic;
use crate::config::BoardConfig;
use crate::redact::{REDACTED, RedactionGate};

/// The start of the marker line that makes a file ours.
pub const MARKER_PREFIX: &str = "%% fleetdash:generated board=";
/// The start of the header line that carries the content's time.
const HEADER_PREFIX: &str = "%% Read-only projection of the Hermes board ";
const AS_OF: &str = "cards as of ";

/// Outcomes, as the dashboard shows them.
pub const WRITTEN: &str = "written";
pub const UNCHANGED: &str = "unchanged";
/// The job's read of a board, and a retired board's outcome, are the collector's.
pub use crate::collect::projections::{ProjectionSource, RETIRED};

/// The plugin's settings block: the minimum it needs to open the file as a board.
const SETTINGS_JSON: &str = r#"{"kanban-plugin":"board"}"#;
/// The Hermes status whose lane is the plugin's complete lane.
const DONE: &str = "done";
/// The Hermes status projected as the plugin's archive.
const ARCHIVED: &str = "archived";

/// Projects `cards` (read from `source`) into `board`'s vault file, failing closed.
///
/// `columns` are the board's statuses in board order. The outcome is what the dashboard shows:
/// `written`, `unchanged`, `retired: writes nothing`, unknown when the board has no projection
/// target, or an error (a refusal, or an I/O failure naming the file).
pub fn project(
    board: &BoardConfig,
    columns: &[String],
    cards: &[Card],
    source: &ProjectionSource,
    gate: &RedactionGate,
) -> Probe<String> {
    if board.retired {
        return Probe::Value(RETIRED.to_string());
    }
    let Some(target) = board.projection.as_deref() else {
        return Probe::Unknown;
    };
    let view = BoardView {
        board,
        columns,
        cards,
        db: &source.db,
        gate,
    };
    match project_to(target, &view, source.generated_at) {
        Ok(outcome) => Probe::Value(outcome.to_string()),
        Err(reason) => Probe::Error(reason),
    }
}

/// Everything a render needs but the time.
struct BoardView<'a> {
    board: &'a BoardConfig,
    columns: &'a [String],
    cards: &'a [Card],
    db: &'a str,
    gate: &'a RedactionGate,
}

fn project_to(
    target: &Path,
    view: &BoardView,
    generated_at: DateTime<Utc>,
) -> Result<&'static str, String> {
    let shown = target.display();
    // symlink_metadata: a link is refused as it is, never followed (it could lead to a
    // register); a FIFO or device is never opened (reading one could block or have effects).
    let previous = match std::fs::symlink_metadata(target) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(format!(
                "refused: {shown} is a symbolic link; left untouched"
            ));
        }
        Ok(meta) if meta.is_dir() => {
            return Err(format!("cannot write {shown}: it is a directory"));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(format!(
                "refused: {shown} is not a regular file; left untouched"
            ));
        }
        Ok(_) => Some(std::fs::read(target).map_err(|e| format!("cannot read {shown}: {e}"))?),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot inspect {shown}: {e}")),
    };

    if let Some(bytes) = &previous {
        let text = std::str::from_utf8(bytes).ok();
        let ours = marker_name(&view.board.name);
        match text.and_then(marker_board) {
            None => {
                return Err(format!(
                    "refused: {shown} has no fleetdash marker (hand-edited?); left untouched"
                ));
            }
            Some(other) if other != ours => {
                return Err(format!(
                    "refused: {shown} carries the fleetdash marker of board {other:?}, not \
                     {ours:?}; left untouched"
                ));
            }
            Some(_) => {}
        }
        // Same cards as the file on disk, rendered with the file's own time: leave it be.
        if let Some(as_of) = text.and_then(header_time)
            && render(view, as_of)?.as_bytes() == bytes.as_slice()
        {
            return Ok(UNCHANGED);
        }
    }

    let text = render(view, generated_at)?;
    if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            format!(
                "cannot write {shown}: cannot create the folder {}: {e}",
                dir.display()
            )
        })?;
    }
    atomic::write(target, text.as_bytes()).map_err(|e| format!("cannot write {shown}: {e:#}"))?;
    Ok(WRITTEN)
}

#[derive(Template)]
#[template(path = "board.kanban", escape = "none")]
struct BoardFile {
    marker: String,
    header: String,
    lanes: Vec<Lane>,
    archive: Vec<String>,
    settings: &'static str,
}

struct Lane {
    title: String,
    complete: bool,
    cards: Vec<String>,
}

impl Lane {
    fn check(&self) -> &'static str {
        if self.complete { "x" } else { " " }
    }
}

/// The file's text for `view` with the header time `as_of`.
fn render(view: &BoardView, as_of: DateTime<Utc>) -> Result<String, String> {
    let gate = view.gate;
    let mut lanes: Vec<Lane> = Vec::new();
    let mut lane_of: HashMap<&str, usize> = HashMap::new();
    let mut has_archive = false;
    for column in view.columns {
        if column == ARCHIVED {
            has_archive = true;
        } else if !lane_of.contains_key(column.as_str()) {
            lane_of.insert(column, lanes.len());
            lanes.push(Lane {
                title: lane_title(column, gate),
                complete: column == DONE,
                cards: Vec::new(),
            });
        }
    }
    let mut archive = Vec::new();
    for card in view.cards {
        let text = card_text(card, gate);
        if card.status == ARCHIVED && has_archive {
            archive.push(text);
            continue;
        }
        let i = *lane_of.entry(card.status.as_str()).or_insert_with(|| {
            // A status that is not a column still shows, in a lane of its own.
            lanes.push(Lane {
                title: format!("{} (not a board column)", lane_title(&card.status, gate)),
                complete: false,
                cards: Vec::new(),
            });
            lanes.len() - 1
        });
        lanes[i].cards.push(text);
    }

    let name = marker_name(&view.board.name);
    let db = comment_text(view.db, gate);
    let plane = view
        .board
        .plane
        .as_deref()
        .map(|p| format!(" ({} plane)", comment_text(p, gate)))
        .unwrap_or_default();
    let file = BoardFile {
        marker: format!(
            "{MARKER_PREFIX}{name} — do not edit: rewritten from {db} whenever the board \
             changes %%"
        ),
        header: format!(
            "{HEADER_PREFIX}{name}{plane}, generated by fleetdash; {AS_OF}{}; change cards in \
             Hermes, not here. %%",
            as_of.to_rfc3339_opts(SecondsFormat::Secs, true)
        ),
        lanes,
        archive,
        settings: SETTINGS_JSON,
    };
    let text = file
        .render()
        .map_err(|e| format!("cannot render the projection of board {name}: {e}"))?;
    // The second wall: every field passed the gate; the whole file must, too.
    if !gate.is_clean(&text) {
        return Err(format!(
            "refused: the projection of board {name} still matched a secret pattern after \
             redaction; nothing written"
        ));
    }
    Ok(text)
}

/// A lane heading's text: a known Hermes status reads as a word, any other is escaped text.
fn lane_title(status: &str, gate: &RedactionGate) -> String {
    let known = match status {
        "triage" => "Triage",
        "todo" => "To Do",
        "scheduled" => "Scheduled",
        "ready" => "Ready",
        "running" => "Running",
        "blocked" => "Blocked",
        "review" => "Review",
        "done" => "Done",
        "archived" => "Archived",
        _ => "",
    };
    if !known.is_empty() {
        return known.to_string();
    }
    match inline(status, gate) {
        t if t.is_empty() => "(no status)".to_string(),
        t => t,
    }
}

/// One card's text: the title, then a compact suffix read left to right as
/// `@owner #p<priority> ⛔ <block kind> ⚠ <condition>… · <id>`. The priority is an Obsidian tag
/// (filterable in the plugin); nothing from the card can form another tag.
fn card_text(card: &Card, gate: &RedactionGate) -> String {
    let mut text = inline(&card.title, gate);
    if text.is_empty() {
        text.push_str("(untitled)");
    }
    if let Some(owner) = card.assignee.as_deref().map(|a| inline(a, gate))
        && !owner.is_empty()
    {
        text.push_str(" @");
        text.push_str(&owner);
    }
    if let Some(priority) = card.priority {
        text.push_str(&format!(" #p{priority}"));
    }
    if let Some(kind) = card.block_kind.as_deref().map(|k| inline(k, gate))
        && !kind.is_empty()
    {
        text.push_str(" ⛔ ");
        text.push_str(&kind);
    }
    for condition in &card.conditions {
        let condition = inline(condition, gate);
        if !condition.is_empty() {
            text.push_str(" ⚠ ");
            text.push_str(&condition);
        }
    }
    let id = inline(&card.id, gate);
    if !id.is_empty() {
        text.push_str(" · ");
        text.push_str(&id);
    }
    text
}

/// Data made safe for one line of card text: flattened, redacted, escaped.
fn inline(raw: &str, gate: &RedactionGate) -> String {
    let flat = flatten(raw);
    let escaped = escape(&gate.redact_str(&flat));
    // Escaping adds backslashes, which can lengthen a `key=value` run past the gate's minimum:
    // gate again, and escape what the gate puts in so it cannot form `[[` with its neighbours.
    match gate.redact_str(&escaped) {
        Cow::Borrowed(_) => escaped,
        Cow::Owned(again) => again.replace(REDACTED, &escape(REDACTED)),
    }
}

/// Data made safe inside the header's `%% … %%` comment: one line, redacted, and no `%` that
/// could close the comment early (a fullwidth `％` stands in).
fn comment_text(raw: &str, gate: &RedactionGate) -> String {
    gate.redact_str(&flatten(raw)).replace('%', "％")
}

/// The board's name as the marker spells it: one token.
fn marker_name(name: &str) -> String {
    comment_text(name, &RedactionGate::default()).replace(' ', "_")
}

/// One line: every run of whitespace or control characters (newlines, CR, tabs, U+2028/2029,
/// NEL, NUL, ESC…) becomes one space; invisible format characters that reorder or hide text
/// (bidi overrides and isolates, zero-width space, word joiner, BOM) are dropped.
fn flatten(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        if c.is_whitespace() || c.is_control() {
            if !out.is_empty() && !out.ends_with(' ') {
                out.push(' ');
            }
        } else if !matches!(c, '\u{200B}' | '\u{2060}' | '\u{FEFF}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
        {
            out.push(c);
        }
    }
    if out.ends_with(' ') {
        out.pop();
    }
    out
}

/// Characters backslash-escaped wherever they stand (all ASCII punctuation, so `\c` is a
/// CommonMark escape and renders as `c`; the plugin's micromark parser reads it the same way):
/// `\` (so data cannot escape our escapes), `` ` `` (code spans would disable the escapes inside
/// them), `*` (`**Complete**`, emphasis), `#` (headings, Obsidian tags), `%` (Obsidian `%%`
/// comments: after escaping no two `%` are ever adjacent), `[` `]` (wiki links, embeds, links,
/// task markers: no two `[` are ever adjacent), `<` (HTML, autolinks), `$` (math), `^` (block
/// ids), `{` `}` (the plugin's `@{date}` and `@@{time}`).
const ESCAPED_EVERYWHERE: &[char] = &['\\', '`', '*', '#', '%', '[', ']', '<', '$', '^', '{', '}'];

/// Characters escaped when they open the text, where they would start a block when the plugin
/// renders the card on its own: lists (`-`, `+`, `1.`, `1)`), quotes (`>`), thematic breaks
/// (`---`, `___`), setext underlines (`===`) and fences (`~~~`).
const ESCAPED_LEADING: &[char] = &['-', '+', '>', '_', '=', '~'];

/// Card text that cannot break the board: see [`ESCAPED_EVERYWHERE`] and [`ESCAPED_LEADING`].
/// The text is already one line, so it can never start a line of the file: every card line
/// starts with `- [ ] ` and a heading line with `## `.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if ESCAPED_EVERYWHERE.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    if out.starts_with(ESCAPED_LEADING) {
        out.insert(0, '\\');
    } else {
        let digits = out.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && matches!(out.as_bytes().get(digits), Some(b'.' | b')')) {
            out.insert(digits, '\\');
        }
    }
    out
}

/// The board named by the marker, if the file carries one where this writer puts it: the first
/// non-blank line after the front matter.
fn marker_board(text: &str) -> Option<&str> {
    let mut lines = text.lines();
    if lines.next()? != "---" {
        return None;
    }
    lines.by_ref().find(|l| *l == "---")?;
    let line = lines.find(|l| !l.trim().is_empty())?;
    let rest = line.strip_prefix(MARKER_PREFIX)?;
    rest.split_whitespace().next()
}

/// The content time in the header of a file this writer made.
fn header_time(text: &str) -> Option<DateTime<Utc>> {
    let line = text.lines().find(|l| l.starts_with(HEADER_PREFIX))?;
    let (_, rest) = line.split_once(AS_OF)?;
    let stamp = rest.split(';').next()?;
    DateTime::parse_from_rfc3339(stamp.trim())
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::tests::PLANTED;
    use chrono::TimeZone;
    use std::path::PathBuf;

    fn at(h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 10, 20, h, 54, 0).unwrap()
    }

    fn board(name: &str, projection: Option<PathBuf>) -> BoardConfig {
        BoardConfig {
            name: name.to_string(),
            plane: Some("Docs".into()),
            db: PathBuf::from("/k/research.db"),
            projection_rel: projection
                .as_ref()
                .map(|_| format!("Docs/Kanban/{name}.kanban")),
            projection,
            retired: false,
            include_archived: false,
            dispatch_config: None,
        }
    }

    fn card(id: &str, status: &str, title: &str) -> Card {
        Card {
            board: "research".into(),
            id: id.into(),
            title: title.into(),
            status: status.into(),
            assignee: None,
            priority: None,
            age_s: 0,
            block_kind: None,
            latest_activity_at: None,
            conditions: Vec::new(),
            band: fleetdash_model::Band::Green,
            checked_at: at(0),
            stale: false,
        }
    }

    fn render_of(b: &BoardConfig, columns: &[&str], cards: &[Card], t: DateTime<Utc>) -> String {
        let columns: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        let gate = RedactionGate::default();
        let view = BoardView {
            board: b,
            columns: &columns,
            cards,
            db: "/k/research.db",
            gate: &gate,
        };
        render(&view, t).unwrap()
    }

    #[test]
    fn lanes_are_laid_out_exactly_as_the_plugin_writes_them() {
        // The reference's minimal example, with our header between front matter and lanes.
        let b = board("research", None);
        let text = render_of(
            &b,
            &["todo", "done"],
            &[card("", "todo", "Card A"), card("", "done", "Card B")],
            at(22),
        );
        let (head, body) = text.split_once("\n\n## ").unwrap();
        assert!(
            head.starts_with(
                "---\n\nkanban-plugin: board\n\n---\n\n%% fleetdash:generated board=research "
            ),
            "{head}"
        );
        assert_eq!(
            format!("## {body}"),
            "## To Do\n\n- [ ] Card A\n\n\n## Done\n\n**Complete**\n- [x] Card B\n\n\n\n\n\
             %% kanban:settings\n```\n{\"kanban-plugin\":\"board\"}\n```\n%%"
        );
    }

    #[test]
    fn empty_lanes_and_the_archive_follow_the_plugin_too() {
        let b = board("research", None);
        let text = render_of(
            &b,
            &["todo", "done", "archived"],
            &[card("a", "archived", "Old"), card("b", "archived", "Older")],
            at(22),
        );
        let body = &text[text.find("## To Do").unwrap()..];
        assert_eq!(
            body,
            "## To Do\n\n\n\n## Done\n\n**Complete**\n\n\n***\n\n## Archive\n\n- [ ] Old · a\n\
             - [ ] Older · b\n\n%% kanban:settings\n```\n{\"kanban-plugin\":\"board\"}\n```\n%%"
        );
    }

    #[test]
    fn a_card_whose_status_is_not_a_column_gets_its_own_lane() {
        let b = board("research", None);
        let text = render_of(&b, &["todo"], &[card("x", "limbo", "Lost?")], at(1));
        assert!(
            text.contains("## limbo (not a board column)\n\n- [ ] Lost? · x\n"),
            "{text}"
        );
    }

    #[test]
    fn the_suffix_names_owner_priority_block_and_conditions() {
        let mut c = card("t_8d7bde82", "blocked", "Write the brief");
        c.assignee = Some("min".into());
        c.priority = Some(2);
        c.block_kind = Some("needs_input".into());
        c.conditions = vec!["crashed".into(), "timed_out".into()];
        assert_eq!(
            card_text(&c, &RedactionGate::default()),
            "Write the brief @min #p2 ⛔ needs_input ⚠ crashed ⚠ timed_out · t_8d7bde82"
        );
    }

    #[test]
    fn escaping_neutralises_every_marker() {
        for (raw, want) in [
            ("# Heading", "\\# Heading"),
            ("%% kanban:settings", "\\%\\% kanban:settings"),
            ("- [ ] fake", "\\- \\[ \\] fake"),
            ("***", "\\*\\*\\*"),
            ("---", "\\---"),
            ("**Complete**", "\\*\\*Complete\\*\\*"),
            (
                "see [[Note]] ![[x.png]]",
                "see \\[\\[Note\\]\\] !\\[\\[x.png\\]\\]",
            ),
            ("```rust", "\\`\\`\\`rust"),
            ("12. twelve", "12\\. twelve"),
            ("3) three", "3\\) three"),
            ("> quote", "\\> quote"),
            ("due @{2026-01-01}", "due @\\{2026-01-01\\}"),
            ("end ^blockid", "end \\^blockid"),
            ("tag #urgent", "tag \\#urgent"),
            ("<b>x</b>", "\\<b>x\\</b>"),
            ("a\\", "a\\\\"),
            ("plain words, 50 cats", "plain words, 50 cats"),
        ] {
            assert_eq!(escape(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn text_is_flattened_to_one_line() {
        assert_eq!(
            flatten("  one\ntwo\r\nthree\rfour\tfive\u{2028}six\u{0}seven\u{202E}  "),
            "one two three four five six seven"
        );
    }

    #[test]
    fn escaping_cannot_smuggle_a_secret_past_the_gate() {
        // Short enough to pass the gate raw, long enough once escaped.
        let gate = RedactionGate::default();
        assert!(gate.is_clean("password=[[x]]"));
        let out = inline("password=[[x]]", &gate);
        assert!(gate.is_clean(&out), "{out}");
        assert!(!out.contains("[["), "{out}");
        for secret in PLANTED {
            let out = inline(&format!("deploy {secret} now"), &gate);
            assert!(!out.contains("PLANTED"), "{out}");
            assert!(out.contains("\\[redacted\\]"), "{out}");
        }
    }

    #[test]
    fn the_marker_is_only_recognised_where_the_writer_puts_it() {
        let b = board("research", None);
        let text = render_of(&b, &["todo"], &[], at(3));
        assert_eq!(marker_board(&text), Some("research"));
        assert_eq!(header_time(&text), Some(at(3)));
        let quoted = format!("---\nstatus: superseded\n---\n\n# Fleet board\n\n{text}");
        assert_eq!(marker_board(&quoted), None);
        assert_eq!(marker_board("no front matter"), None);
        assert_eq!(marker_board(&text.replacen("---", "--", 1)), None);
    }

    #[test]
    fn outcomes_without_a_target_or_when_retired() {
        let gate = RedactionGate::default();
        let src = ProjectionSource::new(Path::new("/k/research.db"), at(1));
        assert_eq!(
            project(&board("research", None), &[], &[], &src, &gate),
            Probe::Unknown
        );
        let mut retired = board("research", Some(PathBuf::from("/nonexistent/x.kanban")));
        retired.retired = true;
        assert_eq!(
            project(&retired, &[], &[], &src, &gate),
            Probe::Value(RETIRED.to_string())
        );
    }
}
