//! The demo's work queue scenario: the operator assigns a fixed set of tasks at start (through
//! the queue's `apply`, as `fleetdash task assign` does), and the simulated agents report on
//! them over the intake ([`super::reporter`]): ACKs of the three legal shapes, a blocker,
//! completions, heartbeats on a cadence, a multi-tag race, a task nobody ACKs and one whose
//! owner goes silent (the watchdog orphans it). Which task goes to whom and who answers what is
//! fixed; only the times vary (and the race's winner, which is whoever the intake hears first).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use chrono::Utc;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::reporter::{Answer, Body, Reporter};
use crate::a2a::Wire;
use crate::queue::{Applied, Assignment, QueueRules, Report, ReportKind, WorkQueue};

/// How often the reporting agents send a heartbeat naming the tasks they own: well inside the
/// demo's 60 s stuck rule, so only the silent owner's task is orphaned.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(20);
/// When the second act plays (the escalated task taken up, the completions): late enough that
/// the page shows the first act's rows for a while.
pub const SECOND_ACT_AFTER: Duration = Duration::from_secs(15);
/// How often the scenario looks for the intake before its first report.
const INTAKE_POLL: Duration = Duration::from_millis(200);
/// How long one look for the intake's card may take.
const CARD_TIMEOUT: Duration = Duration::from_secs(2);

/// One task the operator assigns at start.
pub struct DemoTask {
    pub key: &'static str,
    pub title: &'static str,
    pub owner: Option<&'static str>,
    pub tagged: &'static [&'static str],
    pub deadline: Option<Duration>,
}

const HOUR: u64 = 3600;

const fn task(
    key: &'static str,
    title: &'static str,
    owner: Option<&'static str>,
    tagged: &'static [&'static str],
    deadline_h: u64,
) -> DemoTask {
    DemoTask {
        key,
        title,
        owner,
        tagged,
        deadline: if deadline_h == 0 {
            None
        } else {
            Some(Duration::from_secs(deadline_h * HOUR))
        },
    }
}

/// The tasks, and who reports what on each:
/// - `logs`: sol ACKs owning with an ETA (a data part, v1.0) and keeps it alive by heartbeats;
/// - `brief`: echo ACKs owning (text under the Pulse plane's `content`), completes it later;
/// - `drill`: tam ACKs escalating to nova (text, v0.3); nova ACKs owning later (data, v0.3);
/// - `episode`: mira ACKs blocked on echo's audio master;
/// - `disk`: min ACKs owning (text, v1.0), then reports a blocker (data);
/// - `review`: kai ACKs owning, completes it later (data, v1.0);
/// - `alerts`: tagged sol, tam and mira, who all ACK owning at once: exactly one owns it;
/// - `certs`: assigned to vega, who never ACKs (red past the demo's ACK limit);
/// - `archive`: juno ACKs owning and then goes silent (the watchdog orphans it).
pub const TASKS: [DemoTask; 9] = [
    task("logs", "Rotate the LAB logs", Some("sol"), &[], 2),
    task("brief", "Draft the daily brief", Some("echo"), &[], 4),
    task(
        "drill",
        "Review the backup restore drill",
        Some("tam"),
        &[],
        0,
    ),
    task(
        "episode",
        "Publish podcast episode 12",
        Some("mira"),
        &[],
        6,
    ),
    task("disk", "Free disk space on LAB", Some("min"), &[], 3),
    task(
        "review",
        "Review the tunnel config change",
        Some("kai"),
        &[],
        0,
    ),
    task(
        "alerts",
        "Triage the overnight alerts",
        None,
        &["sol", "tam", "mira"],
        1,
    ),
    task("certs", "Renew the TLS certificate", Some("vega"), &[], 0),
    task("archive", "Compact the archive", Some("juno"), &[], 0),
];

/// The agents that send heartbeats on [`HEARTBEAT_EVERY`]: every agent of the scenario but
/// juno (silent after its ACK) and vega (it never answers its task). The agents that are down
/// (lyra refuses connections, orin hangs) report nothing at all.
pub const HEARTBEATING: [&str; 7] = ["echo", "kai", "min", "mira", "nova", "sol", "tam"];

/// The agents tagged on the multi-tag race.
pub const RACERS: [&str; 3] = ["sol", "tam", "mira"];

