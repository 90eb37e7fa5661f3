//! The agents collector (C2): one row per registered agent, probed concurrently.
//!
//! Per agent: liveness and the card ([`card`]), then the heartbeat in the peer's dialect
//! ([`heartbeat`]) unless the card found it down, and meanwhile the last exchange from its audit
//! log ([`audit_tail`]: the agent's own exchanges, never the collector's probes, known by the
//! configured `collector_peer`), read here or, on an ssh host, through that host's ssh
//! ([`audit_remote`]). The [`verdict`] turns the three into a row with a band, an Agent Status
//! Code and a reason.
//! Concurrency is bounded and every probe has a deadline, so a pass over a fleet with dead
//! peers costs about one timeout, not one per dead peer (a peer that answers its card just
//! within the timeout and then stalls its heartbeat costs two). An audit log on an ssh host is
//! read within that host's `command_timeout`, alongside the card and heartbeat; the agents on
//! one host share its four connections at once, so a hung host costs one command timeout per
//! four of its agents. The task ids heartbeats and audit logs mention travel with the rows, for
//! the write side to note in the live-task registry.

pub mod audit_remote;
pub mod audit_tail;
pub mod card;
pub mod heartbeat;
pub mod verdict;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use fleetdash_model::{Agent, Asc, RulesView};
use futures::StreamExt;

use super::queue::QueueSource;
use super::{Attempt, Collector, Findings};
use crate::a2a::Wire;
use crate::clock::Clock;
use crate::collect::live_tasks::registry::{Mention, Origin};
use crate::collect::systems::ssh::SshRunner;
use crate::config::{AgentConfig, AuditLog, Config, Dialect, ProbeLimits, Rules, read_token};
use crate::net::{ProbeClient, ProbeFailure};
use crate::queue::AgentReports;

pub struct AgentsCollector {
    agents: Vec<AgentConfig>,
    rules: RulesView,
    limits: ProbeLimits,
    cadence: Duration,
    client: ProbeClient,
    /// What `auto` peers answered to last time, so the next heartbeat asks them that first.
    learned: Mutex<HashMap<String, Wire>>,
    /// The work queue, read (never written) for each agent's last report and push check.
    reports: Option<QueueSource>,
    /// The rules' `heartbeat_reports.grace_seconds`.
    report_grace_s: u64,
    /// One runner per ssh host an audit log is read on (`audit_host`), by the host's name: its
    /// connections at once are bounded per host, as the systems collector's are.
    audit_hosts: HashMap<String, SshRunner>,
}

impl AgentsCollector {
    pub fn new(config: &Config, rules: &Rules, client: ProbeClient) -> Self {
        let mut audit_hosts = HashMap::new();
        for agent in &config.agents {
            if let Some(AuditLog::Ssh { host, target, .. }) = &agent.audit_log {
                audit_hosts.entry(host.clone()).or_insert_with(|| {
                    SshRunner::new(target.clone(), config.probe.command_timeout)
                });
            }
        }
        AgentsCollector {
            agents: config.agents.clone(),
            rules: rules.view(),
            limits: config.probe.clone(),
            cadence: config.cadence.agents,
            client,
            learned: Mutex::new(HashMap::new()),
            reports: None,
            report_grace_s: rules.report_grace.seconds,
            audit_hosts,
        }
    }

    /// Reads the agents' reports from the work queue at each pass (their last report's age,
    /// and the push check of those with `report_every`).
    pub fn with_reports(mut self, source: QueueSource) -> Self {
        self.reports = Some(source);
        self
    }

    /// Each agent's reports, read once per pass; `None` without a work queue.
    async fn read_reports(&self) -> Option<Result<Vec<AgentReports>, String>> {
        let source = self.reports.as_ref()?;
        Some(source.read().await.map(|view| view.agents))
    }

