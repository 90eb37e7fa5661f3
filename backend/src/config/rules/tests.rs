use super::*;
use crate::config::fixtures::FLEET_RULES as FLEET;
use builtin::effective_text;

/// Why the rules file `text` (read as `r.yaml`) is refused.
fn refused(text: &str) -> String {
    Rules::parse(Path::new("r.yaml"), text)
        .unwrap_err()
        .to_string()
}

#[test]
fn the_fleet_rules_parse_with_their_sources() {
    let r = Rules::parse(Path::new("rules.yaml"), FLEET).unwrap();
    assert_eq!(r.no_reply.seconds, 300);
    assert_eq!(r.no_reply.source, "plugins/platforms/a2a/adapter.py:38");
    assert_eq!(r.no_reply.ruled_by.as_deref(), Some("young"));
    assert_eq!(r.view().exchange_amber_below_s, 21600);
}

#[test]
fn a_rule_without_source_or_with_a_bad_value_is_reported_with_its_line() {
    let text = FLEET
        .replace("  source: plugins/platforms/a2a/adapter.py:38\n", "")
        .replace("21600", "-5");
    let errs = Rules::parse(Path::new("rules.yaml"), &text).unwrap_err();
    let msg = errs.to_string();
    assert!(msg.contains("rules.yaml:1: stuck.source: missing"), "{msg}");
    assert!(
        msg.contains("rules.yaml:7: last_exchange.amber_below_seconds: expected a whole number"),
        "{msg}"
    );
}

#[test]
fn the_window_rule_is_a_percentage_with_its_source() {
    let r = Rules::parse(Path::new("r.yaml"), FLEET).unwrap();
    assert_eq!(r.window_amber_at.percent, 90);
    assert_eq!(r.view().window_amber_at_percent, 90);
    for bad in ["0", "101", "90.5", "ninety"] {
        let text = FLEET.replace("amber_at_percent: 90", &format!("amber_at_percent: {bad}"));
        let msg = Rules::parse(Path::new("r.yaml"), &text)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains(
                "r.yaml:22: window.amber_at_percent: expected a whole percentage from 1 to 100"
            ),
            "{bad}: {msg}"
        );
    }
    let text = FLEET.replace(
        "  source: the heartbeat's window status (near limit at 90 %)\n",
        "",
    );
    let msg = refused(&text);
    assert!(
        msg.contains("r.yaml:21: window.source: missing; every rule cites"),
        "{msg}"
    );
}

#[test]
fn the_alert_thresholds_are_counts_of_passes_with_their_source() {
    let r = Rules::parse(Path::new("r.yaml"), FLEET).unwrap();
    assert_eq!(r.alerts.fail_after.count, 2);
    assert_eq!(r.alerts.recover_after.count, 2);
    assert_eq!(r.alerts.remind_every.seconds, 3600);
    assert_eq!(
        r.alerts.fail_after.source,
        "Gatus failure-threshold / success-threshold"
    );
    let text = FLEET.replace("fail_after_passes: 2", "fail_after_passes: 0");
    let msg = refused(&text);
    assert!(
        msg.contains(
            "r.yaml:34: alerts.fail_after_passes: expected a whole number of passes, at least 1"
        ),
        "{msg}"
    );
    let text = FLEET.replace("  remind_every_seconds: 3600\n", "");
    let msg = refused(&text);
    assert!(
        msg.contains("alerts.remind_every_seconds: missing"),
        "{msg}"
    );
}