/// Task ids by [`DemoTask::key`], as the queue made them.
pub type TaskIds = BTreeMap<&'static str, String>;

/// Assigns [`TASKS`] as the operator on the queue at `db` (a fresh file: the scenario replays
/// at each start), then closes it before the intake opens it.
pub async fn assign(db: &Path, rules: QueueRules) -> Result<TaskIds> {
    for suffix in ["", "-wal", "-shm"] {
        let mut file = db.as_os_str().to_owned();
        file.push(suffix);
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => anyhow::bail!("cannot remove {}: {e}", Path::new(&file).display()),
        }
    }
    let queue = WorkQueue::open(db, rules)
        .await
        .map_err(anyhow::Error::msg)?;
    let mut ids = TaskIds::new();
    for t in &TASKS {
        let now = Utc::now();
        let report = Report {
            from: crate::queue::Reporter::Operator,
            message_id: format!("demo-{}", uuid::Uuid::new_v4()),
            context_id: None,
            received_at: now,
            kind: ReportKind::Assign(Assignment {
                title: crate::text::clean(t.title, crate::queue::store::TITLE_MAX_CHARS),
                owner: t.owner.map(str::to_string),
                tagged: t.tagged.iter().map(|s| s.to_string()).collect(),
                deadline: t
                    .deadline
                    .and_then(|d| chrono::Duration::from_std(d).ok())
                    .map(|d| now + d),
            }),
        };
        match queue.apply(report).await {
            Ok(Applied {
                task: Some(row), ..
            }) => {
                ids.insert(t.key, row.id);
            }
            other => anyhow::bail!("the demo cannot assign {:?}: {other:?}", t.title),
        }
    }
    queue.close().await?;
    Ok(ids)
}

/// The agents of the scenario, each with its dialect and report token.
pub struct Cast {
    reporters: BTreeMap<&'static str, Reporter>,
}

