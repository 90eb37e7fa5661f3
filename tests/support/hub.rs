//! An intake on a loopback port in front of a work queue in a temporary folder, the fleet of
//! agents it knows (each with its report token, and the operator's read-all token), and raw
//! HTTP to talk to it: shared by tests/intake.rs and tests/conformance.rs.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;

use chrono::Utc;
use fleetdash::config::IntakeConfig;
use fleetdash::intake::guard::Tokens;
use fleetdash::intake::{self, IntakeOptions};
use fleetdash::queue::{Assignment, QueueRules, Report, ReportKind, Reporter, TaskRow, WorkQueue};
use fleetdash::redact::RedactionGate;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::HANG_BUDGET;

/// The fleet of these tests and each agent's report token.
pub const AGENTS: &[(&str, &str)] = &[
    ("sol", "report-sol-5b1e9c2f"),
    ("mira", "report-mira-77d0a4e3"),
    ("nova", "report-nova-c93f1b08"),
    ("echo", "report-echo-0a6e2d91"),
];

/// The agent marked `role = "hub"`: it reports, and may ask about the fleet too.
pub const HUB_AGENT: &str = "mira";

/// The operator's read-all token (`[intake] operator_token_*`); `post(hub, Some("operator"), ..)`
/// sends it.
pub const OPERATOR_TOKEN: &str = "operator-reads-3f9a61c2";

pub fn token(agent: &str) -> &'static str {
    if agent == "operator" {
        return OPERATOR_TOKEN;
    }
    AGENTS.iter().find(|(a, _)| *a == agent).unwrap().1
}

/// An intake on a loopback port, in front of a work queue in a temporary folder.
pub struct Hub {
    pub addr: SocketAddr,
    pub db: PathBuf,
    pub queue: Arc<WorkQueue>,
    pub rt: tokio::runtime::Runtime,
    shutdown: CancellationToken,
    _dir: tempfile::TempDir,
}

impl Hub {
    pub fn start() -> Hub {
        Hub::with_limits(IntakeConfig::default())
    }

    pub fn with_limits(limits: IntakeConfig) -> Hub {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("tasks.db");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let all_rules = fleetdash::config::Rules::parse(
            std::path::Path::new("config/rules.yaml"),
            crate::support::DEFAULT_RULES,
        )
        .unwrap();
        let rules = QueueRules {
            ack_within_s: 600,
            no_reply_s: 300,
            worker_died_s: 3600,
            ..QueueRules::of(&all_rules)
        };
        // The report's files: the same out/ and state/ the other questions read.
        let config = fleetdash::config::Config::parse(
            &dir.path().join("fleetdash.toml"),
            "output_dir = \"out\"\nstate_dir = \"state\"\n",
        )
        .unwrap();
        let queue = Arc::new(rt.block_on(WorkQueue::open(&db, rules)).unwrap());
        let options = IntakeOptions {
            tokens: Tokens::new(AGENTS.iter().map(|(a, t)| (a.to_string(), t.to_string())))
                .unwrap()
                .with_operator(OPERATOR_TOKEN)
                .unwrap(),
            agents: AGENTS.iter().map(|(a, _)| a.to_string()).collect(),
            limits,
            gate: RedactionGate::new(AGENTS.iter().map(|(_, t)| t.to_string())),
            metrics: None,
            actions: None,
            hubs: [HUB_AGENT.to_string()].into(),
            snapshot: Some(dir.path().join("out/status.json")),
            state_dir: Some(dir.path().join("state")),
            queue_rules: rules,
            report: Some(fleetdash::answers::report::Reports::new(
                &config, &all_rules,
            )),
            mcp: None,
        };
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        rt.spawn(intake::serve(
            listener,
            queue.clone(),
            options,
            shutdown.clone(),
        ));
        Hub {
            addr,
            db,
            queue,
            rt,
            shutdown,
            _dir: dir,
        }
    }

    /// Writes `snapshot` where the intake answers questions from.
    pub fn write_snapshot(&self, snapshot: &fleetdash_model::Snapshot) {
        let out = self._dir.path().join("out");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(
            out.join("status.json"),
            serde_json::to_vec(snapshot).unwrap(),
        )
        .unwrap();
    }