/// Issue 43: a red's confirmation comes from re-probes, their spacing and count in the rules
/// file with their source. A count of 0 turns them off; more than `fail_after_passes - 1` would
/// never run (a red that fired asks for none) and is refused with its line, as is a spacing
/// that is no number of seconds, a count that is no whole number, or a group left out.
#[test]
fn the_reprobes_are_a_spacing_and_a_count_bounded_by_fail_after() {
    let r = Rules::parse(Path::new("r.yaml"), FLEET).unwrap();
    assert_eq!(r.alerts.reprobe_spacing.seconds, 10);
    assert_eq!(r.alerts.reprobe_count.count, 1);
    assert_eq!(r.alerts.reprobe_spacing.source, "issue 43");
    let off = Rules::parse(
        Path::new("r.yaml"),
        &FLEET.replace("  count: 1\n", "  count: 0\n"),
    );
    assert_eq!(off.unwrap().alerts.reprobe_count.count, 0);
    let msg = refused(&FLEET.replace("  count: 1\n", "  count: 2\n"));
    assert!(
        msg.contains(
            "r.yaml:100: reprobe.count: must be at most alerts.fail_after_passes - 1 (1): a \
             re-probe confirms a red that has not fired yet"
        ),
        "{msg}"
    );
    // With three red passes to fire, two re-probes can run.
    let three = FLEET
        .replace("fail_after_passes: 2", "fail_after_passes: 3")
        .replace("  count: 1\n", "  count: 2\n");
    assert_eq!(
        Rules::parse(Path::new("r.yaml"), &three)
            .unwrap()
            .alerts
            .reprobe_count
            .count,
        2
    );
    for bad in ["-1", "1.5", "one"] {
        let msg = refused(&FLEET.replace("  count: 1\n", &format!("  count: {bad}\n")));
        assert!(
            msg.contains(
                "r.yaml:100: reprobe.count: expected a whole number of re-probes, 0 (none) or more"
            ),
            "{bad}: {msg}"
        );
    }
    let msg = refused(&FLEET.replace("spacing_seconds: 10", "spacing_seconds: 0"));
    assert!(
        msg.contains("r.yaml:99: reprobe.spacing_seconds: expected a whole number of seconds"),
        "{msg}"
    );
    let msg = refused(&FLEET.replace("  source: issue 43\n", ""));
    assert!(
        msg.contains("r.yaml:98: reprobe.source: missing; every rule cites"),
        "{msg}"
    );
    // A file without the group takes the built-in one, citation and all.
    let start = FLEET.find("reprobe:").unwrap();
    let r = Rules::parse(Path::new("r.yaml"), &FLEET[..start]).unwrap();
    assert!(!r.origin.gives("reprobe"), "{:?}", r.origin);
    assert!(
        r.alerts
            .reprobe_spacing
            .source
            .starts_with("issue 43 (a death"),
        "{}",
        r.alerts.reprobe_spacing.source
    );
    let msg = refused(&FLEET.replace("  count: 1\n", "  count: 1\n  spacing: 10\n"));
    assert!(
        msg.contains("r.yaml:101: reprobe.spacing: unknown key `spacing`, did you mean"),
        "{msg}"
    );
}

/// Was not a rule: 15 alerts of one storm were 15 buzzes.
#[test]
fn alerts_group_by_seconds_with_their_source() {
    let r = Rules::parse(Path::new("r.yaml"), FLEET).unwrap();
    assert_eq!(r.alerts.group_wait.seconds, 30);
    assert_eq!(r.alerts.group_interval.seconds, 300);
    assert_eq!(r.alerts.group_wait.source, "Alertmanager");
    let msg = refused(&FLEET.replace("group_wait_seconds: 30", "group_wait_seconds: 0"));
    assert!(
        msg.contains("grouping.group_wait_seconds: expected a whole number of seconds"),
        "{msg}"
    );
    let msg = refused(&FLEET.replace("  group_interval_seconds: 300\n", ""));
    assert!(
        msg.contains("grouping.group_interval_seconds: missing"),
        "{msg}"
    );
}

/// Issue 24: an alertmanager channel's resend and the end each send announces; an end
/// that does not outlast a resend would let Alertmanager resolve what is still red.
#[test]
fn the_alertmanager_resend_is_shorter_than_the_end_it_announces() {
    let r = Rules::parse(Path::new("r.yaml"), FLEET).unwrap();
    assert_eq!(r.alerts.am_resend.seconds, 60);
    assert_eq!(r.alerts.am_ends_after.seconds, 240);
    let msg = refused(&FLEET.replace("ends_after_seconds: 240", "ends_after_seconds: 60"));
    assert!(
        msg.contains("alertmanager.ends_after_seconds: must be greater than resend_seconds (60)"),
        "{msg}"
    );
    let msg = refused(&FLEET.replace(
        "  resend_seconds: 60
",
        "",
    ));
    assert!(
        msg.contains("alertmanager.resend_seconds: missing"),
        "{msg}"
    );
}

