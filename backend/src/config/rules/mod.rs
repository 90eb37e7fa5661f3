//! The rules file: every threshold the dashboard judges by, each with where it comes from.
//!
//! Spec §3.6: "the 300 s value is a declared constant with its source cited, never a magic
//! number". So no threshold lives in code: each group of the YAML file carries its values plus
//! `source` (required) and `ruled_by`, in the shape of the fleet's own `states.yaml`.
//!
//! ```yaml
//! stuck:
//!   no_reply_seconds: 300
//!   source: plugins/platforms/a2a/adapter.py:38 (_MIN_ORPHAN_TIMEOUT)
//!   ruled_by: young
//! ```
//!
//! The rules fleetdash ships ([`BUILTIN_RULES`], `config/rules.yaml`) are the base: a rules
//! file gives only the groups it changes, each whole ([`builtin`]).

mod builtin;
mod unit;

pub use builtin::{BUILTIN_RULES, RulesOrigin, effective_text as effective_rules_text};

use std::path::Path;

use fleetdash_model::RulesView;
use serde::Deserialize;

use super::error::{ConfigError, ConfigErrors};
use super::table::suggestion;
use unit::Unit;

/// One declared threshold, with its citation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub seconds: u64,
    pub source: String,
    pub ruled_by: Option<String>,
}

/// One declared share, in whole percent, with its citation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PercentRule {
    pub percent: u64,
    pub source: String,
    pub ruled_by: Option<String>,
}

/// A value of the rules file with its citation, before it is known what it measures.
struct Cited {
    value: u64,
    source: String,
    ruled_by: Option<String>,
}

impl From<Cited> for Rule {
    fn from(c: Cited) -> Rule {
        Rule {
            seconds: c.value,
            source: c.source,
            ruled_by: c.ruled_by,
        }
    }
}

impl From<Cited> for CountRule {
    fn from(c: Cited) -> CountRule {
        CountRule {
            count: c.value,
            source: c.source,
            ruled_by: c.ruled_by,
        }
    }
}

impl From<Cited> for PercentRule {
    fn from(c: Cited) -> PercentRule {
        PercentRule {
            percent: c.value,
            source: c.source,
            ruled_by: c.ruled_by,
        }
    }
}

/// One declared size of a file, in bytes, with its citation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteRule {
    pub bytes: u64,
    pub source: String,
    pub ruled_by: Option<String>,
}

impl From<Cited> for ByteRule {
    fn from(c: Cited) -> ByteRule {
        ByteRule {
            bytes: c.value,
            source: c.source,
            ruled_by: c.ruled_by,
        }
    }
}

/// One declared count (of consecutive collector passes), with its citation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountRule {
    pub count: u64,
    pub source: String,
    pub ruled_by: Option<String>,
}

/// How many of a board's cards `status.json` lists in full (the `board` group): the snapshot
/// stays small at any board size, and counts what it does not list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardRules {
    /// At most this many cards of one board are listed.
    pub cards_max: CountRule,
    /// Besides the cards needing attention, the newest this many of each open column are.
    pub newest_per_column: CountRule,
}

/// How long finished work-queue tasks stay in `status.json` (the `queue` group, issue 21): it
/// stays small however many tasks the queue has seen, and its file keeps them all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueRetentionRules {
    /// A finished task leaves `status.json` this long after it finished.
    pub finished_kept: Rule,
    /// At most this many finished tasks are listed, the newest.
    pub finished_kept_max: CountRule,
}