    /// All rows, in registry order, and the task ids they mentioned.
    ///
    /// Unordered, then sorted: `buffered` would count rows that finished behind a slower one
    /// against the limit, so each hung agent would stall its whole window for a timeout and a
    /// pass would cost one timeout per `concurrency` agents instead of about one in all.
    pub async fn probe_all(&self, clock: &Clock) -> (Vec<Agent>, Vec<Mention>) {
        let (rows, mentions, _) = self.probe_all_traced(clock).await;
        (rows, mentions)
    }

    /// [`AgentsCollector::probe_all`], with the heartbeat dialects that failed before another.
    pub async fn probe_all_traced(
        &self,
        clock: &Clock,
    ) -> (Vec<Agent>, Vec<Mention>, Vec<Attempt>) {
        let reports = self.read_reports().await;
        if let Some(Err(e)) = &reports {
            tracing::warn!("agents' reports not read: {e}");
        }
        let reports = &reports;
        let mut rows: Vec<(usize, Agent, Seen)> = futures::stream::iter(0..self.agents.len())
            .map(|i| async move {
                let agent = &self.agents[i];
                let reports = self.reports_of(reports, agent);
                let (row, seen) = self.probe_one(agent, reports, clock).await;
                (i, row, seen)
            })
            .buffer_unordered(self.limits.concurrency)
            .collect()
            .await;
        rows.sort_unstable_by_key(|(i, _, _)| *i);
        let mentions = mentions(&rows);
        let attempts = rows
            .iter_mut()
            .flat_map(|(_, row, seen)| {
                let name = row.name.clone();
                std::mem::take(&mut seen.tried)
                    .into_iter()
                    .map(move |t| Attempt {
                        kind: "agent",
                        name: name.clone(),
                        what: "heartbeat",
                        variant: Some(t.wire.as_str()),
                        asc: t.asc,
                        started: t.started,
                        took: t.took,
                    })
            })
            .collect();
        let rows = rows.into_iter().map(|(_, row, _)| row).collect();
        (rows, mentions, attempts)
    }

    /// One agent's row, and the task ids its heartbeat reply and audit tail showed besides it.
    /// What `read` says of `agent`'s reports.
    fn reports_of(
        &self,
        read: &Option<Result<Vec<AgentReports>, String>>,
        agent: &AgentConfig,
    ) -> verdict::Reports {
        verdict::Reports {
            read: read.as_ref().map(|r| {
                r.as_ref()
                    .map(|all| all.iter().find(|a| a.name == agent.name).cloned())
                    .map_err(Clone::clone)
            }),
            default_grace_s: self.report_grace_s,
        }
    }

    async fn probe_one(
        &self,
        agent: &AgentConfig,
        reports: verdict::Reports,
        clock: &Clock,
    ) -> (Agent, Seen) {
        let token = match read_token(agent.token.as_ref()) {
            Ok(t) => t,
            Err(failure) => {
                return (
                    verdict::unprobed(agent, failure, reports, &self.rules, &clock.clocked()),
                    Seen::default(),
                );
            }
        };
        let token = token.as_deref();
        let attempts = self.attempts(agent);
        let audit = self.read_audit(agent);
        let mut tried = Vec::new();
        // The card, then the heartbeat: one connection open per agent at a time, not two. Each
        // costs about 33 KiB in hyper (read and write buffers, dispatch channel) for as long as
        // it waits, so at the bench's concurrency of 256 two at once were about half of the
        // pass's heap peak (issue 35, heaptrack). A peer the card found down (refused, timed
        // out) is not sent the heartbeat: it would fail the same way, and a hung peer would
        // cost a second timeout.
        let probes = async {
            let card = card::probe(&self.client, &agent.endpoint, token).await;
            let heartbeat = if card.up {
                heartbeat::probe_recording(
                    &self.client,
                    &agent.endpoint,
                    &attempts,
                    token,
                    &mut tried,
                )
                .await
            } else {
                Err(heartbeat_not_sent(&card))
            };
            (card, heartbeat)
        };
        let ((card, heartbeat), audit) = tokio::join!(probes, audit);
        let heartbeat = heartbeat.map_err(|f| dialect_hint(agent.dialect, &card, f));
        if let (Dialect::Auto, Ok(reply)) = (agent.dialect, &heartbeat) {
            self.learned
                .lock()
                .expect("learned-dialect map is never poisoned")
                .insert(agent.name.clone(), reply.wire);
        }
        let seen = Seen {
            heartbeat_task: heartbeat
                .as_ref()
                .ok()
                .and_then(|reply| reply.facts.task.clone())
                .filter(|task| task.is_open())
                .map(|task| task.id),
            audit_ids: match &audit {
                Some(Ok(tail)) => tail.task_ids.clone(),
                _ => Vec::new(),
            },
            tried,
        };
        let row = verdict::row(
            agent,
            verdict::Evidence {
                card,
                heartbeat,
                audit,
                reports,
            },
            &self.rules,
            // Judged when the probes are in: ages as of now.
            &clock.clocked(),
        );
        (row, seen)
    }