/// Was not a rule: every card went into status.json, 4.4 MiB at 10,000 cards.
#[test]
fn the_board_listing_cap_is_a_count_of_cards_with_its_source() {
    let r = Rules::parse(Path::new("r.yaml"), FLEET).unwrap();
    assert_eq!(r.board.cards_max.count, 200);
    assert_eq!(r.board.newest_per_column.count, 5);
    assert_eq!(r.board.cards_max.source, "issue 13");
    let text = FLEET.replace("cards_max: 200", "cards_max: 0");
    let msg = refused(&text);
    assert!(
        msg.contains("r.yaml:39: board.cards_max: expected a whole number of cards, at least 1"),
        "{msg}"
    );
    let text = FLEET.replace("  source: issue 13\n", "");
    let msg = refused(&text);
    assert!(msg.contains("board.source: missing"), "{msg}");
    let text = FLEET.replace("  newest_per_column: 5\n", "");
    let msg = refused(&text);
    assert!(msg.contains("board.newest_per_column: missing"), "{msg}");
}

/// Issue 32: a window is added to times (a phone link's expiry, the transitions kept): a
/// value past the horizon overflowed the date arithmetic; it is refused with the limit.
#[test]
fn a_window_past_the_horizon_is_refused_naming_the_limit() {
    let r = Rules::parse(Path::new("r.yaml"), FLEET).unwrap();
    assert_eq!(r.alerts.phone_link_valid.seconds, 86400);
    let text = FLEET.replace(
        "link_valid_seconds: 86400",
        "link_valid_seconds: 99999999999999",
    );
    let msg = refused(&text);
    assert!(
        msg.contains(
            "phone_actions.link_valid_seconds: expected a whole number of seconds from 1 to \
             31622400 (366 d"
        ),
        "{msg}"
    );
}

/// Was not a rule: every finished work-queue task stayed in status.json for ever (864 KiB
/// at 1,197 rows).
#[test]
fn the_finished_task_retention_is_seconds_and_a_count_of_tasks_with_its_source() {
    let r = Rules::parse(Path::new("r.yaml"), FLEET).unwrap();
    assert_eq!(r.queue.finished_kept.seconds, 86400);
    assert_eq!(r.queue.finished_kept_max.count, 100);
    assert_eq!(r.queue.finished_kept.source, "issue 21");
    let text = FLEET.replace("finished_kept_max: 100", "finished_kept_max: 0");
    let msg = refused(&text);
    assert!(
        msg.contains(
            "r.yaml:44: queue.finished_kept_max: expected a whole number of tasks, at least 1"
        ),
        "{msg}"
    );
    let text = FLEET.replace("finished_kept_seconds: 86400", "finished_kept_seconds: 1d");
    let msg = refused(&text);
    assert!(
        msg.contains("r.yaml:43: queue.finished_kept_seconds: expected a whole number of seconds"),
        "{msg}"
    );
    let text = FLEET.replace("  source: issue 21\n", "");
    let msg = refused(&text);
    assert!(msg.contains("r.yaml:42: queue.source: missing"), "{msg}");
    // A rules file written before the group has the built-in one.
    let end = FLEET.find("queue:").unwrap();
    let r = Rules::parse(Path::new("r.yaml"), &FLEET[..end]).unwrap();
    assert!(
        r.queue
            .finished_kept
            .source
            .starts_with("issue 21 (status.json")
    );
}

#[test]
fn backup_thresholds_must_rise_from_amber_to_red() {
    let text = FLEET.replace("red_after_seconds: 172800", "red_after_seconds: 3600");
    let msg = refused(&text);
    assert!(
        msg.contains("backups.red_after_seconds: must be greater than amber_after_seconds (93600)"),
        "{msg}"
    );
}

#[test]
fn amber_must_lie_beyond_green() {
    let text = FLEET.replace("21600", "60");
    let msg = refused(&text);
    assert!(
        msg.contains("must be greater than green_below_seconds (1800)"),
        "{msg}"
    );
}

