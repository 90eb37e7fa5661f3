//! The projection job end to end through `fleetdash collect`: each declared board is projected
//! into the vault, a hand-edited file is refused and left byte for byte, a retired generator
//! writes nothing, a second pass rewrites nothing, and every outcome is in status.json.

use crate::support;

use crate::support::kanban;

use fleetdash_model::{BoardSource, Probe, Snapshot};
use kanban::{Kanban, Task};
use support::Scratch;

fn sources(snapshot: &Snapshot) -> Vec<BoardSource> {
    match &snapshot.tasks.board {
        Probe::Value(board) => board.sources.clone(),
        other => panic!("tasks.board is {other:?}"),
    }
}

fn outcome(snapshot: &Snapshot, board: &str) -> Probe<String> {
    sources(snapshot)
        .into_iter()
        .find(|s| s.name == board)
        .unwrap_or_else(|| panic!("no source {board}"))
        .projection
}

#[test]
fn boards_are_projected_hand_edited_files_refused_and_unchanged_boards_not_rewritten() {
    let scratch = Scratch::new();
    let root = scratch.path();
    for (name, titles) in [
        ("research", ["Survey A2A dialects", "Write the ruling"]),
        ("podcast", ["Record ep 12", "Edit ep 11"]),
        ("ops", ["Rotate keys", "Patch LAB"]),
    ] {
        let k = Kanban::create(&root.join(format!("{name}.db")));
        k.task(&Task::new(
            &format!("t_{name}01"),
            titles[0],
            "todo",
            Some("min"),
        ));
        k.task(&Task::new(
            &format!("t_{name}02"),
            titles[1],
            "done",
            Some("sol"),
        ));
    }
    let vault = root.join("vault");
    let hand_edited = vault.join("Pulse/Kanban/podcast.kanban");
    std::fs::create_dir_all(hand_edited.parent().unwrap()).unwrap();
    let original = "---\n\nkanban-plugin: board\n\n---\n\n## Mine\n\n- [ ] hand-written card\n";
    std::fs::write(&hand_edited, original).unwrap();
    let config = scratch.config(&format!(
        "[vault]\npath = \"{}\"\n\n\
         [[boards]]\nname = \"research\"\nplane = \"Docs\"\ndb = \"research.db\"\nprojection = \"Docs/Kanban/research.kanban\"\n\n\
         [[boards]]\nname = \"podcast\"\nplane = \"Pulse\"\ndb = \"podcast.db\"\nprojection = \"Pulse/Kanban/podcast.kanban\"\n\n\
         [[boards]]\nname = \"ops\"\nplane = \"Docs\"\ndb = \"ops.db\"\nprojection = \"Docs/Kanban/ops.kanban\"\nretired = true\n",
        vault.display()
    ));

    let out = scratch.collect(&config);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let snap = scratch.snapshot();
    assert_eq!(outcome(&snap, "research"), Probe::Value("written".into()));
    let research = std::fs::read_to_string(vault.join("Docs/Kanban/research.kanban")).unwrap();
    assert!(
        research.contains("kanban-plugin: board")
            && research.contains("fleetdash:generated board=research")
    );
    assert!(
        research.contains("Survey A2A dialects") && research.contains("- [x] Write the ruling"),
        "{research}"
    );

    match outcome(&snap, "podcast") {
        Probe::Error(reason) => assert!(
            reason.starts_with("refused:") && reason.contains("podcast.kanban"),
            "{reason}"
        ),
        other => panic!("the hand-edited file must be refused: {other:?}"),
    }
    assert_eq!(
        std::fs::read_to_string(&hand_edited).unwrap(),
        original,
        "left byte for byte"
    );
    assert_eq!(
        snap.verdict().red,
        1,
        "the refusal is the one red thing: {:?}",
        sources(&snap)
    );

    assert_eq!(
        outcome(&snap, "ops"),
        Probe::Value("retired: writes nothing".into())
    );
    assert!(!vault.join("Docs/Kanban/ops.kanban").exists());

    // The board reads keep the last projection outcome, and a second pass rewrites nothing.
    let modified = std::fs::metadata(vault.join("Docs/Kanban/research.kanban"))
        .unwrap()
        .modified()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert!(scratch.collect(&config).status.success());
    let snap = scratch.snapshot();
    assert_eq!(outcome(&snap, "research"), Probe::Value("unchanged".into()));
    let again = std::fs::metadata(vault.join("Docs/Kanban/research.kanban"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(modified, again, "an unchanged board is not rewritten");
}

/// status.json lists a big board's cards only under the rules' cap (`board.cards_max`); the
/// vault's projection is written from the full read and keeps every card.
#[test]
fn the_projection_keeps_every_card_that_status_json_does_not_list() {
    let scratch = Scratch::new();
    let rules =
        fleetdash::config::Rules::parse(std::path::Path::new("rules.yaml"), support::DEFAULT_RULES)
            .unwrap();
    let cards_max = rules.board.cards_max.count as usize;
    // Twice the cap and more, every status, archived ones included.
    let total = 2 * cards_max + 250;
    let k = Kanban::create(&scratch.path().join("big.db"));
    kanban::populate(&k, total);
    drop(k);
    let vault = scratch.path().join("vault");
    let config = scratch.config(&format!(
        "[vault]\npath = \"{}\"\n\n\
         [[boards]]\nname = \"big\"\ndb = \"big.db\"\ninclude_archived = true\n\
         projection = \"Docs/Kanban/big.kanban\"\n",
        vault.display()
    ));
    support::assert_success(&scratch.collect(&config));
    let snap = scratch.snapshot();
    let board = snap.tasks.board.value().expect("the board was read");
    let source = &board.sources[0];
    assert_eq!(source.cards, Probe::Value(total as u32));
    assert!(
        board.cards.len() <= cards_max && board.cards.len() < total,
        "status.json lists {} of {total} cards (cap {cards_max})",
        board.cards.len()
    );
    let counted: u32 = source.columns.iter().map(|c| c.cards).sum();
    assert_eq!(
        counted as usize, total,
        "every card counted: {:?}",
        source.columns
    );
    assert_eq!(
        board.cards.len() as u64 + source.left_out(),
        total as u64,
        "listed + left out = read"
    );
    assert_eq!(outcome(&snap, "big"), Probe::Value("written".into()));
    let projected = std::fs::read_to_string(vault.join("Docs/Kanban/big.kanban")).unwrap();
    let missing: Vec<usize> = (0..total)
        .filter(|i| !projected.contains(&format!("Card {i}: ")))
        .collect();
    assert!(
        missing.is_empty(),
        "cards missing from the projection: {missing:?}"
    );
}

#[test]
fn a_board_that_cannot_be_read_is_not_projected() {
    let scratch = Scratch::new();
    let vault = scratch.path().join("vault");
    std::fs::write(
        scratch.path().join("broken.db"),
        b"this is not a database at all",
    )
    .unwrap();
    let config = scratch.config(&format!(
        "[vault]\npath = \"{}\"\n\n[[boards]]\nname = \"broken\"\ndb = \"broken.db\"\nprojection = \"Docs/Kanban/broken.kanban\"\n",
        vault.display()
    ));
    assert!(scratch.collect(&config).status.success());
    match outcome(&scratch.snapshot(), "broken") {
        Probe::Error(reason) => assert!(
            reason.starts_with("not projected: the board could not be read"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(
        !vault.join("Docs/Kanban/broken.kanban").exists(),
        "nothing written for an unreadable board"
    );
}