/// The alert engine's thresholds (the `alerts` group): how many consecutive red passes make a
/// Firing, how many green ones a Recovered, and how often a Reminder while still red.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertRules {
    pub fail_after: CountRule,
    pub recover_after: CountRule,
    pub remind_every: Rule,
    /// The `grouping` group (issue 24, Alertmanager's model): a channel's first pending alert
    /// waits this long for others, and they go out as one notification.
    pub group_wait: Rule,
    /// After a notification, a channel's next one waits at least this long (what came in the
    /// meantime goes out together).
    pub group_interval: Rule,
    /// The `blind_spot` group (issue 24): when at least this share of the fleet's independent
    /// probes fail in one write ...
    pub blind_spot_percent: PercentRule,
    /// ... and at least this many, the likely cause is fleetdash's own host or network.
    pub blind_spot_min: CountRule,
    /// The `quiet_hours` group (issue 24): in a channel's quiet hours, a red that has lasted
    /// this long still goes out; everything else waits for the morning.
    pub quiet_red_after: Rule,
    /// The `alertmanager` group (issue 24, Prometheus' model): an alertmanager channel sends
    /// what is firing again this often ...
    pub am_resend: Rule,
    /// ... each sent as ending this long after (so Alertmanager resolves an alert that
    /// fleetdash stopped sending, e.g. while it is down, by itself).
    pub am_ends_after: Rule,
    /// The `phone_actions` group (issue 24): a notification's signed action link works this
    /// long after it was sent ...
    pub phone_link_valid: Rule,
    /// ... and its "Silence" button silences the element this long.
    pub phone_silence: Rule,
    /// The `alert_memory` group (issue 33): the engine forgets an element without an open
    /// alert this long after a snapshot last showed it ...
    pub forget_quiet: Rule,
    /// ... and one with an open alert this long after.
    pub forget_unseen: Rule,
    /// The `alert_outbox` group (issue 33): at most this many items wait per channel (the
    /// oldest reminders dropped first) ...
    pub outbox_pending_max: CountRule,
    /// ... and a pair done with (delivered, refused, dropped) is remembered this long.
    pub outbox_delivered_kept: Rule,
    /// The `reprobe` group (issue 43): a red reading not yet confirmed is confirmed by reading
    /// its section again this long after it, instead of at its next pass ...
    pub reprobe_spacing: Rule,
    /// ... at most this many times between two regular passes (0: never; at most
    /// `fail_after - 1`, since a red that fired asks for none).
    pub reprobe_count: CountRule,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// The rules file given, and which groups it gave (the others are built in).
    pub origin: RulesOrigin,
    /// A live A2A task with no reply for at least this long is stuck (spec §3.5).
    pub no_reply: Rule,
    /// Last exchange younger than this is green (spec §1.4, §5.2).
    pub exchange_green_below: Rule,
    /// Last exchange younger than this is amber; older is red.
    pub exchange_amber_below: Rule,
    /// A snapshot section older than this makes the snapshot stale.
    pub snapshot_stale_after: Rule,
    /// A finished live task stays listed this long.
    pub keep_finished: Rule,
    /// A task id not mentioned by any heartbeat or audit line for this long is forgotten.
    pub forget_unseen: Rule,
    /// A latest backup at least this old is amber.
    pub backup_amber_after: Rule,
    /// A latest backup at least this old is red.
    pub backup_red_after: Rule,
    /// A model usage window at or above this share of its limit is amber.
    pub window_amber_at: PercentRule,
    /// How often the work queue's watchdog applies [`Rules::no_reply`] (spec §3.5).
    pub sweep_every: Rule,
    /// A work-queue task with no ACK this long after it was assigned is red (spec §4).
    pub ack_within: Rule,
    /// A claimed work-queue task with no report about it for this long: the worker died
    /// (spec §3.5), recorded without a follow-up.
    pub worker_died: Rule,
    /// An agent with `report_every` whose last heartbeat report is older than its period is
    /// late, and down past this grace (the Healthchecks model), unless its entry gives
    /// `report_grace`.
    pub report_grace: Rule,
    /// When an element's band change becomes an alert (issue 12).
    pub alerts: AlertRules,
    /// How many board cards the snapshot lists in full (issue 13).
    pub board: BoardRules,
    /// How long finished work-queue tasks stay in the snapshot (issue 21).
    pub queue: QueueRetentionRules,
    /// `fleetdash doctor`: an agent's `Date` header further than this from this host's clock
    /// is a warning (issue 22).
    pub clock_skew: Rule,
    /// This host's clock (issue 31): what counts as a jump, how long one is shown.
    pub clock: ClockRules,
    /// How long fleetdash's own files keep what they hold (issue 33).
    pub state: StateRules,
    /// Which needs-you lines alike fold into one, and from how many (issue 43).
    pub needs_you: NeedsYouRules,
    /// A TLS certificate whose end is within this is amber: due for renewal (issue 44, the
    /// `certificates` group).
    pub cert_renew_within: Rule,
    /// The report of a period (issue 45, the `report` group).
    pub report: ReportRules,
}

/// The `report` group (issue 45): what a report merges and how much of it a phone gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportRules {
    /// One element's spells out of green closer than this are one line: a flap.
    pub flap_gap: Rule,
    /// The lines of a report a phone's notification body gets; the rest is one tap away.
    pub phone_lines: CountRule,
    /// The lines of what came back, and of the red time, the report's page shows before it
    /// folds the rest under one line.
    pub page_lines: CountRule,
}