impl Cast {
    pub fn new(
        agents: impl IntoIterator<Item = (&'static str, Wire, String)>,
        intake_url: &str,
    ) -> Cast {
        let http = reqwest::Client::new();
        Cast {
            reporters: agents
                .into_iter()
                .map(|(name, wire, token)| {
                    (
                        name,
                        Reporter::new(name, wire, intake_url, token, http.clone()),
                    )
                })
                .collect(),
        }
    }

    fn of(&self, name: &str) -> &Reporter {
        &self.reporters[name]
    }
}

/// What each agent owns and keeps alive with its heartbeats.
#[derive(Default)]
struct Owned(BTreeMap<&'static str, Vec<String>>);

impl Owned {
    fn add(&mut self, agent: &'static str, id: &str) {
        self.0.entry(agent).or_default().push(id.to_string());
    }
    fn remove(&mut self, agent: &'static str, id: &str) {
        if let Some(ids) = self.0.get_mut(agent) {
            ids.retain(|i| i != id);
        }
    }
}

/// Plays the scenario on the intake at `intake_url` until `shutdown`.
pub async fn play(cast: Cast, intake_url: String, ids: TaskIds, shutdown: CancellationToken) {
    tokio::select! {
        () = shutdown.cancelled() => {}
        () = acts(&cast, &intake_url, &ids) => {}
    }
}

async fn acts(cast: &Cast, intake_url: &str, ids: &TaskIds) {
    wait_for_intake(intake_url).await;
    let id = |key: &str| ids[key].as_str();
    let mut owned = Owned::default();
    let say = |agent: &'static str, task: &'static str, body: Body| {
        let reporter = cast.of(agent);
        let task_id = ids[task].clone();
        async move {
            let answer = reporter.report(Some(&task_id), &body).await;
            checked(agent, task, answer)
        }
    };

    // First act: every assignee but vega answers within the ACK limit.
    if say(
        "sol",
        "logs",
        Body::Data(json!({"report": "ack", "shape": "owning", "eta_in": "45m"})),
    )
    .await
    {
        owned.add("sol", id("logs"));
    }
    if say("echo", "brief", Body::Text("ACK owning ETA 30m".into())).await {
        owned.add("echo", id("brief"));
    }
    say("tam", "drill", Body::Text("ACK escalating to nova".into())).await;
    if say(
        "mira",
        "episode",
        Body::Text("ACK blocked on the audio master from echo".into()),
    )
    .await
    {
        owned.add("mira", id("episode"));
    }
    if say("min", "disk", Body::Text("ACK owning ETA 1h".into())).await {
        owned.add("min", id("disk"));
    }
    say(
        "min",
        "disk",
        Body::Data(
            json!({"report": "blocker", "on": "LAB disk full: waiting for the archive move"}),
        ),
    )
    .await;
    if say(
        "kai",
        "review",
        Body::Data(json!({"report": "ack", "shape": "owning", "eta_in": "20m"})),
    )
    .await
    {
        owned.add("kai", id("review"));
    }
    // The multi-tag race: three owning ACKs at once; the intake lets exactly one own it.
    let race = futures::future::join_all(RACERS.iter().map(|&agent| {
        let reporter = cast.of(agent);
        async move {
            let body = Body::Text("ACK owning ETA 1h".into());
            (agent, reporter.report(Some(id("alerts")), &body).await)
        }
    }))
    .await;
    for (agent, answer) in race {
        match answer {
            Ok(Answer::Applied(_)) => owned.add(agent, id("alerts")),
            Ok(Answer::Refused(crate::intake::wire::code::ALREADY_OWNED)) => {}
            other => {
                checked(agent, "alerts", other);
            }
        }
    }
    // juno owns its task and is never heard from again.
    say("juno", "archive", Body::Text("ACK owning ETA 15m".into())).await;

    let started = tokio::time::Instant::now();
    let mut heartbeats = tokio::time::interval(HEARTBEAT_EVERY);
    heartbeats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let second_act = tokio::time::sleep_until(started + SECOND_ACT_AFTER);
    tokio::pin!(second_act);
    let mut second_act_done = false;
    loop {
        tokio::select! {
            _ = heartbeats.tick() => heartbeat(cast, &owned).await,
            () = &mut second_act, if !second_act_done => {
                second_act_done = true;
                // nova takes up the task tam escalated to it.
                if say(
                    "nova",
                    "drill",
                    Body::Data(json!({"report": "ack", "shape": "owning", "eta_in": "1h"})),
                )
                .await
                {
                    owned.add("nova", id("drill"));
                }
                if say("echo", "brief", Body::Text(format!("DONE {}", id("brief")))).await {
                    owned.remove("echo", id("brief"));
                }
                if say(
                    "kai",
                    "review",
                    Body::Data(json!({"report": "completion", "state": "TASK_STATE_COMPLETED"})),
                )
                .await
                {
                    owned.remove("kai", id("review"));
                }
            }
        }
    }
}

/// Every heartbeating agent's heartbeat, naming the tasks it owns (the claim heartbeat that
/// keeps the watchdog off them).
async fn heartbeat(cast: &Cast, owned: &Owned) {
    for agent in HEARTBEATING {
        let reporter = cast.of(agent);
        let in_flight = owned.0.get(agent).cloned().unwrap_or_default();
        let body = if reporter.wire() == Wire::V03Content {
            // The Pulse plane's agents send text: the heartbeat's text form.
            Body::Text(if in_flight.is_empty() {
                "HEARTBEAT".into()
            } else {
                format!("HEARTBEAT in-flight {}", in_flight.join(" "))
            })
        } else {
            Body::Data(
                json!({"report": "heartbeat", "last_activity_at": Utc::now().to_rfc3339(),
                              "in_flight": in_flight}),
            )
        };
        checked(agent, "heartbeat", reporter.report(None, &body).await);
    }
}

/// Whether `answer` applied the report; a refusal or a failure is logged (what, not the token).
fn checked(agent: &str, what: &str, answer: Result<Answer, String>) -> bool {
    match answer {
        Ok(Answer::Applied(_)) => true,
        Ok(Answer::Refused(code)) => {
            tracing::warn!(agent, what, code, "demo: the intake refused a report");
            false
        }
        Err(why) => {
            tracing::warn!(agent, what, "demo: {why}");
            false
        }
    }
}

/// Waits until the intake serves its card (it starts beside the collector).
async fn wait_for_intake(url: &str) {
    let card = format!("{url}.well-known/agent-card.json");
    let http = reqwest::Client::new();
    loop {
        // Bounded: until the intake starts, its port is held by a listener that never answers.
        if http
            .get(&card)
            .timeout(CARD_TIMEOUT)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return;
        }
        tokio::time::sleep(INTAKE_POLL).await;
    }
}
