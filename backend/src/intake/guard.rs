//! Who may report and how much: each agent's bearer token (compared in constant time), a
//! per-agent rate limit, and the HTTP-level refusals as `application/problem+json` with the
//! ASC `agent_status` envelope (seed 000's HTTP binding).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode};
use fleetdash_model::Asc;
use ring::digest;
use subtle::ConstantTimeEq;
use tokio::time::Instant;

pub use crate::problem::{
    ABORTED_CONCURRENCY, Challenge, INVALID_REQUEST, PROBLEM_JSON, Problem, RATE_LIMITED,
    whole_seconds,
};

/// Who a request's token says it is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Caller {
    /// An agent of the registry: it reports, and reads the tasks it owns, is tagged on or
    /// assigned.
    Agent(String),
    /// The operator's token (`[intake] operator_token_*`): it reads every task, reports none.
    Operator,
}

impl Caller {
    /// How logs and refusals name it.
    pub fn name(&self) -> &str {
        match self {
            Caller::Agent(name) => name,
            Caller::Operator => "the operator",
        }
    }
}

/// The agents' report tokens and the operator's, kept only as SHA-256 digests: every
/// comparison is between two 32-byte values, in constant time, and each request is compared
/// with every token.
pub struct Tokens {
    digests: Vec<(Caller, [u8; 32])>,
}

fn sha256(token: &str) -> [u8; 32] {
    let d = digest::digest(&digest::SHA256, token.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

impl Tokens {
    /// `(agent, token)` pairs. Two agents with one token could not be told apart: refused.
    pub fn new(pairs: impl IntoIterator<Item = (String, String)>) -> Result<Tokens, String> {
        let mut tokens = Tokens {
            digests: Vec::new(),
        };
        for (agent, token) in pairs {
            tokens.add(Caller::Agent(agent), &token)?;
        }
        Ok(tokens)
    }

    /// With the operator's read-all token too; it must be no agent's.
    pub fn with_operator(mut self, token: &str) -> Result<Tokens, String> {
        self.add(Caller::Operator, token)?;
        Ok(self)
    }

    fn add(&mut self, caller: Caller, token: &str) -> Result<(), String> {
        let d = sha256(token);
        if let Some((other, _)) = self.digests.iter().find(|(_, o)| *o == d) {
            return Err(format!(
                "{} and {} have the same token: each reports (or reads) with its own",
                described(other),
                described(&caller)
            ));
        }
        self.digests.push((caller, d));
        Ok(())
    }

    /// Whether no agent can report (the operator's token reports nothing).
    pub fn is_empty(&self) -> bool {
        !self
            .digests
            .iter()
            .any(|(c, _)| matches!(c, Caller::Agent(_)))
    }

    /// The caller whose token `authorization` (`Bearer <token>`) carries.
    pub fn identify(&self, authorization: Option<&HeaderValue>) -> Option<Caller> {
        let value = authorization?.to_str().ok()?;
        let (scheme, token) = value.trim().split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let presented = sha256(token.trim());
        let mut found = None;
        // No early exit: the time taken does not say which token matched, or how far.
        for (caller, d) in &self.digests {
            if bool::from(d.ct_eq(&presented)) {
                found = Some(caller.clone());
            }
        }
        found
    }
}

fn described(caller: &Caller) -> String {
    match caller {
        Caller::Agent(name) => format!("agent {name:?}"),
        Caller::Operator => "the operator's token ([intake] operator_token_*)".into(),
    }
}

/// Which budget a request spends: a report's (SendMessage, CancelTask) or a read's
/// (everything else, malformed requests included), so a reader never starves its reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    Reports,
    Reads,
}

/// A token bucket per caller: `per_minute` requests at once, refilled at `per_minute` a minute.
pub struct RateLimit {
    per_minute: u32,
    buckets: Mutex<HashMap<Caller, Bucket>>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

impl RateLimit {
    pub fn new(per_minute: usize) -> RateLimit {
        RateLimit {
            per_minute: u32::try_from(per_minute).unwrap_or(u32::MAX).max(1),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request's token for `caller`, or says how long until there is one.
    pub fn take(&self, caller: &Caller) -> Result<(), Duration> {
        let now = Instant::now();
        let capacity = f64::from(self.per_minute);
        let per_second = capacity / 60.0;
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let bucket = buckets.entry(caller.clone()).or_insert(Bucket {
            tokens: capacity,
            at: now,
        });
        let elapsed = now.duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * per_second).min(capacity);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / per_second))
        }
    }
}

