//! The known live A2A tasks: what `state_dir/live_tasks.json` holds, so that separate runs (cron
//! `collect --only agents` and `collect --only tasks`, or `run`) share them.
//!
//! The agents pass mentions task ids (heartbeat replies, audit logs); the write side notes
//! them here ([`note`]) and records what the live-task poll learned (state, last progress,
//! whether the stuck escalation was written). This module only holds the shape and the pure
//! operations on it, plus a read-only [`read`] for the poll: the file is written by
//! `write::live_tasks`, under its lock, through the redaction gate, and replaced atomically, so
//! a read without the lock sees one whole version.
//!
//! Only a missing file is an empty registry (nothing noted yet). A file that cannot be read
//! (permissions, a directory in its place) or whose content is not a registry is an error
//! naming it: the live section says so and the write side leaves the file as it is. It holds
//! more than the next passes rediscover: which stuck tasks were already escalated. Reading it
//! as empty would show "no live tasks" and, once written over, escalate them all again. A
//! corrupt file stays an error until someone fixes or removes it (removed, the next pass starts
//! afresh); fleetdash writes it atomically, so only something else can corrupt it.
//!
//! # Ids that look like secrets
//!
//! A task id is the registry's key and the poll's argument, so it cannot be stored redacted or
//! hashed and still be polled (and a hash of a short password is no protection). An id the
//! redaction gate would not pass unchanged is therefore never tracked: [`note`] counts it per
//! agent in [`Registry::withheld`], and the live-task rows say so, with the count and never the
//! id. A harmless id is stored as it is and polled.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::redact::RedactionGate;

pub const FILE_NAME: &str = "live_tasks.json";

/// Where a task id was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A heartbeat reply's in-flight list.
    Heartbeat,
    /// The heartbeat itself: the peer answered it with a Task it has not finished. Spec §2.2:
    /// the hub expects the reply within the stuck window, so this task is judged like any.
    HeartbeatTask,
    Audit,
}

/// One known task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnownTask {
    pub agent: String,
    pub origin: Origin,
    /// The dialect that answered the agent's heartbeat (`v1`, `v0.3`, `v0.3-content`).
    pub wire: Option<String>,
    pub first_seen: DateTime<Utc>,
    /// The last time a heartbeat or audit line mentioned it.
    pub last_mentioned: DateTime<Utc>,
    /// The last time it showed progress: first seen, or a state or timestamp change.
    pub last_progress: DateTime<Utc>,
    pub state: Option<String>,
    pub updated_at: Option<DateTime<Utc>>,
    /// When it reached a terminal state.
    pub finished_at: Option<DateTime<Utc>>,
    /// The stuck escalation was appended for it since its last progress (progress clears it:
    /// each stuck episode is escalated once).
    pub escalated: bool,
    /// Its peer's last answer was "task not found": why, until it knows the task again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_found: Option<String>,
}

/// A task as one agent knows it. A task id is its peer's own, so two agents may well use the
/// same one: each is a task of its own, polled at its own agent (issue 21).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskKey {
    pub agent: String,
    pub id: String,
}

impl TaskKey {
    pub fn new(agent: &str, id: &str) -> TaskKey {
        TaskKey {
            agent: agent.to_string(),
            id: id.to_string(),
        }
    }
}

/// (agent, task id) → what is known. Ordered, so the file is stable.
pub type Tasks = BTreeMap<TaskKey, KnownTask>;

/// Everything the registry file holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "RegistryFile", into = "RegistryFile")]
pub struct Registry {
    pub tasks: Tasks,
    /// Per agent: the ids its last pass mentioned that look like secrets, counted, not kept.
    pub withheld: BTreeMap<String, Withheld>,
}

/// The file's layout: since version 2 the tasks by agent, then by id; before it by id alone
/// (read, each filed under the agent it names).
#[derive(Serialize, Deserialize)]
struct RegistryFile {
    #[serde(default)]
    version: u32,
    tasks: FileTasks,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    withheld: BTreeMap<String, Withheld>,
}

const FILE_VERSION: u32 = 2;

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum FileTasks {
    ByAgent(BTreeMap<String, BTreeMap<String, KnownTask>>),
    ById(BTreeMap<String, KnownTask>),
}

