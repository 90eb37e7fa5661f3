//! The vault projection writer (spec §3.1, §3.4): the Obsidian Kanban format byte for byte
//! (golden file), failing closed on files it did not write, idempotent, retired boards, hostile
//! card text re-parsed with the plugin's rules, secrets, and unwritable targets.
//!
//! `FLEETDASH_UPDATE_GOLDEN=1 cargo test -p fleetdash --test integration projection::` rewrites the golden
//! file after a deliberate format change; review its diff before committing it.

use crate::support;

use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, TimeZone, Utc};
use fleetdash::config::BoardConfig;
use fleetdash::redact::RedactionGate;
use fleetdash::write::projection::{
    MARKER_PREFIX, ProjectionSource, RETIRED, UNCHANGED, WRITTEN, project,
};
use fleetdash_model::{Band, Card, Probe};

const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/golden/research.kanban"
);

/// Every Hermes column, archived included, in board order.
const COLUMNS: &[&str] = &[
    "triage",
    "todo",
    "scheduled",
    "ready",
    "running",
    "blocked",
    "review",
    "done",
    "archived",
];

/// Titles that try to break out of their card, one way each.
const HOSTILE: &[&str] = &[
    "# Heading in a title",
    "## Fake lane",
    "%% kanban:settings",
    "%%",
    "half a comment %% opened here",
    "- [ ] a card inside a card",
    "- [x] done already?",
    "***",
    "---",
    "___",
    "===",
    "~~~ fence",
    "**Complete**",
    "Line one\n## Injected lane\n- [ ] injected card",
    "carriage\rreturn\r\nand CRLF",
    "tab\tseparated\tvalues",
    "unicode\u{2028}line\u{2029}separators\u{85}and NEL",
    "nul\u{0}and escape\u{1b}[31m",
    "[[Secret Note]] and ![[diagram.png]]",
    "a]]b[[c",
    "[link](Other.md)",
    "```\ncode fence\n```",
    "`inline code` with `%%` inside",
    "1. ordered",
    "2) ordered",
    "> quoted",
    "+ plus list",
    "<script>alert(1)</script>",
    "due @{2026-01-01} at @@{10:00} or @[[2026-01-02]]",
    "ends with a block id ^abc123",
    "$x^2$ math",
    "trailing backslash \\",
    "\\# already escaped",
    "#urgent tag and #p1",
    "50% done",
    "",
    "   \n\t  ",
    "\u{202E}reversed\u{2066}",
];

fn at(h: u32, m: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 10, 20, h, m, 0).unwrap()
}

fn columns() -> Vec<String> {
    COLUMNS.iter().map(|c| c.to_string()).collect()
}

fn board(target: Option<PathBuf>) -> BoardConfig {
    BoardConfig {
        name: "research".into(),
        plane: Some("Docs".into()),
        db: PathBuf::from("/srv/hermes/kanban/boards/research/kanban.db"),
        projection_rel: target
            .as_ref()
            .map(|_| "Docs/Kanban/research.kanban".into()),
        projection: target,
        retired: false,
        include_archived: true,
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
        age_s: 42,
        block_kind: None,
        latest_activity_at: None,
        conditions: Vec::new(),
        band: Band::Green,
        checked_at: at(22, 50),
        stale: false,
    }
}

fn with(
    mut c: Card,
    assignee: Option<&str>,
    priority: Option<i64>,
    block: Option<&str>,
    conditions: &[&str],
) -> Card {
    c.assignee = assignee.map(Into::into);
    c.priority = priority;
    c.block_kind = block.map(Into::into);
    c.conditions = conditions.iter().map(|s| s.to_string()).collect();
    c
}