impl Problem {
    pub fn unauthorized() -> Problem {
        Problem {
            status: StatusCode::UNAUTHORIZED,
            asc: Asc::AUTHENTICATION_REQUIRED,
            title: "A report needs the agent's own bearer token",
            detail: "send Authorization: Bearer <the agent's report token> (docs/reporting.md)"
                .into(),
            scope: "policy_decision",
            terminal: false,
            retry: None,
            challenge: Challenge::Bearer,
        }
    }

    /// The operator's token asked to report or cancel: it reads, and the operator assigns
    /// with `fleetdash task assign`.
    pub fn reads_only() -> Problem {
        Problem {
            status: StatusCode::FORBIDDEN,
            asc: Asc::PERMISSION_DENIED,
            title: "The operator's token reads; reports come from an agent's token",
            detail: "GetTask and ListTasks answer it for every agent; assign work with \
                     `fleetdash task assign`"
                .into(),
            scope: "policy_decision",
            terminal: true,
            retry: None,
            challenge: Challenge::None,
        }
    }

    /// An agent's token asked about the fleet: only the hub agent (`role = "hub"`) and the
    /// operator ask; the others report.
    pub fn may_not_ask(who: &str) -> Problem {
        Problem {
            status: StatusCode::FORBIDDEN,
            asc: Asc::PERMISSION_DENIED,
            title: "Only the hub agent and the operator ask fleetdash about the fleet",
            detail: format!(
                "{who} reports with this token; the hub agent is marked role = \"hub\" in its \
                 [[agents]] entry, and the operator asks with [intake] operator_token_*"
            ),
            scope: "policy_decision",
            terminal: true,
            retry: None,
            challenge: Challenge::None,
        }
    }

    /// An agent's token asked for `/metrics`: the fleet's counts are the operator's to read.
    pub fn metrics_operator_only() -> Problem {
        Problem {
            status: StatusCode::FORBIDDEN,
            asc: Asc::PERMISSION_DENIED,
            title: "/metrics is read with the operator's token",
            detail: "an agent's token reads its own tasks; scrape with the operator's token \
                     ([intake] operator_token_*), or from [metrics] listen on loopback"
                .into(),
            scope: "policy_decision",
            terminal: true,
            retry: None,
            challenge: Challenge::None,
        }
    }

    pub fn not_yours(task_id: &str) -> Problem {
        Problem {
            status: StatusCode::FORBIDDEN,
            asc: Asc::PERMISSION_DENIED,
            title: "Not this agent's task",
            detail: format!(
                "task {task_id}: the reporting agent neither owns it nor is tagged on it"
            ),
            scope: "policy_decision",
            terminal: true,
            retry: None,
            challenge: Challenge::None,
        }
    }

    pub fn rate_limited(budget: Budget, wait: Duration) -> Problem {
        let (title, detail) = match budget {
            Budget::Reports => (
                "Too many reports from this agent",
                "slow down: the intake takes [intake] rate_per_minute reports per agent a minute",
            ),
            Budget::Reads => (
                "Too many reads on this token",
                "slow down: the intake answers [intake] read_rate_per_minute reads per token a \
                 minute, a budget apart from the agent's reports",
            ),
        };
        Problem {
            status: StatusCode::TOO_MANY_REQUESTS,
            asc: RATE_LIMITED,
            title,
            detail: detail.into(),
            scope: "handoff",
            terminal: false,
            retry: Some(Some(wait)),
            challenge: Challenge::None,
        }
    }