/// The `needs_you` group (issue 43): many alike lines are one on a phone's first screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeedsYouRules {
    /// At least this many lines of one kind, band and reason are said as one.
    pub fold_alike_from: CountRule,
    /// The kinds that fold ([`FOLD_KINDS`]).
    pub fold_kinds: Vec<String>,
}

/// The bounds of fleetdash's own files that grow with time (issue 33: a month of state): the
/// `queue_file`, `escalations`, `set_aside` and `transitions_log` groups (the alert engine's
/// and outbox's are in [`AlertRules`], which alerting is given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateRules {
    /// tasks.db: a finished task is deleted, with its events, this long after it finished.
    pub queue_finished_stored: Rule,
    /// tasks.db: an event about no stored task (a heartbeat) is deleted this long after it was
    /// received.
    pub queue_events_stored: Rule,
    /// tasks.db: the WAL left after a checkpoint is cut back to this (`journal_size_limit`).
    pub queue_wal_kept: ByteRule,
    /// escalations.jsonl moves to `.1` once its first line is this old ...
    pub escalations_rotate_after: Rule,
    /// ... or once it holds this many bytes.
    pub escalations_rotate_at: ByteRule,
    /// transitions.json keeps at most this many transitions (the oldest go first) ...
    pub transitions_max_entries: CountRule,
    /// ... none older than this ...
    pub transitions_keep: Rule,
    /// ... and the file never grows past this many bytes.
    pub transitions_max_file: ByteRule,
    /// At most this many copies of one state file set aside are kept, the newest.
    pub set_aside_kept: CountRule,
}

/// The `clock` group (issue 31): when the wall clock has jumped, and for how long it is said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClockRules {
    /// The wall clock and the boot clock parting by this much between two readings is a step;
    /// the boot clock ahead of the monotonic one by this much, a sleep.
    pub step: Rule,
    /// A jump is shown this long; the grace after a forward step or a wake lasts at most this.
    pub shown_for: Rule,
    /// A stamp nobody asked the age of for this long is forgotten.
    pub forget_unseen: Rule,
}

impl ClockRules {
    /// The clock's settings from these rules.
    pub fn settings(&self) -> crate::clock::Settings {
        crate::clock::Settings {
            step_s: self.step.seconds,
            shown_for_s: self.shown_for.seconds,
            forget_s: self.forget_unseen.seconds,
        }
    }
}

/// Each group of the rules file and the values it holds (besides `source` and `ruled_by`).
const GROUPS: &[(&str, &[&str])] = &[
    ("stuck", &["no_reply_seconds", "sweep_seconds"]),
    (
        "last_exchange",
        &["green_below_seconds", "amber_below_seconds"],
    ),
    ("snapshot", &["stale_after_seconds"]),
    (
        "live_tasks",
        &["keep_finished_seconds", "forget_unseen_seconds"],
    ),
    ("backups", &["amber_after_seconds", "red_after_seconds"]),
    ("window", &["amber_at_percent"]),
    ("ack", &["within_seconds"]),
    ("worker_died", &["no_report_seconds"]),
    ("heartbeat_reports", &["grace_seconds"]),
    (
        "alerts",
        &[
            "fail_after_passes",
            "recover_after_passes",
            "remind_every_seconds",
        ],
    ),
    ("reprobe", &["spacing_seconds", "count"]),
    (
        "grouping",
        &["group_wait_seconds", "group_interval_seconds"],
    ),
    ("blind_spot", &["failed_percent", "min_failed"]),
    ("quiet_hours", &["red_after_seconds"]),
    ("alertmanager", &["resend_seconds", "ends_after_seconds"]),
    ("phone_actions", &["link_valid_seconds", "silence_seconds"]),
    ("board", &["cards_max", "newest_per_column"]),
    ("queue", &["finished_kept_seconds", "finished_kept_max"]),
    ("doctor", &["clock_skew_seconds"]),
    (
        "queue_file",
        &[
            "finished_stored_seconds",
            "events_stored_seconds",
            "wal_kept_bytes",
        ],
    ),
    ("escalations", &["rotate_after_seconds", "rotate_at_bytes"]),
    ("set_aside", &["copies_kept"]),
    (
        "transitions_log",
        &["max_entries", "keep_seconds", "max_file_bytes"],
    ),
    (
        "alert_memory",
        &["forget_quiet_seconds", "forget_unseen_seconds"],
    ),
    (
        "alert_outbox",
        &["max_pending_per_channel", "delivered_kept_seconds"],
    ),
    (
        "clock",
        &["step_seconds", "shown_for_seconds", "forget_unseen_seconds"],
    ),
    ("needs_you", &["fold_alike_from", "fold_kinds"]),
    ("certificates", &["renew_within_seconds"]),
    ("report", &["flap_gap_seconds", "phone_lines", "page_lines"]),
];