impl FileTasks {
    fn into_tasks(self) -> Tasks {
        match self {
            FileTasks::ByAgent(agents) => agents
                .into_iter()
                .flat_map(|(agent, ids)| {
                    ids.into_iter()
                        .map(move |(id, task)| (TaskKey::new(&agent, &id), task))
                })
                .collect(),
            FileTasks::ById(ids) => ids
                .into_iter()
                .map(|(id, task)| (TaskKey::new(&task.agent, &id), task))
                .collect(),
        }
    }
}

impl From<RegistryFile> for Registry {
    fn from(file: RegistryFile) -> Registry {
        Registry {
            tasks: file.tasks.into_tasks(),
            withheld: file.withheld,
        }
    }
}

impl From<Registry> for RegistryFile {
    fn from(registry: Registry) -> RegistryFile {
        let mut agents: BTreeMap<String, BTreeMap<String, KnownTask>> = BTreeMap::new();
        for (key, task) in registry.tasks {
            agents.entry(key.agent).or_default().insert(key.id, task);
        }
        RegistryFile {
            version: FILE_VERSION,
            tasks: FileTasks::ByAgent(agents),
            withheld: registry.withheld,
        }
    }
}

/// Secret-shaped task ids one agent mentioned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Withheld {
    /// How many distinct ones.
    pub ids: usize,
    pub last_mentioned: DateTime<Utc>,
}

/// A task id one agent's pass mentioned, handed from the agents collector to the write side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    pub agent: String,
    /// The dialect that answered the agent's heartbeat, if it answered.
    pub wire: Option<String>,
    pub origin: Origin,
    pub id: String,
}

/// The registry in `state_dir` as last written, for reading only.
pub fn read(state_dir: &Path) -> Result<Registry> {
    read_file(&state_dir.join(FILE_NAME))
}