    /// A token whose every connection on this face is in a request (`[intake]
    /// max_connections_per_token`): its client waits for one to finish.
    pub fn too_many_connections(per_token: usize) -> Problem {
        Problem {
            status: StatusCode::TOO_MANY_REQUESTS,
            asc: RATE_LIMITED,
            title: "Too many connections on this token",
            detail: format!(
                "this token has {per_token} requests in flight on this face ([intake] \
                 max_connections_per_token): send the next when one is answered"
            ),
            scope: "handoff",
            terminal: false,
            retry: Some(Some(Duration::from_secs(1))),
            challenge: Challenge::None,
        }
    }

    /// What the MCP SDK refused in plain words (a missing Accept header, an unknown session),
    /// as problem+json.
    pub fn from_mcp(status: StatusCode, words: String) -> Problem {
        let server = status.is_server_error();
        Problem {
            status,
            asc: if server {
                Asc::INTERNAL_ERROR
            } else {
                INVALID_REQUEST
            },
            title: "The MCP request was refused",
            detail: if words.is_empty() {
                "the MCP server gave no reason (docs/agents.md: POST JSON-RPC with Accept: \
                 application/json, text/event-stream)"
                    .into()
            } else {
                words
            },
            scope: "handoff",
            terminal: !server,
            retry: server.then_some(None),
            challenge: Challenge::None,
        }
    }

    pub fn too_large(limit: usize) -> Problem {
        Problem {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            asc: INVALID_REQUEST,
            title: "Request body too large",
            detail: format!("a request body is at most {limit} bytes; a report is a few hundred"),
            scope: "handoff",
            terminal: true,
            retry: None,
            challenge: Challenge::None,
        }
    }

    pub fn too_slow(deadline: Duration) -> Problem {
        Problem {
            status: StatusCode::REQUEST_TIMEOUT,
            asc: Asc::TIMEOUT,
            title: "Request body too slow",
            detail: format!(
                "the body did not arrive within {}",
                humantime::format_duration(deadline)
            ),
            scope: "handoff",
            terminal: false,
            retry: Some(None),
            challenge: Challenge::None,
        }
    }

    pub fn unsupported_media_type(given: Option<&str>) -> Problem {
        let given = given
            .map(|g| crate::text::clean(g, 80))
            .unwrap_or_else(|| "none".into());
        Problem {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            asc: INVALID_REQUEST,
            title: "Unsupported media type",
            detail: format!(
                "a JSON-RPC request is Content-Type: application/json (this one: {given})"
            ),
            scope: "handoff",
            terminal: true,
            retry: None,
            challenge: Challenge::None,
        }
    }

    pub fn unreadable() -> Problem {
        Problem {
            status: StatusCode::BAD_REQUEST,
            asc: INVALID_REQUEST,
            title: "Request body unreadable",
            detail: "the body broke off before its end".into(),
            scope: "handoff",
            terminal: false,
            retry: Some(None),
            challenge: Challenge::None,
        }
    }

    pub fn not_stored() -> Problem {
        Problem {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            asc: Asc::INTERNAL_ERROR,
            title: "The report was not stored",
            detail: "the work queue could not commit it; nothing was written: send it again".into(),
            scope: "handoff",
            terminal: false,
            retry: Some(None),
            challenge: Challenge::None,
        }
    }

    pub fn not_found() -> Problem {
        Problem {
            status: StatusCode::NOT_FOUND,
            asc: Asc::NOT_FOUND,
            title: "Not found",
            detail: "reports go to POST / ; the card is at /.well-known/agent-card.json".into(),
            scope: "handoff",
            terminal: true,
            retry: None,
            challenge: Challenge::None,
        }
    }