/// The golden board: every column, a card whose status is not a column, realistic cards and
/// hostile titles.
fn research_cards() -> Vec<Card> {
    vec![
        with(
            card("t_01a", "triage", "Sort the inbox from Young"),
            None,
            None,
            None,
            &[],
        ),
        with(
            card("t_02b", "triage", "# Not a heading"),
            Some("min"),
            Some(3),
            None,
            &[],
        ),
        with(
            card("t_03c", "todo", "Compare A2A dialects v1 vs v0.3"),
            Some("mira"),
            Some(2),
            None,
            &[],
        ),
        with(
            card("t_04d", "todo", "- [ ] not a nested card\n## not a lane"),
            Some("nova"),
            None,
            None,
            &[],
        ),
        with(
            card("t_05e", "scheduled", "Weekly backup audit"),
            Some("sol"),
            Some(1),
            None,
            &[],
        ),
        with(
            card("t_06f", "ready", "Read [[Secret Note]] then %% comment"),
            Some("echo"),
            None,
            None,
            &[],
        ),
        with(
            card("t_07a", "running", "Summarise `kanban_db_dispatch.py`"),
            Some("min"),
            Some(2),
            None,
            &[],
        ),
        with(
            card("t_08b", "running", "Pull arm64 images"),
            Some("tam"),
            Some(1),
            None,
            &["crashed", "not dispatchable on this host (tam)"],
        ),
        with(
            card("t_09c", "blocked", "Wait for the tunnel on 18443"),
            Some("nova"),
            Some(2),
            Some("dependency"),
            &["timed_out"],
        ),
        with(
            card("t_10d", "blocked", "Ask Young: 50% of budget?"),
            Some("mira"),
            None,
            Some("needs_input"),
            &[],
        ),
        with(
            card("t_11e", "review", "**Complete**"),
            Some("sol"),
            Some(0),
            None,
            &["reclaimed"],
        ),
        with(
            card("t_12f", "done", "Projection writer"),
            Some("min"),
            Some(2),
            None,
            &[],
        ),
        with(card("t_13a", "done", "---"), None, None, None, &[]),
        with(
            card("t_14b", "archived", "Old fleet-board.md register"),
            Some("tam"),
            None,
            None,
            &[],
        ),
        with(
            card("t_15c", "limbo", "A status Hermes added later"),
            None,
            None,
            None,
            &["stale"],
        ),
    ]
}

fn source(db: &str, generated_at: DateTime<Utc>) -> ProjectionSource {
    ProjectionSource {
        db: db.into(),
        generated_at,
    }
}

fn default_source(generated_at: DateTime<Utc>) -> ProjectionSource {
    source("/srv/hermes/kanban/boards/research/kanban.db", generated_at)
}

fn vault() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("Docs/Kanban/research.kanban");
    (dir, target)
}

fn value(s: &str) -> Probe<String> {
    Probe::Value(s.to_string())
}

fn checksum(path: &Path) -> u64 {
    let mut h = DefaultHasher::new();
    h.write(&std::fs::read(path).unwrap());
    h.finish()
}

/// Byte checksum, inode and mtime: a rewrite (atomic rename) changes the inode even within the
/// clock's granularity.
fn fingerprint(path: &Path) -> (u64, u64, SystemTime, Vec<u8>) {
    let meta = std::fs::metadata(path).unwrap();
    (
        checksum(path),
        meta.ino(),
        meta.modified().unwrap(),
        std::fs::read(path).unwrap(),
    )
}