/// The registry file at `path`: the poll's read and the write side's read under its lock.
/// A missing file is an empty registry; anything else that fails is an error naming the file.
pub fn read_file(path: &Path) -> Result<Registry> {
    match std::fs::read(path) {
        Ok(bytes) => parse(path, &bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Registry::default()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// The file's content. A file of the earlier shape (the task map alone) is read as that map.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Registry> {
    serde_json::from_slice(bytes)
        .or_else(|e| {
            serde_json::from_slice::<BTreeMap<String, KnownTask>>(bytes)
                .map(|ids| Registry {
                    tasks: FileTasks::ById(ids).into_tasks(),
                    withheld: BTreeMap::new(),
                })
                .map_err(|_| e)
        })
        .with_context(|| {
            format!(
                "{} is not a live task registry; fix or remove it (removed, the next pass \
                 starts afresh and escalates the tasks still stuck again)",
                path.display()
            )
        })
}

/// Whether an id can be stored and polled: the gate would pass it unchanged.
pub fn trackable(gate: &RedactionGate, id: &str) -> bool {
    gate.is_clean(id)
}

impl Registry {
    /// Records an agents pass's mentions at `now`: the trackable ids into the tasks, the
    /// others counted per agent. The pass covers every agent, so its count replaces the last.
    pub fn note(&mut self, mentions: &[Mention], gate: &RedactionGate, now: DateTime<Utc>) {
        let (safe, unsafe_ids): (Vec<Mention>, Vec<Mention>) = mentions
            .iter()
            .cloned()
            .partition(|m| trackable(gate, &m.id));
        note(&mut self.tasks, &safe, now);
        let mut per_agent: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for m in unsafe_ids {
            let ids = per_agent.entry(m.agent).or_default();
            if !ids.contains(&m.id) {
                ids.push(m.id);
            }
        }
        self.withheld = per_agent
            .into_iter()
            .map(|(agent, ids)| {
                let withheld = Withheld {
                    ids: ids.len(),
                    last_mentioned: now,
                };
                (agent, withheld)
            })
            .collect();
    }

    /// Records that `agent`'s task `id` has its escalation line written: it is not escalated
    /// again until it progresses.
    pub fn mark_escalated(&mut self, agent: &str, id: &str) {
        if let Some(task) = self.tasks.get_mut(&TaskKey::new(agent, id)) {
            task.escalated = true;
        }
    }

    /// Drops any stored id that is not trackable (a file written before ids were checked),
    /// counting it as withheld for its agent.
    pub fn purge(&mut self, gate: &RedactionGate) {
        let unsafe_keys: Vec<TaskKey> = self
            .tasks
            .keys()
            .filter(|k| !trackable(gate, &k.id))
            .cloned()
            .collect();
        for key in unsafe_keys {
            if let Some(task) = self.tasks.remove(&key) {
                let withheld = self.withheld.entry(task.agent).or_insert_with(|| Withheld {
                    ids: 0,
                    last_mentioned: task.last_mentioned,
                });
                withheld.ids += 1;
                withheld.last_mentioned = withheld.last_mentioned.max(task.last_mentioned);
            }
        }
    }
}

/// Records that the mentioned task ids were seen at `now`.
///
/// Each heartbeat a peer leaves unfinished is a new task; one per agent is tracked at a time,
/// the oldest still open (neither finished nor unknown to its peer): it alone shows whether
/// the agent ever finishes them, and each later one only renews its mention, so a hung agent
/// is one row and one escalation, not one per heartbeat.
///
/// A task is keyed by its agent and id. An audit log records the exchanges its agent had, so
/// an id there may be a task of the peer it talked to: when that peer's heartbeat lists the id
/// in flight, the task is filed under the peer (a heartbeat outranks an audit line).
pub fn note(tasks: &mut Tasks, mentions: &[Mention], now: DateTime<Utc>) {
    for mention in mentions {
        let key = TaskKey::new(&mention.agent, &mention.id);
        if mention.origin == Origin::Heartbeat && !tasks.contains_key(&key) {
            let from_audit = tasks
                .iter()
                .find(|(k, t)| k.id == mention.id && t.origin == Origin::Audit)
                .map(|(k, _)| k.clone());
            if let Some(from_audit) = from_audit
                && let Some(task) = tasks.remove(&from_audit)
            {
                tasks.insert(key.clone(), task);
            }
        }
        if mention.origin == Origin::HeartbeatTask
            && !tasks.contains_key(&key)
            && let Some(open) = tasks.values_mut().find(|t| {
                t.origin == Origin::HeartbeatTask
                    && t.agent == mention.agent
                    && t.finished_at.is_none()
                    && t.not_found.is_none()
            })
        {
            open.last_mentioned = now;
            continue;
        }
        let task = tasks.entry(key).or_insert_with(|| KnownTask {
            agent: mention.agent.clone(),
            origin: mention.origin,
            wire: None,
            first_seen: now,
            last_mentioned: now,
            last_progress: now,
            state: None,
            updated_at: None,
            finished_at: None,
            escalated: false,
            not_found: None,
        });
        task.last_mentioned = now;
        if let Some(wire) = &mention.wire {
            task.wire = Some(wire.clone());
        }
        // A heartbeat's in-flight list outranks an audit line's mention.
        if mention.origin == Origin::Heartbeat {
            task.origin = Origin::Heartbeat;
            task.agent = mention.agent.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    const KEY: &str = "sk-ant-api03-PLANTEDkeyQ7mXw2Rt9Lp4Zc8Vb1Nd6Hf3";

    fn mention(agent: &str, origin: Origin, id: &str) -> Mention {
        Mention {
            agent: agent.into(),
            wire: None,
            origin,
            id: id.into(),
        }
    }

    #[test]
    fn a_secret_shaped_id_is_counted_never_kept_and_a_harmless_one_kept() {
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 6, 0, 0).unwrap();
        let gate = RedactionGate::default();
        let mut registry = Registry::default();
        registry.note(
            &[
                mention("heart", Origin::Heartbeat, KEY),
                mention("heart", Origin::Audit, KEY),
                mention("heart", Origin::Audit, "t_fine01"),
            ],
            &gate,
            now,
        );
        assert_eq!(
            registry.tasks.keys().collect::<Vec<_>>(),
            [&TaskKey::new("heart", "t_fine01")]
        );
        assert_eq!(registry.withheld["heart"].ids, 1, "distinct ids");
        let text = serde_json::to_string(&registry).unwrap();
        assert!(!text.contains("PLANTED"), "{text}");
        // The next pass mentions none: the count goes.
        registry.note(&[], &gate, now);
        assert!(registry.withheld.is_empty());
    }

    /// Only a missing file is empty; one that cannot be read, or is not a registry, is an
    /// error naming it.
    #[test]
    fn only_a_missing_registry_is_empty_and_any_other_failure_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), Registry::default());
        let path = dir.path().join(FILE_NAME);
        std::fs::create_dir(&path).unwrap();
        let err = format!("{:#}", read(dir.path()).unwrap_err());
        assert!(
            err.starts_with(&format!("cannot read {}:", path.display())),
            "{err}"
        );
        std::fs::remove_dir(&path).unwrap();
        std::fs::write(&path, b"{\"tasks\": {\"t_1\": tru").unwrap();
        let err = format!("{:#}", read(dir.path()).unwrap_err());
        assert!(
            err.starts_with(&format!("{} is not a live task registry", path.display())),
            "{err}"
        );
    }

    #[test]
    fn an_earlier_file_with_a_secret_shaped_id_is_read_and_purged() {
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 6, 0, 0).unwrap();
        let mut tasks = Tasks::new();
        note(
            &mut tasks,
            &[
                mention("heart", Origin::Heartbeat, KEY),
                mention("heart", Origin::Heartbeat, "t_fine01"),
            ],
            now,
        );
        // The earliest file: the task map alone, by id.
        let by_id: BTreeMap<String, KnownTask> =
            tasks.into_iter().map(|(k, t)| (k.id, t)).collect();
        let earlier = serde_json::to_vec(&by_id).unwrap();
        let mut registry = parse(Path::new("live_tasks.json"), &earlier).unwrap();
        assert_eq!(registry.tasks.len(), 2);
        registry.purge(&RedactionGate::default());
        assert_eq!(
            registry.tasks.keys().collect::<Vec<_>>(),
            [&TaskKey::new("heart", "t_fine01")]
        );
        assert_eq!(registry.withheld["heart"].ids, 1);
    }

    /// Issue 21: task ids are each peer's own. The same id in two agents' audit logs is two
    /// tasks, each polled at its own agent; a peer's heartbeat listing an id another agent's
    /// audit log mentioned files it under that peer.
    #[test]
    fn a_task_is_its_agents_and_the_same_id_at_two_agents_is_two_tasks() {
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 6, 0, 0).unwrap();
        let mut tasks = Tasks::new();
        note(
            &mut tasks,
            &[
                mention("heart", Origin::Audit, "t_shared"),
                mention("lung", Origin::Audit, "t_shared"),
            ],
            now,
        );
        assert_eq!(
            tasks.keys().collect::<Vec<_>>(),
            [
                &TaskKey::new("heart", "t_shared"),
                &TaskKey::new("lung", "t_shared")
            ]
        );
        assert_eq!(tasks[&TaskKey::new("lung", "t_shared")].agent, "lung");

        let mut tasks = Tasks::new();
        note(
            &mut tasks,
            &[mention("heart", Origin::Audit, "t_peer")],
            now,
        );
        note(
            &mut tasks,
            &[mention("lung", Origin::Heartbeat, "t_peer")],
            now,
        );
        assert_eq!(
            tasks.keys().collect::<Vec<_>>(),
            [&TaskKey::new("lung", "t_peer")]
        );
        let task = &tasks[&TaskKey::new("lung", "t_peer")];
        assert_eq!(
            (task.agent.as_str(), task.origin),
            ("lung", Origin::Heartbeat)
        );
    }

    /// The file keeps tasks by agent, then id (version 2); a version 1 file (by id, each task
    /// naming its agent) is read under the agent it names.
    #[test]
    fn the_file_is_by_agent_then_id_and_an_earlier_one_is_read() {
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 6, 0, 0).unwrap();
        let mut registry = Registry::default();
        note(
            &mut registry.tasks,
            &[
                mention("heart", Origin::Audit, "t_shared"),
                mention("lung", Origin::Audit, "t_shared"),
            ],
            now,
        );
        let json = serde_json::to_value(&registry).unwrap();
        assert_eq!(json["version"], 2);
        assert_eq!(json["tasks"]["heart"]["t_shared"]["agent"], "heart");
        assert_eq!(json["tasks"]["lung"]["t_shared"]["agent"], "lung");
        let back = parse(Path::new("live_tasks.json"), json.to_string().as_bytes()).unwrap();
        assert_eq!(back, registry);

        let v1 = serde_json::json!({"tasks": {"t_old": json["tasks"]["lung"]["t_shared"]}});
        let read = parse(Path::new("live_tasks.json"), v1.to_string().as_bytes()).unwrap();
        assert_eq!(
            read.tasks.keys().collect::<Vec<_>>(),
            [&TaskKey::new("lung", "t_old")]
        );
    }
}