    pub fn method_not_allowed() -> Problem {
        Problem {
            status: StatusCode::METHOD_NOT_ALLOWED,
            asc: INVALID_REQUEST,
            title: "Method not allowed",
            detail: "reports are JSON-RPC requests: POST /".into(),
            scope: "handoff",
            terminal: true,
            retry: None,
            challenge: Challenge::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header;
    use axum::response::IntoResponse;

    fn bearer(t: &str) -> HeaderValue {
        HeaderValue::from_str(&format!("Bearer {t}")).unwrap()
    }

    fn agent(name: &str) -> Caller {
        Caller::Agent(name.into())
    }

    #[test]
    fn a_token_names_its_agent_and_nothing_else_does() {
        let tokens = Tokens::new([
            ("sol".to_string(), "tok-sol-1234".to_string()),
            ("mira".to_string(), "tok-mira-5678".to_string()),
        ])
        .unwrap()
        .with_operator("tok-operator-9")
        .unwrap();
        assert_eq!(
            tokens.identify(Some(&bearer("tok-sol-1234"))),
            Some(agent("sol"))
        );
        assert_eq!(
            tokens.identify(Some(&HeaderValue::from_static("bearer  tok-mira-5678 "))),
            Some(agent("mira"))
        );
        assert_eq!(
            tokens.identify(Some(&bearer("tok-operator-9"))),
            Some(Caller::Operator)
        );
        assert_eq!(tokens.identify(Some(&bearer("tok-sol-123"))), None);
        assert_eq!(tokens.identify(Some(&bearer(""))), None);
        assert_eq!(
            tokens.identify(Some(&HeaderValue::from_static("Basic dG9rLXNvbC0xMjM0"))),
            None
        );
        assert_eq!(tokens.identify(None), None);
        let same = Tokens::new([("a".into(), "t".into()), ("b".into(), "t".into())]);
        assert!(same.err().unwrap().contains("same token"));
        let operator_is_an_agent = Tokens::new([("a".into(), "t".into())])
            .unwrap()
            .with_operator("t");
        assert!(
            operator_is_an_agent
                .err()
                .unwrap()
                .contains("agent \"a\" and the operator's token"),
        );
        let only_operator = Tokens::new([]).unwrap().with_operator("t").unwrap();
        assert!(only_operator.is_empty(), "the operator reports nothing");
    }

    #[tokio::test(start_paused = true)]
    async fn the_rate_limit_is_per_agent_and_refills() {
        let limit = RateLimit::new(2);
        let (sol, mira) = (agent("sol"), agent("mira"));
        assert!(limit.take(&sol).is_ok());
        assert!(limit.take(&sol).is_ok());
        let wait = limit.take(&sol).unwrap_err();
        assert_eq!(whole_seconds(wait), 30);
        assert!(limit.take(&mira).is_ok(), "another agent is not slowed");
        assert!(limit.take(&Caller::Operator).is_ok());
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(limit.take(&sol).is_ok());
        assert!(limit.take(&sol).is_err());
    }

    #[test]
    fn problems_carry_the_asc_envelope_as_seed_000_shows() {
        let body = Problem::rate_limited(Budget::Reports, Duration::from_millis(1500)).body();
        assert_eq!(body["type"], "urn:agent-status:RATE_LIMITED");
        assert_eq!(body["status"], 429);
        assert_eq!(body["agent_status"]["code"], 5001);
        assert_eq!(body["agent_status"]["terminal"], false);
        assert_eq!(body["retry"]["after_ms"], 2000);
        let body = Problem::not_yours("q_1").body();
        assert_eq!(body["agent_status"]["name"], "PERMISSION_DENIED");
        assert!(body.get("retry").is_none());
        let r = Problem::unauthorized().into_response();
        assert_eq!(r.headers()[header::CONTENT_TYPE], PROBLEM_JSON);
        assert_eq!(r.headers()[header::WWW_AUTHENTICATE], "Bearer");
    }
}