/// The kinds of needs-you lines `needs_you.fold_kinds` may name.
pub const FOLD_KINDS: &[&str] = &["agent", "task", "card", "board", "host", "backup"];

/// What every group holds besides its values.
const CITATION_KEYS: &[&str] = &["source", "ruled_by"];

/// What reading a rules file found: the rules when all are right, the staleness limit when
/// that one is (the config's cadences are checked against it whatever else is wrong), and
/// every mistake.
pub(super) struct RulesRead {
    pub rules: Option<Rules>,
    pub snapshot_stale_after: Option<Rule>,
    /// Which groups the file gave, known even when something is wrong.
    pub origin: RulesOrigin,
    pub errors: Vec<ConfigError>,
}

impl RulesRead {
    fn into_result(self) -> Result<Rules, ConfigErrors> {
        match self.rules {
            Some(rules) if self.errors.is_empty() => Ok(rules),
            _ => Err(ConfigErrors(self.errors)),
        }
    }
}

impl Rules {
    pub fn load(path: &Path) -> Result<Rules, ConfigErrors> {
        Rules::read_file(path).into_result()
    }

    /// The rules file `text` (read from `path`) over the built-in rules: each group it gives
    /// replaces the built-in one whole.
    pub fn parse(path: &Path, text: &str) -> Result<Rules, ConfigErrors> {
        Rules::read(Some(path), text).into_result()
    }

    pub(super) fn read_file(path: &Path) -> RulesRead {
        match std::fs::read_to_string(path) {
            Ok(text) => Rules::read(Some(path), &text),
            Err(e) => RulesRead {
                rules: None,
                snapshot_stale_after: None,
                origin: RulesOrigin::file(path, Vec::new()),
                errors: vec![ConfigError {
                    file: path.to_path_buf(),
                    line: None,
                    field: String::new(),
                    message: format!(
                        "cannot read the rules file: {e}; without `rules` in the config, \
                         fleetdash runs on its built-in rules (`fleetdash rules show` prints them)"
                    ),
                }],
            },
        }
    }