#[test]
fn unknown_groups_and_keys_are_each_named_with_the_closest_known_one() {
    let text = FLEET
        .replace("snapshot:", "snapshots:")
        .replace("green_below_seconds", "green_below_secs")
        .replace("  ruled_by: young\n", "  ruled_by: young\n  colour: red\n");
    let errors: Vec<String> = Rules::parse(Path::new("r.yaml"), &text)
        .unwrap_err()
        .0
        .iter()
        .map(ToString::to_string)
        .collect();
    for expected in [
        "r.yaml:5: stuck.colour: unknown key `colour`; expected one of no_reply_seconds, \
         sweep_seconds, source, ruled_by",
        "r.yaml:8: last_exchange.green_below_secs: unknown key `green_below_secs`, did you \
         mean `green_below_seconds`?",
        "r.yaml:11: snapshots: unknown group `snapshots`, did you mean `snapshot`?",
        // What the misspellings leave out of a group given is still said (`snapshots` is no
        // group, so `snapshot` is the built-in one).
        "r.yaml:7: last_exchange.green_below_seconds: missing; a group in the rules file \
         replaces the built-in `last_exchange` whole, so it gives every value (`fleetdash \
         rules show` prints the group)",
    ] {
        assert!(
            errors.iter().any(|e| e == expected),
            "missing {expected:?} in {errors:#?}"
        );
    }
    assert_eq!(errors.len(), 4, "{errors:#?}");
}

/// Issue 33: tasks.db, escalations.jsonl and the set-aside copies grew for ever; each bound is
/// declared with its source, and tasks.db keeps a finished task at least as long as
/// status.json lists it.
#[test]
fn the_state_file_bounds_are_declared_with_their_source() {
    let r = Rules::parse(Path::new("r.yaml"), FLEET).unwrap();
    assert_eq!(r.state.queue_finished_stored.seconds, 604800);
    assert_eq!(r.state.queue_events_stored.seconds, 604800);
    assert_eq!(r.state.escalations_rotate_after.seconds, 604800);
    assert_eq!(r.state.set_aside_kept.count, 3);
    assert_eq!(r.state.set_aside_kept.source, "issue 33");
    let msg = refused(&FLEET.replace("copies_kept: 3", "copies_kept: 0"));
    assert!(
        msg.contains("set_aside.copies_kept: expected a whole number of copies, at least 1"),
        "{msg}"
    );
    let msg = refused(&FLEET.replace("rotate_after_seconds: 604800", "rotate_after_seconds: 0"));
    assert!(
        msg.contains("escalations.rotate_after_seconds: expected a whole number of seconds"),
        "{msg}"
    );
    let msg = refused(&FLEET.replace(
        "finished_stored_seconds: 604800",
        "finished_stored_seconds: 3600",
    ));
    assert!(
        msg.contains(
            "queue_file.finished_stored_seconds: must be at least queue.finished_kept_seconds \
             (86400)"
        ),
        "{msg}"
    );
    // A rules file written before the groups has the built-in ones.
    let end = FLEET.find("queue_file:").unwrap();
    let r = Rules::parse(Path::new("r.yaml"), &FLEET[..end]).unwrap();
    for group in ["queue_file", "escalations", "set_aside"] {
        assert!(!r.origin.gives(group), "{group}: {:?}", r.origin);
    }
    assert!(
        r.state
            .set_aside_kept
            .source
            .starts_with("issue 33 (set-aside")
    );
}

/// Issue 33: the bounds that were constants in code (the transitions log's ring, the alert
/// engine's forgetting, the outbox's, escalations' size, the queue's WAL) are declared with
/// their source, at the values the code had.
#[test]
fn the_bounds_once_in_code_are_declared_with_their_source() {
    let r = Rules::parse(Path::new("r.yaml"), FLEET).unwrap();
    assert_eq!(r.state.transitions_max_entries.count, 4096);
    assert_eq!(r.state.transitions_keep.seconds, 7 * 24 * 3600);
    assert_eq!(r.state.transitions_max_file.bytes, 2 * 1024 * 1024);
    assert_eq!(r.state.transitions_keep.source, "issue 33");
    assert_eq!(r.state.escalations_rotate_at.bytes, 2 * 1024 * 1024);
    assert_eq!(r.state.queue_wal_kept.bytes, 1024 * 1024);
    assert_eq!(r.alerts.forget_quiet.seconds, 3600);
    assert_eq!(r.alerts.forget_unseen.seconds, 7 * 24 * 3600);
    assert_eq!(r.alerts.outbox_pending_max.count, 500);
    assert_eq!(r.alerts.outbox_delivered_kept.seconds, 2 * 24 * 3600);
    assert_eq!(r.alerts.outbox_delivered_kept.source, "issue 33");
}