/// Backdates a file so that any rewrite would show in its mtime.
fn backdate(path: &Path) {
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(old)
        .unwrap();
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

// ---------------------------------------------------------------------------------------------
// A tiny parser with the plugin's rules (reference: obsidian-kanban-format.md): front matter,
// lanes start at `## `, end at the next heading or at `%% kanban:settings`; `***` before
// `## Archive` opens the archive; the settings block ends the file. Stricter than the plugin:
// any line that is not one of these shapes fails the test.

#[derive(Debug, Default)]
struct Parsed {
    /// Comment lines between the front matter and the first lane.
    header: Vec<String>,
    lanes: Vec<ParsedLane>,
    archive: Vec<String>,
    settings: String,
}

#[derive(Debug)]
struct ParsedLane {
    title: String,
    complete: bool,
    cards: Vec<(bool, String)>,
}

fn parse(text: &str) -> Parsed {
    let rest = text
        .strip_prefix("---\n\nkanban-plugin: board\n\n---\n\n")
        .expect("front matter as the plugin writes it");
    let (body, settings) = rest
        .rsplit_once("\n\n%% kanban:settings\n```\n")
        .expect("a settings block");
    let settings = settings
        .strip_suffix("\n```\n%%")
        .expect("the settings block ends the file");
    assert!(!settings.contains('\n'), "one line of JSON: {settings}");
    serde_json::from_str::<serde_json::Value>(settings).expect("settings are JSON");

    let mut parsed = Parsed {
        settings: settings.to_string(),
        ..Parsed::default()
    };
    let mut in_archive = false;
    let mut after_break = false;
    for line in body.lines() {
        if line.is_empty() {
            continue;
        }
        if line.starts_with("%% kanban:settings") {
            panic!("a settings paragraph inside the board: {line:?}");
        }
        if line.starts_with('#') {
            let title = line.strip_prefix("## ").expect("only level-2 headings");
            if after_break && title == "Archive" {
                in_archive = true;
            } else {
                assert!(!in_archive, "a lane after the archive: {line:?}");
                parsed.lanes.push(ParsedLane {
                    title: title.to_string(),
                    complete: false,
                    cards: Vec::new(),
                });
            }
            after_break = false;
            continue;
        }
        assert!(!after_break, "`***` must be followed by `## Archive`");
        if line == "***" {
            after_break = true;
            continue;
        }
        if line.starts_with("%%") && parsed.lanes.is_empty() && !in_archive {
            parsed.header.push(line.to_string());
            continue;
        }
        if line == "**Complete**" {
            let lane = parsed.lanes.last_mut().expect("**Complete** inside a lane");
            assert!(lane.cards.is_empty(), "**Complete** comes before the cards");
            lane.complete = true;
            continue;
        }
        let (done, text) = if let Some(t) = line.strip_prefix("- [ ] ") {
            (false, t)
        } else if let Some(t) = line.strip_prefix("- [x] ") {
            (true, t)
        } else {
            panic!("a line the board cannot explain: {line:?}");
        };
        assert_inert(text);
        if in_archive {
            parsed.archive.push(text.to_string());
        } else {
            let lane = parsed.lanes.last_mut().expect("a card inside a lane");
            assert_eq!(done, lane.complete, "checked exactly in the complete lane");
            lane.cards.push((done, text.to_string()));
        }
    }
    parsed
}

/// Card text that Obsidian or the plugin could read as anything but text: comments, wiki links,
/// embeds, tags (other than our `#p<n>`), dates, code, HTML.
fn assert_inert(text: &str) {
    for bad in ["%%", "[[", "]]", "@{", "@@{", "@[[", "\n", "\r"] {
        assert!(!text.contains(bad), "{bad:?} in card text {text:?}");
    }
    let chars: Vec<char> = text.chars().collect();
    let mut escaped = false;
    for (i, &c) in chars.iter().enumerate() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '`' | '<' | '$' | '[' | ']' | '%' | '{' | '}' | '^' | '*' => {
                panic!("unescaped {c:?} in card text {text:?}")
            }
            '#' => {
                let tag: String = chars[i + 1..]
                    .iter()
                    .take_while(|c| !c.is_whitespace())
                    .collect();
                let ours = i > 0
                    && chars[i - 1] == ' '
                    && tag
                        .strip_prefix('p')
                        .is_some_and(|n| n.parse::<i64>().is_ok());
                assert!(ours, "a tag that is not a priority in {text:?}");
            }
            _ => {}
        }
    }
    assert!(!escaped, "a dangling backslash in {text:?}");
}