    /// `file` (its `text`) over the built-in rules; `None`: the built-in rules alone.
    fn read(file: Option<&Path>, text: &str) -> RulesRead {
        let path = file.unwrap_or(Path::new(builtin::BUILTIN_NAME));
        let error = |line: Option<usize>, field: String, message: String| ConfigError {
            file: path.to_path_buf(),
            line,
            field,
            message,
        };
        // A file of comments alone is empty: every group built in.
        let top = match serde_yaml_ng::from_str::<Option<serde_yaml_ng::Mapping>>(text) {
            Ok(top) => top.unwrap_or_default(),
            Err(e) => {
                return RulesRead {
                    rules: None,
                    snapshot_stale_after: None,
                    origin: file
                        .map_or_else(RulesOrigin::built_in, |f| RulesOrigin::file(f, Vec::new())),
                    errors: vec![error(
                        e.location().map(|l| l.line()),
                        String::new(),
                        e.to_string(),
                    )],
                };
            }
        };
        let mut errors = Vec::new();
        let group_names: Vec<&str> = GROUPS.iter().map(|(name, _)| *name).collect();
        for key in top.keys() {
            let name = key.as_str().unwrap_or_default();
            if group_names.contains(&name) {
                continue;
            }
            let message = match suggestion(name, &group_names) {
                Some(known) => format!("unknown group `{name}`, did you mean `{known}`?"),
                None => format!(
                    "unknown group `{name}`; expected one of {}",
                    group_names.join(", ")
                ),
            };
            errors.push(error(line_of_group(text, name), name.to_string(), message));
        }
        let built_in = builtin::groups();
        let given: Vec<String> = GROUPS
            .iter()
            .filter(|(group, _)| top.contains_key(*group))
            .map(|(group, _)| group.to_string())
            .collect();
        let origin = match file {
            Some(file) => RulesOrigin::file(file, given),
            None => RulesOrigin::built_in(),
        };
        let mut groups = std::collections::BTreeMap::new();
        for (group, values) in GROUPS {
            // The file's group whole, else the built-in one.
            let Some(value) = top.get(*group).or_else(|| built_in.get(*group)) else {
                continue;
            };
            match serde_yaml_ng::from_value::<RawGroup>(value.clone()) {
                Ok(g) => {
                    let mut known: Vec<&str> = values.to_vec();
                    known.extend(CITATION_KEYS);
                    for key in g.values.keys().filter(|k| !known.contains(&k.as_str())) {
                        let message = match suggestion(key, &known) {
                            Some(k) => format!("unknown key `{key}`, did you mean `{k}`?"),
                            None => {
                                format!("unknown key `{key}`; expected one of {}", known.join(", "))
                            }
                        };
                        errors.push(error(
                            line_of_key(text, group, key),
                            format!("{group}.{key}"),
                            message,
                        ));
                    }
                    groups.insert(*group, g);
                }
                Err(e) => errors.push(error(
                    line_of_group(text, group),
                    group.to_string(),
                    format!(
                        "expected a group of {} with source and ruled_by ({e})",
                        values.join(", ")
                    ),
                )),
            }
        }
        // A group of several values lacks its source once, not once per value.
        let mut unsourced = std::collections::BTreeSet::new();
        let mut cited = |group: &str, key: &str, unit: Unit| -> Option<Cited> {
            let field = format!("{group}.{key}");
            let err =
                |message: String| error(line_of_key(text, group, key), field.clone(), message);
            let Some(g) = groups.get(group) else {
                // A group that is not one was said as such; one nowhere is a broken build.
                if !top.contains_key(group) && !built_in.contains_key(group) {
                    errors.push(err(format!("missing; expected a `{group}:` group")));
                }
                return None;
            };
            let value = match g.values.get(key) {
                Some(serde_yaml_ng::Value::Number(n))
                    if n.as_u64().is_some_and(|v| unit.accepts(v)) =>
                {
                    n.as_u64()
                }
                Some(_) => {
                    errors.push(err(unit.expected().into()));
                    None
                }
                None => {
                    errors.push(err(format!(
                        "missing; a group in the rules file replaces the built-in `{group}` \
                         whole, so it gives every value (`fleetdash rules show` prints the group)"
                    )));
                    None
                }
            };
            let source = g.source.clone().filter(|s| !s.trim().is_empty());
            if source.is_none() && unsourced.insert(group.to_string()) {
                errors.push(ConfigError {
                    line: line_of_key(text, group, "source"),
                    field: format!("{group}.source"),
                    message: "missing; every rule cites where its value comes from".into(),
                    ..err(String::new())
                });
            }
            Some(Cited {
                value: value?,
                source: source?,
                ruled_by: g.ruled_by.clone(),
            })
        };
        // Each value read as what it measures, with its citation.
        let mut seconds = |group: &str, key: &str| cited(group, key, Unit::Seconds).map(Rule::from);
        let no_reply = seconds("stuck", "no_reply_seconds");
        let green = seconds("last_exchange", "green_below_seconds");
        let amber = seconds("last_exchange", "amber_below_seconds");
        let stale = seconds("snapshot", "stale_after_seconds");
        let keep_finished = seconds("live_tasks", "keep_finished_seconds");
        let forget_unseen = seconds("live_tasks", "forget_unseen_seconds");
        let backup_amber = seconds("backups", "amber_after_seconds");
        let backup_red = seconds("backups", "red_after_seconds");
        let sweep_every = seconds("stuck", "sweep_seconds");
        let ack_within = seconds("ack", "within_seconds");
        let worker_died = seconds("worker_died", "no_report_seconds");
        let report_grace = seconds("heartbeat_reports", "grace_seconds");
        let remind_every = seconds("alerts", "remind_every_seconds");
        let group_wait = seconds("grouping", "group_wait_seconds");
        let group_interval = seconds("grouping", "group_interval_seconds");
        let quiet_red_after = seconds("quiet_hours", "red_after_seconds");
        let am_resend = seconds("alertmanager", "resend_seconds");
        let am_ends_after = seconds("alertmanager", "ends_after_seconds");
        let phone_link_valid = seconds("phone_actions", "link_valid_seconds");
        let phone_silence = seconds("phone_actions", "silence_seconds");
        let finished_kept = seconds("queue", "finished_kept_seconds");
        let clock_skew = seconds("doctor", "clock_skew_seconds");
        let queue_finished_stored = seconds("queue_file", "finished_stored_seconds");
        let queue_events_stored = seconds("queue_file", "events_stored_seconds");
        let escalations_rotate_after = seconds("escalations", "rotate_after_seconds");
        let transitions_keep = seconds("transitions_log", "keep_seconds");
        let alerts_forget_quiet = seconds("alert_memory", "forget_quiet_seconds");
        let alerts_forget_unseen = seconds("alert_memory", "forget_unseen_seconds");
        let outbox_delivered_kept = seconds("alert_outbox", "delivered_kept_seconds");
        let reprobe_spacing = seconds("reprobe", "spacing_seconds");
        let cert_renew_within = seconds("certificates", "renew_within_seconds");
        let flap_gap = seconds("report", "flap_gap_seconds");
        let clock = match (
            seconds("clock", "step_seconds"),
            seconds("clock", "shown_for_seconds"),
            seconds("clock", "forget_unseen_seconds"),
        ) {
            (Some(step), Some(shown_for), Some(forget_unseen)) => Some(ClockRules {
                step,
                shown_for,
                forget_unseen,
            }),
            _ => None,
        };
        let fold_alike_from = cited("needs_you", "fold_alike_from", Unit::Lines);
        let report = flap_gap
            .zip(cited("report", "phone_lines", Unit::Lines))
            .zip(cited("report", "page_lines", Unit::Lines))
            .map(|((flap_gap, phone), page)| ReportRules {
                flap_gap,
                phone_lines: CountRule::from(phone),
                page_lines: CountRule::from(page),
            });
        let window_amber =
            cited("window", "amber_at_percent", Unit::Percent).map(PercentRule::from);
        let blind_spot_percent =
            cited("blind_spot", "failed_percent", Unit::Percent).map(PercentRule::from);
        let mut count =
            |group: &str, key: &str| cited(group, key, Unit::Count).map(CountRule::from);
        let fail_after = count("alerts", "fail_after_passes");
        let recover_after = count("alerts", "recover_after_passes");
        let blind_spot_min = count("blind_spot", "min_failed");
        let reprobe_count = cited("reprobe", "count", Unit::Reprobes).map(CountRule::from);
        let mut cards = |key: &str| cited("board", key, Unit::Cards).map(CountRule::from);
        let board = match (cards("cards_max"), cards("newest_per_column")) {
            (Some(cards_max), Some(newest_per_column)) => Some(BoardRules {
                cards_max,
                newest_per_column,
            }),
            _ => None,
        };
        let finished_kept_max =
            cited("queue", "finished_kept_max", Unit::Tasks).map(CountRule::from);
        let set_aside_kept = cited("set_aside", "copies_kept", Unit::Copies).map(CountRule::from);
        let transitions_max_entries =
            cited("transitions_log", "max_entries", Unit::Entries).map(CountRule::from);
        let outbox_pending_max =
            cited("alert_outbox", "max_pending_per_channel", Unit::Items).map(CountRule::from);
        let mut bytes = |group: &str, key: &str| cited(group, key, Unit::Bytes).map(ByteRule::from);
        let queue_wal_kept = bytes("queue_file", "wal_kept_bytes");
        let escalations_rotate_at = bytes("escalations", "rotate_at_bytes");
        let transitions_max_file = bytes("transitions_log", "max_file_bytes");
        // The kinds that fold: a list of words, each a kind the glance names.
        let fold_kinds = groups.get("needs_you").and_then(|g| {
            let line = line_of_key(text, "needs_you", "fold_kinds");
            let field = "needs_you.fold_kinds".to_string();
            let expected = format!("expected a list of {}", FOLD_KINDS.join(", "));
            let Some(value) = g.values.get("fold_kinds") else {
                errors.push(error(line, field, "missing".into()));
                return None;
            };
            let Some(list) = value.as_sequence() else {
                errors.push(error(line, field, expected));
                return None;
            };
            let mut kinds = Vec::new();
            for item in list {
                match item.as_str().filter(|k| FOLD_KINDS.contains(k)) {
                    Some(kind) => kinds.push(kind.to_string()),
                    None => {
                        let said = serde_yaml_ng::to_string(item).unwrap_or_default();
                        errors.push(error(
                            line,
                            field.clone(),
                            format!("{}: {expected}", said.trim()),
                        ));
                        return None;
                    }
                }
            }
            Some(kinds)
        });
        let needs_you = fold_alike_from
            .zip(fold_kinds)
            .map(|(from, fold_kinds)| NeedsYouRules {
                fold_alike_from: CountRule::from(from),
                fold_kinds,
            });
        let state = match (
            queue_finished_stored
                .zip(queue_events_stored)
                .zip(queue_wal_kept),
            escalations_rotate_after.zip(escalations_rotate_at),
            set_aside_kept,
            transitions_max_entries
                .zip(transitions_keep)
                .zip(transitions_max_file),
        ) {
            (
                Some(((queue_finished_stored, queue_events_stored), queue_wal_kept)),
                Some((escalations_rotate_after, escalations_rotate_at)),
                Some(set_aside_kept),
                Some(((transitions_max_entries, transitions_keep), transitions_max_file)),
            ) => Some(StateRules {
                queue_finished_stored,
                queue_events_stored,
                queue_wal_kept,
                escalations_rotate_after,
                escalations_rotate_at,
                set_aside_kept,
                transitions_max_entries,
                transitions_keep,
                transitions_max_file,
            }),
            _ => None,
        };
        let retention = match (finished_kept, finished_kept_max) {
            (Some(finished_kept), Some(finished_kept_max)) => Some(QueueRetentionRules {
                finished_kept,
                finished_kept_max,
            }),
            _ => None,
        };
        let alerts = match (
            fail_after,
            recover_after,
            remind_every,
            group_wait.zip(group_interval),
            blind_spot_percent.zip(blind_spot_min).zip(quiet_red_after),
            am_resend.zip(am_ends_after),
            phone_link_valid.zip(phone_silence),
            alerts_forget_quiet.zip(alerts_forget_unseen),
            outbox_pending_max.zip(outbox_delivered_kept),
            reprobe_spacing.zip(reprobe_count),
        ) {
            (
                Some(fail_after),
                Some(recover_after),
                Some(remind_every),
                Some((group_wait, group_interval)),
                Some(((blind_spot_percent, blind_spot_min), quiet_red_after)),
                Some((am_resend, am_ends_after)),
                Some((phone_link_valid, phone_silence)),
                Some((forget_quiet, forget_unseen)),
                Some((outbox_pending_max, outbox_delivered_kept)),
                Some((reprobe_spacing, reprobe_count)),
            ) => Some(AlertRules {
                fail_after,
                recover_after,
                remind_every,
                group_wait,
                group_interval,
                blind_spot_percent,
                blind_spot_min,
                quiet_red_after,
                am_resend,
                am_ends_after,
                phone_link_valid,
                phone_silence,
                forget_quiet,
                forget_unseen,
                outbox_pending_max,
                outbox_delivered_kept,
                reprobe_spacing,
                reprobe_count,
            }),
            _ => None,
        };
        if let (Some(st), Some(r)) = (&state, &retention)
            && st.queue_finished_stored.seconds < r.finished_kept.seconds
        {
            errors.push(ConfigError {
                file: path.to_path_buf(),
                line: line_of_key(text, "queue_file", "finished_stored_seconds"),
                field: "queue_file.finished_stored_seconds".into(),
                message: format!(
                    "must be at least queue.finished_kept_seconds ({}): status.json lists a \
                     finished task that long, so tasks.db must still hold it{}",
                    r.finished_kept.seconds,
                    origin.pairing("queue_file", "queue")
                ),
            });
        }
        if let Some(a) = &alerts
            && a.am_ends_after.seconds <= a.am_resend.seconds
        {
            errors.push(ConfigError {
                file: path.to_path_buf(),
                line: line_of_key(text, "alertmanager", "ends_after_seconds"),
                field: "alertmanager.ends_after_seconds".into(),
                message: format!(
                    "must be greater than resend_seconds ({}): Alertmanager would resolve a \
                     firing alert between two sends",
                    a.am_resend.seconds
                ),
            });
        }
        if let Some(a) = &alerts
            && a.reprobe_count.count >= a.fail_after.count
        {
            errors.push(ConfigError {
                file: path.to_path_buf(),
                line: line_of_key(text, "reprobe", "count"),
                field: "reprobe.count".into(),
                message: format!(
                    "must be at most alerts.fail_after_passes - 1 ({}): a re-probe confirms a \
                     red that has not fired yet, so no more would ever run{}",
                    a.fail_after.count - 1,
                    origin.pairing("reprobe", "alerts")
                ),
            });
        }
        if let (Some(a), Some(r)) = (&backup_amber, &backup_red)
            && a.seconds >= r.seconds
        {
            errors.push(ConfigError {
                file: path.to_path_buf(),
                line: line_of_key(text, "backups", "red_after_seconds"),
                field: "backups.red_after_seconds".into(),
                message: format!("must be greater than amber_after_seconds ({})", a.seconds),
            });
        }
        if let (Some(g), Some(a)) = (&green, &amber)
            && g.seconds >= a.seconds
        {
            errors.push(ConfigError {
                file: path.to_path_buf(),
                line: line_of_key(text, "last_exchange", "amber_below_seconds"),
                field: "last_exchange.amber_below_seconds".into(),
                message: format!("must be greater than green_below_seconds ({})", g.seconds),
            });
        }
        let queue = match (
            sweep_every,
            ack_within,
            worker_died,
            report_grace,
            alerts,
            board,
            retention.zip(
                clock_skew.zip(clock.zip(state.zip(needs_you.zip(cert_renew_within.zip(report))))),
            ),
        ) {
            (Some(s), Some(a), Some(w), Some(g), Some(al), Some(b), Some(r)) => {
                Some((s, a, w, g, al, b, r))
            }
            _ => None,
        };
        let rules = match (
            no_reply,
            green,
            amber,
            stale.clone(),
            keep_finished,
            forget_unseen,
            backup_amber,
            backup_red,
            window_amber,
            queue,
        ) {
            (
                Some(no_reply),
                Some(exchange_green_below),
                Some(exchange_amber_below),
                Some(snapshot_stale_after),
                Some(keep_finished),
                Some(forget_unseen),
                Some(backup_amber_after),
                Some(backup_red_after),
                Some(window_amber_at),
                Some((
                    sweep_every,
                    ack_within,
                    worker_died,
                    report_grace,
                    alerts,
                    board,
                    (
                        queue,
                        (clock_skew, (clock, (state, (needs_you, (cert_renew_within, report))))),
                    ),
                )),
            ) if errors.is_empty() => Some(Rules {
                origin: origin.clone(),
                no_reply,
                exchange_green_below,
                exchange_amber_below,
                snapshot_stale_after,
                keep_finished,
                forget_unseen,
                backup_amber_after,
                backup_red_after,
                window_amber_at,
                sweep_every,
                ack_within,
                worker_died,
                report_grace,
                alerts,
                board,
                queue,
                clock_skew,
                clock,
                state,
                needs_you,
                cert_renew_within,
                report,
            }),
            _ => None,
        };
        RulesRead {
            rules,
            snapshot_stale_after: stale,
            origin,
            errors,
        }
    }