    /// Puts `bytes` in the intake's state_dir as `name` (the transitions log it answers
    /// `changes since ...` from).
    pub fn write_state_file(&self, name: &str, bytes: &[u8]) {
        let state = self._dir.path().join("state");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::write(state.join(name), bytes).unwrap();
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The operator assigns a task (as `fleetdash task assign` does); its id.
    pub fn assign(&self, title: &str, owner: Option<&str>, tagged: &[&str]) -> String {
        let report = Report {
            from: Reporter::Operator,
            message_id: uuid::Uuid::new_v4().to_string(),
            context_id: None,
            received_at: Utc::now(),
            kind: ReportKind::Assign(Assignment {
                title: title.into(),
                owner: owner.map(str::to_string),
                tagged: tagged.iter().map(|t| t.to_string()).collect(),
                deadline: None,
            }),
        };
        let applied = self.rt.block_on(self.queue.apply(report)).unwrap();
        applied.task.unwrap().id
    }

    pub fn row(&self, id: &str) -> TaskRow {
        self.rt.block_on(self.queue.get(id)).unwrap().unwrap()
    }

    /// Every row of every table, in order: what "nothing was written" compares.
    pub fn contents(&self) -> String {
        let conn = rusqlite::Connection::open_with_flags(
            &self.db,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let mut out = String::new();
        for table in ["tasks", "events", "agents"] {
            let mut stmt = conn
                .prepare(&format!("SELECT * FROM {table} ORDER BY rowid"))
                .unwrap();
            let n = stmt.column_count();
            let rows = stmt
                .query_map([], |r| {
                    (0..n)
                        .map(|i| {
                            r.get::<_, rusqlite::types::Value>(i)
                                .map(|v| format!("{v:?}"))
                        })
                        .collect::<Result<Vec<_>, _>>()
                })
                .unwrap();
            for row in rows {
                out.push_str(&format!("{table}: {}\n", row.unwrap().join(" | ")));
            }
        }
        out
    }

    pub fn events(&self) -> usize {
        self.contents()
            .lines()
            .filter(|l| l.starts_with("events:"))
            .count()
    }

    /// The database's bytes, WAL included: free text that must not be kept is searched here.
    pub fn bytes(&self) -> Vec<u8> {
        let mut all = std::fs::read(&self.db).unwrap();
        if let Ok(wal) = std::fs::read(self.db.with_extension("db-wal")) {
            all.extend(wal);
        }
        all
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// One HTTP exchange over a plain socket: (status, headers in lower case, body).
pub struct Answer {
    pub status: u16,
    pub headers: String,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }
}

pub fn exchange(addr: SocketAddr, head: &str, body: &[u8]) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(HANG_BUDGET)).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    // A server that answers before reading the whole body may close on us: that is its right.
    let _ = s.write_all(body);
    read_answer(s)
}

pub fn read_answer(mut s: TcpStream) -> Answer {
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    Answer {
        status,
        headers: head.to_string(),
        body: body.to_string(),
    }
}

/// A JSON-RPC POST as `agent` (None: no token), with `A2A-Version` when given.
pub fn post(hub: &Hub, agent: Option<&str>, version: Option<&str>, body: &str) -> Answer {
    let mut head = format!(
        "POST / HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        hub.addr,
        body.len()
    );
    if let Some(agent) = agent {
        head.push_str(&format!("Authorization: Bearer {}\r\n", token(agent)));
    }
    if let Some(v) = version {
        head.push_str(&format!("A2A-Version: {v}\r\n"));
    }
    head.push_str("\r\n");
    exchange(hub.addr, &head, body.as_bytes())
}

/// A message of one text part.
pub fn text(s: &str) -> Value {
    json!({"parts": [{"kind": "text", "text": s}]})
}

pub fn v03_send(message_id: &str, message: Value) -> String {
    let mut m = message;
    m["kind"] = "message".into();
    m["role"] = "user".into();
    m["messageId"] = message_id.into();
    json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": m}})
        .to_string()
}

pub fn v1_send(message_id: &str, message: Value) -> String {
    let mut m = message;
    m["role"] = "ROLE_USER".into();
    m["messageId"] = message_id.into();
    json!({"jsonrpc": "2.0", "id": "r", "method": "SendMessage", "params": {"message": m}})
        .to_string()
}