    fn attempts(&self, agent: &AgentConfig) -> Vec<Wire> {
        let mut attempts = Wire::attempts(agent.dialect).to_vec();
        if let Some(known) = self.learned.lock().expect("not poisoned").get(&agent.name) {
            attempts.retain(|w| w != known);
            attempts.insert(0, *known);
        }
        attempts
    }

    /// The agent's audit log read, here or on its ssh host; `None` when it has none.
    async fn read_audit(
        &self,
        agent: &AgentConfig,
    ) -> Option<Result<audit_tail::AuditTail, ProbeFailure>> {
        let budget = self.limits.audit_tail_max_bytes;
        let (host, path) = match agent.audit_log.as_ref()? {
            AuditLog::Local(path) => return Some(read_local_audit(path, budget, agent).await),
            AuditLog::Ssh { host, path, .. } => (host, path),
        };
        Some(match self.audit_hosts.get(host) {
            Some(runner) => {
                audit_remote::last_exchange(runner, host, path, budget, &agent.collector_peer).await
            }
            None => Err(ProbeFailure::new(
                Asc::INTERNAL_ERROR,
                format!(
                    "{}: no ssh runner for the host",
                    audit_remote::place(host, path)
                ),
            )),
        })
    }
}

/// The audit log at `path` on this machine, read on a blocking thread.
async fn read_local_audit(
    path: &std::path::Path,
    budget: u64,
    agent: &AgentConfig,
) -> Result<audit_tail::AuditTail, ProbeFailure> {
    let path = path.to_path_buf();
    let collector_peer = agent.collector_peer.clone();
    tokio::task::spawn_blocking(move || audit_tail::last_exchange(&path, budget, &collector_peer))
        .await
        .map_err(|e| ProbeFailure::new(Asc::INTERNAL_ERROR, format!("audit reader failed: {e}")))
        .and_then(|r| {
            r.map_err(|e| {
                let asc = if e.kind() == std::io::ErrorKind::NotFound {
                    Asc::NOT_FOUND
                } else {
                    Asc::INTERNAL_ERROR
                };
                ProbeFailure::new(asc, format!("audit log: {e}"))
            })
        })
}

/// The heartbeat's failure when the card found the agent down: the card's code, and no second
/// request to a peer that did not answer the first.
fn heartbeat_not_sent(card: &card::CardProbe) -> ProbeFailure {
    let asc = match &card.card {
        Err(down) => down.asc.clone(),
        Ok(_) => Asc::DEPENDENCY_UNAVAILABLE,
    };
    ProbeFailure::new(asc, "not sent: the agent is down (see its card)")
}

