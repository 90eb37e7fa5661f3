//! Live A2A tasks (the V3/A2A lane) and the 300 s stuck rule (spec §3.5).
//!
//! Task ids come from the agents' heartbeat replies and audit logs (noted in the [`registry`]
//! by the agents collector). Each unfinished one is polled with `GetTask` / `tasks/get` in its
//! peer's dialect. A task is *stuck* when it has shown no progress (no new state, no new status
//! timestamp, or no reply at all) for at least the rules' `stuck.no_reply_seconds`; the entry
//! then says why, and one escalation line per stuck task goes to `state_dir/escalations.jsonl`.
//! The rule governs A2A tasks only, never board cards (the board has its own events).

pub mod escalations;
pub mod registry;

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use fleetdash_model::{Asc, LiveTask, Probe, human_age, seconds_since};
use futures::StreamExt;

use super::{Collector, SectionData, SectionName};
use crate::a2a::{self, RpcOutcome, TaskFacts, Wire};
use crate::collect::agents::{heartbeat::rpc_url, read_token};
use crate::config::{AgentConfig, Config, Rule, Rules};
use crate::net::{ProbeClient, ProbeFailure};
use registry::{KnownTask, Registry};

pub struct LiveTasksCollector {
    agents: HashMap<String, AgentConfig>,
    client: ProbeClient,
    concurrency: usize,
    registry: Registry,
    escalations: escalations::Escalations,
    no_reply: Rule,
    keep_finished_s: u64,
    forget_unseen_s: u64,
    cadence: Duration,
}

impl LiveTasksCollector {
    pub fn new(config: &Config, rules: &Rules, client: ProbeClient) -> Self {
        LiveTasksCollector {
            agents: config
                .agents
                .iter()
                .map(|a| (a.name.clone(), a.clone()))
                .collect(),
            client,
            concurrency: config.probe.concurrency,
            registry: Registry::new(&config.state_dir),
            escalations: escalations::Escalations::new(&config.state_dir),
            no_reply: rules.no_reply.clone(),
            keep_finished_s: rules.keep_finished.seconds,
            forget_unseen_s: rules.forget_unseen.seconds,
            cadence: config.cadence.live_tasks,
        }
    }

