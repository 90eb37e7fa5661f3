//! Live A2A tasks (the V3/A2A lane) and the 300 s stuck rule (spec §3.5).
//!
//! Task ids come from the agents' heartbeat replies (their in-flight lists, and the heartbeat
//! itself when a peer answers it with a Task it leaves unfinished) and audit logs, noted in the
//! [`registry`] by the write side from what the agents pass mentioned (never an id that looks
//! like a secret: those are only counted). Each unfinished one is polled with
//! `GetTask` / `tasks/get` in its peer's dialect; the poll returns what each peer answered and
//! writes nothing. The write side records the answers in the registry and [`judge`]s them: a
//! task is *stuck* when it has shown no progress (no new state, no new status timestamp, or no
//! reply at all) for at least the rules' `stuck.no_reply_seconds`; the entry then says why,
//! and one escalation line per stuck episode goes to `state_dir/escalations.jsonl` (progress
//! ends an episode: a task that sticks again is escalated again).
//! The rule governs A2A tasks only, never board cards (the board has its own events).

pub mod judge;
pub mod registry;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use fleetdash_model::Asc;
use futures::StreamExt;

use super::{Collector, Findings};
use crate::a2a::{self, RpcOutcome, TaskFacts, Wire, rpc_url};
use crate::clock::Clock;
use crate::config::{AgentConfig, Config, read_token};
use crate::net::{ProbeClient, ProbeFailure};
use registry::{KnownTask, TaskKey};

/// What one polled task's peer answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The task as its peer reports it.
    Task(TaskFacts),
    /// The peer says it does not know this task (`-32001` task not found): its own condition,
    /// not a silence, so never stuck. The text names the call.
    NotFound(String),
    /// No usable answer.
    Failed(ProbeFailure),
}

/// What each polled task's peer answered, by task id.
pub type Answers = BTreeMap<TaskKey, Answer>;

/// The JSON-RPC / A2A error code for "task not found".
const TASK_NOT_FOUND: i64 = -32001;

/// One live-task poll, for the write side to record and judge.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Poll {
    pub answers: Answers,
    /// Why the registry could not be read, if it could not: nothing was polled, and the pass
    /// must say so rather than report no tasks.
    pub unread_registry: Option<String>,
}

pub struct LiveTasksCollector {
    agents: HashMap<String, AgentConfig>,
    client: ProbeClient,
    concurrency: usize,
    state_dir: PathBuf,
    cadence: Duration,
}

impl LiveTasksCollector {
    pub fn new(config: &Config, client: ProbeClient) -> Self {
        LiveTasksCollector {
            agents: config
                .agents
                .iter()
                .map(|a| (a.name.clone(), a.clone()))
                .collect(),
            client,
            concurrency: config.probe.concurrency,
            state_dir: config.state_dir.clone(),
            cadence: config.cadence.live_tasks,
        }
    }

    async fn poll(&self, key: &TaskKey, task: &KnownTask) -> Answer {
        match self.get_task(key, task).await {
            Ok(answer) => answer,
            Err(failure) => Answer::Failed(failure),
        }
    }

    /// Asks the task's own agent (the key's: the one that mentioned it) for it.
    async fn get_task(&self, key: &TaskKey, task: &KnownTask) -> Result<Answer, ProbeFailure> {
        let id = key.id.as_str();
        let agent = self.agents.get(&key.agent).ok_or_else(|| {
            ProbeFailure::new(
                Asc::NOT_FOUND,
                format!("agent {} is not in the registry", key.agent),
            )
        })?;
        let wire = match task.wire.as_deref() {
            Some("v1") => Wire::V1,
            Some("v0.3-content") => Wire::V03Content,
            Some(_) => Wire::V03,
            None => Wire::attempts(agent.dialect)[0],
        };
        let token = read_token(agent.token.as_ref())?;
        let body = wire.get_task(&uuid::Uuid::new_v4().to_string(), id);
        let reply = self
            .client
            .post_json(
                rpc_url(&agent.endpoint),
                wire.headers(),
                &body,
                token.as_deref(),
            )
            .await?;
        if let Some(denied) = reply.permission_failure() {
            return Err(denied);
        }
        match RpcOutcome::parse(&reply.json()?)
            .map_err(|e| ProbeFailure::new(Asc::INTEGRITY_CHECK_FAILED, e))?
        {
            RpcOutcome::Result(result) => Ok(Answer::Task(a2a::task_facts(&result))),
            RpcOutcome::Error { code } => {
                let call = format!(
                    "{}: JSON-RPC {code} {}",
                    get_task_name(wire),
                    a2a::error_name(code)
                );
                if code == TASK_NOT_FOUND {
                    Ok(Answer::NotFound(call))
                } else {
                    Err(ProbeFailure::new(Asc::RETRYABLE_ERROR, call))
                }
            }
        }
    }

    /// Polls every unfinished known task.
    pub async fn poll_all(&self) -> Poll {
        // A read without the registry's lock: the file is replaced whole, never torn.
        let state_dir = self.state_dir.clone();
        let read = tokio::task::spawn_blocking(move || registry::read(&state_dir)).await;
        let known = match read {
            Ok(Ok(registry)) => registry.tasks,
            Ok(Err(e)) => return Poll::unread(format!("{e:#}")),
            Err(e) => return Poll::unread(format!("the registry read did not finish: {e}")),
        };
        let pending: Vec<(TaskKey, KnownTask)> = known
            .into_iter()
            .filter(|(_, t)| t.finished_at.is_none())
            .collect();
        let answers: Answers = futures::stream::iter(pending)
            .map(|(key, task)| async move {
                let outcome = self.poll(&key, &task).await;
                (key, outcome)
            })
            .buffer_unordered(self.concurrency)
            .collect()
            .await;
        Poll {
            answers,
            unread_registry: None,
        }
    }
}

impl Poll {
    fn unread(why: String) -> Poll {
        Poll {
            answers: Answers::new(),
            unread_registry: Some(why),
        }
    }
}

fn get_task_name(wire: Wire) -> &'static str {
    match wire {
        Wire::V1 => "GetTask",
        Wire::V03 | Wire::V03Content => "tasks/get",
    }
}

#[async_trait]
impl Collector for LiveTasksCollector {
    fn cadence(&self) -> Duration {
        self.cadence
    }

    async fn collect(&self, _clock: &Clock) -> Findings {
        Findings::LivePoll(self.poll_all().await)
    }

    fn follows_mentions(&self) -> bool {
        true
    }
}