/// What a CommonMark renderer shows for escaped text.
fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && next.is_ascii_punctuation()
        {
            out.push(next);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// What a title becomes on one line: control characters and whitespace runs are one space,
/// invisible reordering characters are gone.
fn one_line(title: &str) -> String {
    let spaced: String = title
        .chars()
        .filter(|c| !matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    spaced.split_whitespace().collect::<Vec<_>>().join(" ")
}

// ---------------------------------------------------------------------------------------------

#[test]
fn the_golden_board_is_byte_for_byte_the_obsidian_kanban_format() {
    let (_vault, target) = vault();
    let outcome = project(
        &board(Some(target.clone())),
        &columns(),
        &research_cards(),
        &default_source(at(22, 54)),
        &RedactionGate::default(),
    );
    assert_eq!(outcome, value(WRITTEN));
    let written = std::fs::read_to_string(&target).unwrap();
    if std::env::var_os("FLEETDASH_UPDATE_GOLDEN").is_some() {
        std::fs::write(GOLDEN, &written).unwrap();
    }
    let golden = std::fs::read_to_string(GOLDEN).expect("tests/golden/research.kanban");
    assert!(
        written == golden,
        "the projection differs from {GOLDEN}:\n--- written ---\n{written}\n--- golden ---\n{golden}"
    );

    // And it is the board the cards describe.
    let parsed = parse(&written);
    let titles: Vec<&str> = parsed.lanes.iter().map(|l| l.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Triage",
            "To Do",
            "Scheduled",
            "Ready",
            "Running",
            "Blocked",
            "Review",
            "Done",
            "limbo (not a board column)"
        ]
    );
    let counts: Vec<usize> = parsed.lanes.iter().map(|l| l.cards.len()).collect();
    assert_eq!(counts, [2, 2, 1, 1, 2, 2, 1, 2, 1]);
    assert_eq!(parsed.archive.len(), 1);
    let complete: Vec<&str> = parsed
        .lanes
        .iter()
        .filter(|l| l.complete)
        .map(|l| l.title.as_str())
        .collect();
    assert_eq!(complete, ["Done"]);
    assert!(parsed.header[0].starts_with(&format!("{MARKER_PREFIX}research ")));
    assert_eq!(parsed.settings, r#"{"kanban-plugin":"board"}"#);
}

#[test]
fn a_hand_edited_file_is_refused_and_left_byte_for_byte_untouched() {
    let (_vault, target) = vault();
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    // A register like fleet-board.md: a kanban board, but written by hand (no marker).
    let hand = "---\n\nkanban-plugin: board\nstatus: superseded\n\n---\n\n## Custom section\n\n\
                - [ ] kept by hand\n\n\n\n\n%% kanban:settings\n```\n{\"kanban-plugin\":\"board\"}\n```\n%%";
    std::fs::write(&target, hand).unwrap();
    backdate(&target);
    let before = fingerprint(&target);
    let outcome = project(
        &board(Some(target.clone())),
        &columns(),
        &research_cards(),
        &default_source(at(22, 54)),
        &RedactionGate::default(),
    );
    assert_eq!(
        outcome,
        Probe::Error(format!(
            "refused: {} has no fleetdash marker (hand-edited?); left untouched",
            target.display()
        ))
    );
    assert_eq!(fingerprint(&target), before);
    assert_eq!(listing(target.parent().unwrap()), ["research.kanban"]);

    // A note that merely quotes the marker further down is not ours either.
    let quoting =
        format!("---\nstatus: superseded\n---\n\n# Fleet board\n\n{MARKER_PREFIX}research x %%\n");
    std::fs::write(&target, &quoting).unwrap();
    let outcome = project(
        &board(Some(target.clone())),
        &columns(),
        &[],
        &default_source(at(22, 54)),
        &RedactionGate::default(),
    );
    assert!(outcome.is_error(), "{outcome:?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), quoting);

    // Nor is an empty file, or one that is not UTF-8.
    for bytes in [&b""[..], &b"\xff\xfe---\n"[..]] {
        std::fs::write(&target, bytes).unwrap();
        let outcome = project(
            &board(Some(target.clone())),
            &columns(),
            &[],
            &default_source(at(22, 54)),
            &RedactionGate::default(),
        );
        assert!(
            outcome
                .error_reason()
                .is_some_and(|r| r.contains("no fleetdash marker")),
            "{outcome:?}"
        );
        assert_eq!(std::fs::read(&target).unwrap(), bytes);
    }
}

#[test]
fn another_boards_projection_is_refused() {
    let (_vault, target) = vault();
    let mut other = board(Some(target.clone()));
    other.name = "daily-operation".into();
    let gate = RedactionGate::default();
    let src = default_source(at(22, 0));
    assert_eq!(
        project(&other, &columns(), &[], &src, &gate),
        value(WRITTEN)
    );
    let before = fingerprint(&target);
    let outcome = project(&board(Some(target.clone())), &columns(), &[], &src, &gate);
    assert!(
        outcome
            .error_reason()
            .is_some_and(|r| r.starts_with("refused:") && r.contains("\"daily-operation\"")),
        "{outcome:?}"
    );
    assert_eq!(fingerprint(&target), before);
}

#[test]
fn a_file_with_our_marker_is_rewritten() {
    let (_vault, target) = vault();
    let gate = RedactionGate::default();
    let b = board(Some(target.clone()));
    let first = vec![card("t_1", "todo", "First")];
    assert_eq!(
        project(&b, &columns(), &first, &default_source(at(21, 0)), &gate),
        value(WRITTEN)
    );
    // A raw edit that keeps the marker is overwritten: the file says "do not edit".
    let edited = std::fs::read_to_string(&target)
        .unwrap()
        .replace("- [ ] First", "- [ ] First, edited by hand");
    std::fs::write(&target, &edited).unwrap();

    let second = vec![card("t_1", "done", "First"), card("t_2", "todo", "Second")];
    assert_eq!(
        project(&b, &columns(), &second, &default_source(at(21, 30)), &gate),
        value(WRITTEN)
    );
    let text = std::fs::read_to_string(&target).unwrap();
    assert!(text.contains("cards as of 2026-10-20T21:30:00Z;"), "{text}");
    let parsed = parse(&text);
    let done = parsed.lanes.iter().find(|l| l.title == "Done").unwrap();
    assert_eq!(done.cards, [(true, "First · t_1".to_string())]);
    assert!(!text.contains("edited by hand"));
    assert_eq!(listing(target.parent().unwrap()), ["research.kanban"]);
}

#[test]
fn the_same_board_twice_is_unchanged_and_the_file_is_not_touched() {
    let (_vault, target) = vault();
    let gate = RedactionGate::default();
    let b = board(Some(target.clone()));
    let cards = research_cards();
    assert_eq!(
        project(&b, &columns(), &cards, &default_source(at(22, 0)), &gate),
        value(WRITTEN)
    );
    backdate(&target);
    let before = fingerprint(&target);

    // Thirty minutes later, same cards (their ages and check times moved on).
    let mut later = cards.clone();
    for c in &mut later {
        c.age_s += 1800;
        c.checked_at = at(22, 30);
    }
    assert_eq!(
        project(&b, &columns(), &later, &default_source(at(22, 30)), &gate),
        value(UNCHANGED)
    );
    assert_eq!(fingerprint(&target), before, "rewritten although unchanged");
    assert!(String::from_utf8_lossy(&before.3).contains("cards as of 2026-10-20T22:00:00Z;"));

    // A changed card is written, with the new time.
    later[0].title = "Sort the inbox from Young (again)".into();
    assert_eq!(
        project(&b, &columns(), &later, &default_source(at(23, 0)), &gate),
        value(WRITTEN)
    );
    let text = std::fs::read_to_string(&target).unwrap();
    assert!(text.contains("cards as of 2026-10-20T23:00:00Z;"), "{text}");
    assert!(text.contains("(again)"));
}

#[test]
fn a_retired_board_writes_nothing_even_over_its_own_file() {
    let (_vault, target) = vault();
    let gate = RedactionGate::default();
    let mut b = board(Some(target.clone()));
    assert_eq!(
        project(&b, &columns(), &[], &default_source(at(20, 0)), &gate),
        value(WRITTEN)
    );
    backdate(&target);
    let before = fingerprint(&target);
    b.retired = true;
    assert_eq!(
        project(
            &b,
            &columns(),
            &research_cards(),
            &default_source(at(21, 0)),
            &gate
        ),
        value(RETIRED)
    );
    assert_eq!(fingerprint(&target), before);

    // And creates nothing where there is no file.
    let (vault, fresh) = vault();
    b.projection = Some(fresh.clone());
    assert_eq!(
        project(
            &b,
            &columns(),
            &research_cards(),
            &default_source(at(21, 0)),
            &gate
        ),
        value(RETIRED)
    );
    assert!(!fresh.exists());
    assert!(listing(vault.path()).is_empty());
}

#[test]
fn a_board_without_a_target_is_unknown() {
    assert_eq!(
        project(
            &board(None),
            &columns(),
            &research_cards(),
            &default_source(at(20, 0)),
            &RedactionGate::default()
        ),
        Probe::Unknown
    );
}

#[test]
fn every_hostile_title_stays_inside_its_own_card() {
    let (_vault, target) = vault();
    // Round-robin over every column (archive included), so each lane gets its share.
    let cards: Vec<Card> = HOSTILE
        .iter()
        .enumerate()
        .map(|(i, title)| card(&format!("h{i}"), COLUMNS[i % COLUMNS.len()], title))
        .collect();
    let outcome = project(
        &board(Some(target.clone())),
        &columns(),
        &cards,
        &default_source(at(22, 54)),
        &RedactionGate::default(),
    );
    assert_eq!(outcome, value(WRITTEN));
    let text = std::fs::read_to_string(&target).unwrap();
    let parsed = parse(&text);

    let lane_titles = [
        "Triage",
        "To Do",
        "Scheduled",
        "Ready",
        "Running",
        "Blocked",
        "Review",
        "Done",
    ];
    assert_eq!(
        parsed
            .lanes
            .iter()
            .map(|l| l.title.as_str())
            .collect::<Vec<_>>(),
        lane_titles,
        "{text}"
    );
    let mut seen = Vec::new();
    for (lane, status) in parsed.lanes.iter().zip(COLUMNS) {
        let expected = cards.iter().filter(|c| c.status == *status).count();
        assert_eq!(lane.cards.len(), expected, "lane {}:\n{text}", lane.title);
        seen.extend(lane.cards.iter().map(|(_, t)| t.clone()));
    }
    let archived = cards.iter().filter(|c| c.status == "archived").count();
    assert_eq!(parsed.archive.len(), archived, "{text}");
    seen.extend(parsed.archive.iter().cloned());
    assert_eq!(seen.len(), HOSTILE.len());

    // Each card reads back as its title on one line, in the card that carries its id.
    for card_text in &seen {
        let (title, id) = card_text
            .rsplit_once(" · ")
            .expect("the id closes the card");
        let i: usize = id.strip_prefix('h').unwrap().parse().unwrap();
        let want = match one_line(HOSTILE[i]) {
            t if t.is_empty() => "(untitled)".to_string(),
            t => t,
        };
        assert_eq!(unescape(title), want, "card {id}: {card_text:?}");
    }
}

#[test]
fn hostile_owners_conditions_and_statuses_cannot_break_the_board_either() {
    let (_vault, target) = vault();
    let cards = vec![
        with(
            card("x1", "todo", "fine"),
            Some("## lane"),
            Some(-1),
            Some("%% kanban:settings"),
            &["[[link]]\n## more", "#tag"],
        ),
        with(
            card("x2\n## id", "## status\n- [ ] x", "fine too"),
            Some("a\nb"),
            None,
            None,
            &[],
        ),
    ];
    let outcome = project(
        &board(Some(target.clone())),
        &columns(),
        &cards,
        &source("/db/with %% percent\n## and newline.db", at(1, 0)),
        &RedactionGate::default(),
    );
    assert_eq!(outcome, value(WRITTEN));
    let text = std::fs::read_to_string(&target).unwrap();
    let parsed = parse(&text);
    assert_eq!(parsed.header.len(), 2, "{text}");
    assert!(
        parsed
            .header
            .iter()
            .all(|l| l.ends_with(" %%") && l.matches("%%").count() == 2)
    );
    let total: usize = parsed.lanes.iter().map(|l| l.cards.len()).sum();
    assert_eq!(total, 2, "{text}");
    assert_eq!(parsed.lanes.len(), COLUMNS.len() - 1 + 1, "{text}");
    assert!(
        parsed
            .lanes
            .last()
            .unwrap()
            .title
            .ends_with("(not a board column)")
    );
}

#[test]
fn no_secret_reaches_the_vault() {
    const SECRETS: &[&str] = &[
        "sk-ant-api03-PLANTEDabcdefghijklmnop0123456789",
        "Bearer PLANTEDtokenabcdefghij0123456789",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.c2lnbmF0dXJlUExBTlRFRA",
        "https://young:PLANTEDpass@example.invalid/path",
        "0x5f2b1d0c8a7e6f4b3a29180716253443526170819a8b7c6d5e4f3a2b1c0d9e8f",
        "PLANTEDknownsecret",
    ];
    // Every shape glued to each kind of neighbour too (issue 21).
    let glued = support::secrets::GLUED.iter().map(|g| g.value.as_str());
    let planted: Vec<&str> = SECRETS.iter().copied().chain(glued).collect();
    let (_vault, target) = vault();
    let gate = RedactionGate::new(["PLANTEDknownsecret".to_string()]);
    let mut cards = Vec::new();
    for (i, secret) in planted.iter().enumerate() {
        cards.push(with(
            card(
                &format!("s{i} {secret}"),
                COLUMNS[i % COLUMNS.len()],
                &format!("deploy with {secret}\nnow [{secret}]"),
            ),
            Some(secret),
            None,
            Some(secret),
            &[secret, &format!("token={secret}")],
        ));
    }
    let outcome = project(
        &board(Some(target.clone())),
        &columns(),
        &cards,
        &source("/k/token=PLANTEDdbsecret/research.db", at(2, 0)),
        &gate,
    );
    assert_eq!(outcome, value(WRITTEN));
    let text = std::fs::read_to_string(&target).unwrap();
    for needle in [
        "PLANTED",
        "sk-ant",
        "eyJ",
        "young:",
        "5f2b1d0c8a7e6f4b3a29180716253443526170819a8b7c6d5e4f3a2b1c0d9e8f",
    ] {
        assert!(!text.contains(needle), "{needle} leaked:\n{text}");
    }
    if let Some(found) = support::secrets::find_secret(&text) {
        panic!("{found} leaked:\n{text}");
    }
    assert!(gate.is_clean(&text));
    assert!(text.contains("\\[redacted\\]"));
    // Redaction does not cost a card.
    let parsed = parse(&text);
    let total = parsed.lanes.iter().map(|l| l.cards.len()).sum::<usize>() + parsed.archive.len();
    assert_eq!(total, planted.len());
}

#[test]
fn a_directory_at_the_target_is_an_error_naming_it() {
    let (vault, target) = vault();
    std::fs::create_dir_all(target.join("inside")).unwrap();
    std::fs::write(target.join("inside/note.md"), "keep").unwrap();
    let outcome = project(
        &board(Some(target.clone())),
        &columns(),
        &research_cards(),
        &default_source(at(2, 0)),
        &RedactionGate::default(),
    );
    assert_eq!(
        outcome,
        Probe::Error(format!(
            "cannot write {}: it is a directory",
            target.display()
        ))
    );
    assert_eq!(listing(&target), ["inside"]);
    assert_eq!(
        std::fs::read_to_string(target.join("inside/note.md")).unwrap(),
        "keep"
    );
    assert_eq!(
        listing(&vault.path().join("Docs/Kanban")),
        ["research.kanban"]
    );
}

#[test]
fn an_unwritable_target_is_an_error_naming_it_and_touches_nothing() {
    // A regular file where the Kanban folder should be: no folder, no file can be made.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("Docs")).unwrap();
    std::fs::write(dir.path().join("Docs/Kanban"), "a file, not a folder").unwrap();
    let target = dir.path().join("Docs/Kanban/research.kanban");
    let outcome = project(
        &board(Some(target.clone())),
        &columns(),
        &research_cards(),
        &default_source(at(2, 0)),
        &RedactionGate::default(),
    );
    let reason = outcome.error_reason().expect("an error").to_string();
    assert!(
        reason.starts_with("cannot ") && reason.contains(&target.display().to_string()),
        "{reason}"
    );
    assert_eq!(listing(&dir.path().join("Docs")), ["Kanban"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("Docs/Kanban")).unwrap(),
        "a file, not a folder"
    );

    // A folder the writer may not write into (as root too: the write runs without root's
    // override of file permissions).
    use std::os::unix::fs::PermissionsExt;
    let (_vault, target) = vault();
    let folder = target.parent().unwrap();
    std::fs::create_dir_all(folder).unwrap();
    std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o555)).unwrap();
    let outcome = support::without_file_permission_override(|| {
        project(
            &board(Some(target.clone())),
            &columns(),
            &research_cards(),
            &default_source(at(2, 0)),
            &RedactionGate::default(),
        )
    });
    std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o755)).unwrap();
    let reason = outcome.error_reason().expect("an error").to_string();
    assert!(
        reason.starts_with(&format!("cannot write {}:", target.display())),
        "{reason}"
    );
    assert!(listing(folder).is_empty());
}

#[test]
fn a_symbolic_link_at_the_target_is_refused_and_not_followed() {
    let (vault, target) = vault();
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let register = vault.path().join("Docs/Kanban/fleet-board.md");
    std::fs::write(&register, "# Fleet board\n\nhand-written\n").unwrap();
    std::os::unix::fs::symlink(&register, &target).unwrap();
    let before = fingerprint(&register);
    let outcome = project(
        &board(Some(target.clone())),
        &columns(),
        &research_cards(),
        &default_source(at(2, 0)),
        &RedactionGate::default(),
    );
    assert_eq!(
        outcome,
        Probe::Error(format!(
            "refused: {} is a symbolic link; left untouched",
            target.display()
        ))
    );
    assert_eq!(fingerprint(&register), before);
    assert!(
        std::fs::symlink_metadata(&target)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}