/// A heartbeat refused for its dialect (`-32601 method not found`, ...) while the card names
/// another: the reason says which dialect to set (issue 44: it said only "method not found").
fn dialect_hint(dialect: Dialect, card: &card::CardProbe, f: ProbeFailure) -> ProbeFailure {
    let Ok(facts) = &card.card else { return f };
    match crate::a2a::contradicting(dialect, &facts.versions) {
        Some(set) if f.asc == Asc::UNSUPPORTED_CAPABILITY => ProbeFailure {
            reason: format!(
                "{}; its card says protocolVersion {}: set dialect = {set} or \"auto\"",
                f.reason,
                facts.versions.join(", ")
            ),
            ..f
        },
        _ => f,
    }
}

/// What one agent's probes showed besides its row.
#[derive(Debug, Default)]
struct Seen {
    /// The task the heartbeat itself became, when the peer left it unfinished.
    heartbeat_task: Option<String>,
    audit_ids: Vec<String>,
    /// Heartbeat dialects that failed before the next was tried.
    tried: Vec<heartbeat::Tried>,
}

/// The task ids a pass saw, in row order: each agent's heartbeat in-flight list, its
/// heartbeat's own unfinished task, then the ids its audit tail mentioned.
fn mentions(rows: &[(usize, Agent, Seen)]) -> Vec<Mention> {
    let mut out = Vec::new();
    for (_, row, seen) in rows {
        let heartbeat = row.heartbeat.value();
        let wire = heartbeat.map(|h| h.dialect.clone());
        let in_flight = heartbeat
            .and_then(|h| h.in_flight.value())
            .cloned()
            .unwrap_or_default();
        let seen = in_flight
            .into_iter()
            .map(|id| (Origin::Heartbeat, id))
            .chain(
                seen.heartbeat_task
                    .iter()
                    .map(|id| (Origin::HeartbeatTask, id.clone())),
            )
            .chain(seen.audit_ids.iter().map(|id| (Origin::Audit, id.clone())));
        out.extend(seen.map(|(origin, id)| Mention {
            agent: row.name.clone(),
            wire: wire.clone(),
            origin,
            id,
        }));
    }
    out
}

#[async_trait]
impl Collector for AgentsCollector {
    fn cadence(&self) -> Duration {
        self.cadence
    }

    async fn collect(&self, clock: &Clock) -> Findings {
        self.collect_traced(clock).await.0
    }

    async fn collect_traced(&self, clock: &Clock) -> (Findings, Vec<Attempt>) {
        let (rows, mentions, attempts) = self.probe_all_traced(clock).await;
        (Findings::Agents { rows, mentions }, attempts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heartbeat_refused_for_its_dialect_names_the_one_the_card_says() {
        let card = |versions: &[&str]| card::CardProbe {
            up: true,
            card: Ok(crate::a2a::CardFacts {
                skills_count: 1,
                protocol_version: versions.first().map(|v| v.to_string()),
                versions: versions.iter().map(|v| v.to_string()).collect(),
            }),
        };
        let refused = || {
            ProbeFailure::new(
                Asc::UNSUPPORTED_CAPABILITY,
                "v1 send: JSON-RPC -32601 method not found",
            )
        };
        let hinted = dialect_hint(Dialect::V1, &card(&["0.3.0"]), refused());
        assert_eq!(
            hinted.reason,
            "v1 send: JSON-RPC -32601 method not found; its card says protocolVersion 0.3.0: \
             set dialect = \"v0.3\" (or \"v0.3-content\" for the Pulse plane's variant) or \"auto\""
        );
        assert_eq!(hinted.asc, Asc::UNSUPPORTED_CAPABILITY);
        // The card agrees, or another failure: the reason is left as it was.
        assert_eq!(
            dialect_hint(Dialect::V1, &card(&["1.0"]), refused()),
            refused()
        );
        let failing = ProbeFailure::new(Asc::RETRYABLE_ERROR, "v1 send answered HTTP 503");
        assert_eq!(
            dialect_hint(Dialect::V1, &card(&["0.3.0"]), failing.clone()),
            failing
        );
    }
}