    /// The thresholds as the snapshot carries them for the page.
    pub fn view(&self) -> RulesView {
        RulesView {
            no_reply_s: self.no_reply.seconds,
            exchange_green_below_s: self.exchange_green_below.seconds,
            exchange_amber_below_s: self.exchange_amber_below.seconds,
            snapshot_stale_after_s: self.snapshot_stale_after.seconds,
            backup_amber_after_s: self.backup_amber_after.seconds,
            backup_red_after_s: self.backup_red_after.seconds,
            window_amber_at_percent: self.window_amber_at.percent,
            ack_within_s: self.ack_within.seconds,
            worker_died_s: self.worker_died.seconds,
            clock_step_s: self.clock.step.seconds,
        }
    }
}

#[derive(Deserialize)]
struct RawGroup {
    source: Option<String>,
    ruled_by: Option<String>,
    #[serde(flatten)]
    values: std::collections::BTreeMap<String, serde_yaml_ng::Value>,
}

/// The line of a top-level `group:`.
fn line_of_group(text: &str, group: &str) -> Option<usize> {
    text.lines()
        .position(|line| line.starts_with(&format!("{group}:")))
        .map(|i| i + 1)
}

/// The YAML parser keeps no positions after parsing, so find `key:` inside `group:` by text.
fn line_of_key(text: &str, group: &str, key: &str) -> Option<usize> {
    let mut in_group = false;
    let mut group_line = None;
    for (i, line) in text.lines().enumerate() {
        let indented = line.starts_with(' ') || line.starts_with('\t');
        let trimmed = line.trim_start();
        if !indented && !trimmed.is_empty() && !trimmed.starts_with('#') {
            in_group = trimmed.starts_with(&format!("{group}:"));
            if in_group {
                group_line = Some(i + 1);
            }
        } else if in_group && trimmed.starts_with(&format!("{key}:")) {
            return Some(i + 1);
        }
    }
    group_line
}

#[cfg(test)]
mod tests;