/// The shipped rules file declares the same values as the fixture, each with a source.
#[test]
fn the_shipped_rules_declare_the_old_constants() {
    let shipped = Rules::parse(
        Path::new("config/rules.yaml"),
        include_str!("../../../../config/rules.yaml"),
    )
    .unwrap();
    let fixture = Rules::parse(Path::new("config/rules.yaml"), FLEET).unwrap();
    let values = |r: &Rules| {
        (
            r.state.transitions_max_entries.count,
            r.state.transitions_keep.seconds,
            r.state.transitions_max_file.bytes,
            r.state.escalations_rotate_at.bytes,
            r.state.queue_wal_kept.bytes,
            r.alerts.forget_quiet.seconds,
            r.alerts.forget_unseen.seconds,
            r.alerts.outbox_pending_max.count,
            r.alerts.outbox_delivered_kept.seconds,
        )
    };
    assert_eq!(values(&shipped), values(&fixture));
    for source in [
        &shipped.state.transitions_keep.source,
        &shipped.alerts.forget_quiet.source,
        &shipped.alerts.outbox_pending_max.source,
    ] {
        assert!(source.starts_with("issue 33"), "{source}");
    }
}

/// Each new bound refuses a bad value, naming the file, the field and what it takes.
#[test]
fn a_bad_bound_of_a_kept_file_is_refused_naming_the_field() {
    for (from, to, expected) in [
        (
            "max_entries: 4096",
            "max_entries: 0",
            "r.yaml:86: transitions_log.max_entries: expected a whole number of entries from 1 \
             to 1000000",
        ),
        (
            "max_entries: 4096",
            "max_entries: 1000001",
            "transitions_log.max_entries: expected a whole number of entries",
        ),
        (
            "keep_seconds: 604800",
            "keep_seconds: 31622401",
            "transitions_log.keep_seconds: expected a whole number of seconds from 1 to 31622400",
        ),
        (
            "max_file_bytes: 2097152",
            "max_file_bytes: 100",
            "transitions_log.max_file_bytes: expected a whole number of bytes from 4096 to \
             1073741824",
        ),
        (
            "rotate_at_bytes: 2097152",
            "rotate_at_bytes: 2 MiB",
            "escalations.rotate_at_bytes: expected a whole number of bytes",
        ),
        (
            "wal_kept_bytes: 1048576",
            "wal_kept_bytes: 1073741825",
            "queue_file.wal_kept_bytes: expected a whole number of bytes",
        ),
        (
            "forget_quiet_seconds: 3600",
            "forget_quiet_seconds: 0",
            "alert_memory.forget_quiet_seconds: expected a whole number of seconds",
        ),
        (
            "forget_unseen_seconds: 604800",
            "forget_unseen_seconds: -1",
            "alert_memory.forget_unseen_seconds: expected a whole number of seconds",
        ),
        (
            "max_pending_per_channel: 500",
            "max_pending_per_channel: 0",
            "alert_outbox.max_pending_per_channel: expected a whole number of alerts from 1 to \
             1000000",
        ),
        (
            "delivered_kept_seconds: 172800",
            "delivered_kept_seconds: 2.5",
            "alert_outbox.delivered_kept_seconds: expected a whole number of seconds",
        ),
    ] {
        assert_eq!(FLEET.matches(from).count(), 1, "{from}");
        let msg = refused(&FLEET.replace(from, to));
        assert!(msg.contains(expected), "{to}: {msg}");
    }
    // Without the new groups, the built-in ones; a group given without one of its keys is
    // refused: it is never completed from the built-in one.
    let end = FLEET.find("transitions_log:").unwrap();
    let errors = Rules::parse(
        Path::new("r.yaml"),
        &FLEET[..end].replace("  wal_kept_bytes: 1048576\n", ""),
    )
    .unwrap_err();
    assert_eq!(errors.0.len(), 1, "{errors}");
    assert!(
        errors.0[0]
            .to_string()
            .contains("queue_file.wal_kept_bytes: missing; a group in the rules file replaces"),
        "{errors}"
    );
}