    async fn poll(&self, id: &str, task: &KnownTask) -> Result<TaskFacts, ProbeFailure> {
        let agent = self.agents.get(&task.agent).ok_or_else(|| {
            ProbeFailure::new(
                Asc::NOT_FOUND,
                format!("agent {} is not in the registry", task.agent),
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
            RpcOutcome::Result(result) => Ok(a2a::task_facts(&result)),
            RpcOutcome::Error { code } => Err(ProbeFailure::new(
                if code == -32001 {
                    Asc::NOT_FOUND
                } else {
                    Asc::RETRYABLE_ERROR
                },
                format!(
                    "{}: JSON-RPC {code} {}",
                    get_task_name(wire),
                    a2a::error_name(code)
                ),
            )),
        }
    }

    /// Polls every unfinished known task, records what changed, and returns the rows.
    pub async fn pass(&self) -> anyhow::Result<Vec<LiveTask>> {
        let known = self.registry.update(|tasks| tasks.clone())?;
        let pending: Vec<(String, KnownTask)> = known
            .into_iter()
            .filter(|(_, t)| t.finished_at.is_none())
            .collect();
        let polled: HashMap<String, Result<TaskFacts, ProbeFailure>> =
            futures::stream::iter(pending)
                .map(|(id, task)| async move {
                    let outcome = self.poll(&id, &task).await;
                    (id, outcome)
                })
                .buffer_unordered(self.concurrency)
                .collect()
                .await;
        let now = Utc::now();
        let (rows, newly_stuck) = self.registry.update(|tasks| {
            tasks.retain(|_, t| seconds_since(t.last_mentioned, now) < self.forget_unseen_s);
            let mut rows = Vec::new();
            let mut newly_stuck = Vec::new();
            for (id, task) in tasks.iter_mut() {
                let outcome = polled.get(id);
                if let Some(Ok(facts)) = outcome {
                    record(task, facts, now);
                }
                if task
                    .finished_at
                    .is_some_and(|f| seconds_since(f, now) >= self.keep_finished_s)
                {
                    continue;
                }
                let row = self.row(id, task, outcome, now);
                if row.stuck && !task.escalated {
                    task.escalated = true;
                    newly_stuck.push(row.clone());
                }
                rows.push(row);
            }
            (rows, newly_stuck)
        })?;
        for row in &newly_stuck {
            if let Err(e) = self.escalations.append(row, &self.no_reply, now) {
                tracing::error!(task = %row.id, "cannot write the escalation: {e:#}");
            }
        }
        Ok(rows)
    }

    fn row(
        &self,
        id: &str,
        task: &KnownTask,
        outcome: Option<&Result<TaskFacts, ProbeFailure>>,
        now: DateTime<Utc>,
    ) -> LiveTask {
        let since_progress = seconds_since(task.last_progress, now);
        let finished = task.finished_at.is_some();
        let stuck = !finished && since_progress >= self.no_reply.seconds;
        let failure = outcome.and_then(|o| o.as_ref().err());
        let state = match (failure, &task.state) {
            (Some(f), _) => Probe::Error(f.reason.clone()),
            (None, Some(s)) => Probe::Value(s.clone()),
            (None, None) => Probe::Unknown,
        };
        let (status, reason) = if stuck {
            let cause = format!(
                "no reply for {since_progress} s (>= {} s){}",
                self.no_reply.seconds,
                failure
                    .map(|f| format!("; {}", f.reason))
                    .unwrap_or_default()
            );
            (Asc::TIMEOUT, Some(cause))
        } else if let Some(f) = failure {
            (
                f.asc.clone(),
                Some(format!(
                    "{}; last progress {} ago",
                    f.reason,
                    human_age(since_progress)
                )),
            )
        } else {
            (state_code(task.state.as_deref()), None)
        };
        LiveTask {
            id: id.to_string(),
            agent: task.agent.clone(),
            state,
            age_s: since_progress,
            stuck,
            status,
            reason,
            checked_at: now,
            stale: failure.is_some(),
        }
    }
}

/// A polled state that differs from the last one, or a newer status timestamp, is progress.
fn record(task: &mut KnownTask, facts: &TaskFacts, now: DateTime<Utc>) {
    let state = facts.state.map(str::to_string);
    let moved = (state.is_some() && state != task.state)
        || (facts.updated_at.is_some()
            && facts.updated_at != task.updated_at
            && task.updated_at.is_some());
    if moved {
        task.last_progress = now;
    }
    if state.is_some() {
        task.state = state;
    }
    if facts.updated_at.is_some() {
        task.updated_at = facts.updated_at;
    }
    if task.finished_at.is_none() && facts.state.is_some_and(a2a::is_terminal) {
        task.finished_at = Some(now);
    }
}

fn get_task_name(wire: Wire) -> &'static str {
    match wire {
        Wire::V1 => "GetTask",
        Wire::V03 | Wire::V03Content => "tasks/get",
    }
}

/// The Agent Status Code that refines an A2A state (ASC protocol bindings, A2A table).
fn state_code(state: Option<&str>) -> Asc {
    match state {
        Some("TASK_STATE_SUBMITTED") => Asc::ACCEPTED,
        Some("TASK_STATE_WORKING") => Asc::RUNNING,
        Some("TASK_STATE_INPUT_REQUIRED") => Asc::HUMAN_INPUT_REQUIRED,
        Some("TASK_STATE_AUTH_REQUIRED") => Asc::AUTHENTICATION_REQUIRED,
        Some("TASK_STATE_COMPLETED") => Asc::SUCCESS,
        Some("TASK_STATE_CANCELED") => Asc::CANCELLED,
        Some("TASK_STATE_REJECTED") => Asc::GUARDRAIL_BLOCKED,
        Some("TASK_STATE_FAILED") => Asc::INTERNAL_ERROR,
        _ => Asc::ACCEPTED,
    }
}

#[async_trait]
impl Collector for LiveTasksCollector {
    fn section(&self) -> SectionName {
        SectionName::LiveTasks
    }

    fn cadence(&self) -> Duration {
        self.cadence
    }

    async fn collect(&self) -> SectionData {
        match self.pass().await {
            Ok(rows) => SectionData::LiveTasks(Probe::Value(rows)),
            // The registry is our own state: the next passes rediscover what it held, but this
            // pass cannot judge anything, and says so.
            Err(e) => SectionData::LiveTasks(Probe::error(format!("live task registry: {e:#}"))),
        }
    }
}