/// Issue 43: which needs-you lines alike fold, and from how many, are a rule with its source;
/// a kind the glance does not name, or a count that folds one line, is refused at its line.
#[test]
fn the_needs_you_folding_is_a_count_and_a_list_of_kinds_with_its_source() {
    let r = Rules::parse(Path::new("r.yaml"), FLEET).unwrap();
    assert_eq!(r.needs_you.fold_alike_from.count, 3);
    assert_eq!(r.needs_you.fold_alike_from.source, "issue 43");
    assert_eq!(
        r.needs_you.fold_kinds,
        ["card", "task", "agent", "host", "board"]
    );
    let line = FLEET
        .lines()
        .position(|l| l.starts_with("  fold_kinds"))
        .unwrap()
        + 1;
    let msg = refused(&FLEET.replace("agent, host", "agent, hosts"));
    assert!(
        msg.contains(&format!(
            "r.yaml:{line}: needs_you.fold_kinds: hosts: expected a list of agent, task, card, \
             board, host, backup"
        )),
        "{msg}"
    );
    let msg = refused(&FLEET.replace("fold_alike_from: 3", "fold_alike_from: 1"));
    assert!(
        msg.contains("needs_you.fold_alike_from: expected a whole number of lines, at least 2"),
        "{msg}"
    );
}

/// The rules fleetdash ships, as `fleetdash rules show` prints them.
fn shipped() -> Rules {
    Rules::built_in().expect("the built-in rules are valid")
}

/// Issue 44: without a rules file, the built-in rules, every value with its citation.
#[test]
fn the_built_in_rules_are_the_shipped_file_each_with_its_source() {
    let built_in = shipped();
    assert_eq!(built_in.origin.file, None);
    assert!(built_in.origin.from_file.is_empty());
    assert_eq!(built_in.origin.built_in.len(), GROUPS.len());
    assert_eq!(built_in.origin.words(), "built in");
    let file = Rules::parse(Path::new("rules.yaml"), BUILTIN_RULES).unwrap();
    assert_eq!(file.origin.from_file.len(), GROUPS.len());
    assert_eq!(file.origin.words(), "rules.yaml (every group)");
    assert_eq!(
        Rules {
            origin: built_in.origin.clone(),
            ..file
        },
        built_in
    );
    assert!(
        built_in
            .no_reply
            .source
            .starts_with("plugins/platforms/a2a/adapter.py:38")
    );
    // A file of comments alone, or empty, gives no group.
    for text in ["", "# nothing changed yet\n"] {
        let r = Rules::parse(Path::new("rules.yaml"), text).unwrap();
        assert_eq!(r.origin.words(), "rules.yaml (no group: all built in)");
        assert_eq!(
            Rules {
                origin: built_in.origin.clone(),
                ..r
            },
            built_in
        );
    }
}

/// Issue 44: a rules file overrides group by group: a group it gives replaces the built-in one
/// whole, values and citation; the others stay built in.
#[test]
fn a_rules_file_overrides_the_groups_it_gives_and_no_other() {
    let text = "stuck:\n  no_reply_seconds: 120\n  sweep_seconds: 30\n  source: our own adapter\n\
                alerts:\n  fail_after_passes: 3\n  recover_after_passes: 1\n  \
                remind_every_seconds: 7200\n  source: our pager policy\n";
    let r = Rules::parse(Path::new("mine.yaml"), text).unwrap();
    let built_in = shipped();
    assert_eq!((r.no_reply.seconds, r.sweep_every.seconds), (120, 30));
    assert_eq!(r.no_reply.source, "our own adapter");
    assert_eq!(r.no_reply.ruled_by, None);
    assert_eq!(r.alerts.fail_after.count, 3);
    assert_eq!(r.alerts.remind_every.source, "our pager policy");
    // The rest is the built-in rules', with their citations.
    assert_eq!(r.exchange_green_below, built_in.exchange_green_below);
    assert_eq!(r.alerts.group_wait, built_in.alerts.group_wait);
    assert_eq!(r.state, built_in.state);
    assert_eq!(r.origin.from_file, ["stuck", "alerts"]);
    assert_eq!(
        r.origin.words(),
        "mine.yaml (stuck, alerts), built in for the rest"
    );
    assert_eq!(r.origin.of_group("stuck"), "mine.yaml");
    assert_eq!(r.origin.of_group("snapshot"), "built-in");
}

/// A group given in part is refused naming what it lacks: a threshold never mixes two sources.
#[test]
fn a_partial_group_is_refused_never_completed_from_the_built_in_one() {
    let msg = refused("stuck:\n  no_reply_seconds: 120\n  source: our own adapter\n");
    assert_eq!(
        msg,
        "r.yaml:1: stuck.sweep_seconds: missing; a group in the rules file replaces the \
         built-in `stuck` whole, so it gives every value (`fleetdash rules show` prints the \
         group)"
    );
    let msg = refused("window:\n  amber_at_percent: 80\n");
    assert!(
        msg.contains("r.yaml:1: window.source: missing; every rule cites"),
        "{msg}"
    );
}

/// A check between two groups names the built-in one when only the other is given.
#[test]
fn a_mistake_against_a_built_in_group_says_which_group_to_give() {
    let msg = refused(
        "alerts:\n  fail_after_passes: 1\n  recover_after_passes: 2\n  \
         remind_every_seconds: 3600\n  source: ours\n",
    );
    assert!(
        msg.contains("r.yaml: reprobe.count: must be at most alerts.fail_after_passes - 1 (0)")
            && msg.contains(
                "(`reprobe` is built in: give the whole `reprobe` group in this file with a value \
             that fits)"
            ),
        "{msg}"
    );
    let msg = refused(
        "queue:\n  finished_kept_seconds: 2000000\n  finished_kept_max: 10\n  source: ours\n",
    );
    assert!(
        msg.contains("queue_file.finished_stored_seconds: must be at least")
            && msg.contains("(`queue_file` is built in"),
        "{msg}"
    );
}

/// `fleetdash rules show`: the built-in file as shipped; with a rules file, the effective rules
/// as one file that parses back to them, the built-in comments kept.
#[test]
fn the_rules_shown_parse_back_to_the_rules_in_force() {
    assert_eq!(effective_text(None).unwrap(), BUILTIN_RULES);
    let text = "# ours\nstuck:\n  no_reply_seconds: 120 # two minutes\n  sweep_seconds: 30\n  \
                source: \"our adapter: 120 # s\"\n  ruled_by: ops\n\
                needs_you:\n  fold_alike_from: 4\n  fold_kinds: [card, agent]\n  source: ours\n";
    let path = Path::new("/etc/fleetdash/rules.yaml");
    let effective = Rules::parse(path, text).unwrap();
    let shown = effective_text(Some((path, text))).unwrap();
    let back = Rules::parse(Path::new("shown.yaml"), &shown).unwrap();
    assert_eq!(
        Rules {
            origin: effective.origin.clone(),
            ..back
        },
        effective
    );
    assert_eq!(effective.no_reply.source, "our adapter: 120 # s");
    assert_eq!(effective.needs_you.fold_kinds, ["card", "agent"]);
    assert_eq!(shown.matches("# From /etc/fleetdash/rules.yaml").count(), 2);
    // The built-in group's explanation stays above the file's group; its values do not.
    assert!(shown.contains("# Spec 003 §3.5: a live A2A task with no reply"));
    assert!(!shown.contains("no_reply_seconds: 300"), "{shown}");
    assert!(shown.contains("stale_after_seconds: 600"));
    // A file with mistakes is answered with them.
    let errors = effective_text(Some((path, "stuck:\n  no_reply_seconds: 1\n"))).unwrap_err();
    assert!(
        errors.to_string().contains("stuck.sweep_seconds: missing"),
        "{errors}"
    );
}
