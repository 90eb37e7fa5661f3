//! HTTP refusals as `application/problem+json` (RFC 9457) with the ASC `agent_status` envelope
//! (seed 000's HTTP binding): the one shape every HTTP face of fleetdash refuses in, the report
//! intake's and `fleetdash serve`'s alike, so a client reads both the same way.

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use fleetdash_model::Asc;
use serde_json::json;

/// The media type of every HTTP-level refusal (RFC 9457).
pub const PROBLEM_JSON: &str = "application/problem+json";

/// ASC codes the HTTP faces name beyond those the model crate has (registry asc-registry.json).
pub const RATE_LIMITED: Asc = Asc {
    code: 5001,
    name: std::borrow::Cow::Borrowed("RATE_LIMITED"),
};
pub const INVALID_REQUEST: Asc = Asc {
    code: 4000,
    name: std::borrow::Cow::Borrowed("INVALID_REQUEST"),
};
pub const ABORTED_CONCURRENCY: Asc = Asc {
    code: 5006,
    name: std::borrow::Cow::Borrowed("ABORTED_CONCURRENCY"),
};

/// Retry-After in whole seconds, rounded up (a client told 0 would retry at once).
pub fn whole_seconds(wait: Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
}

/// One HTTP-level refusal.
pub struct Problem {
    pub status: StatusCode,
    pub asc: Asc,
    pub title: &'static str,
    /// What to do about it; never the request's own text.
    pub detail: String,
    /// ASC's scope: `policy_decision` for who may ask, `handoff` for the delivery itself.
    pub scope: &'static str,
    pub terminal: bool,
    /// Set when a retry may work, with how long to wait when that is known. Reports are
    /// idempotent by messageId and reads change nothing, so a retry is always safe.
    pub retry: Option<Option<Duration>>,
    /// The `WWW-Authenticate` challenge of a 401.
    pub challenge: Challenge,
}

/// How a 401 asks to log in (one byte: the refusal is passed by value through the intake).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Challenge {
    None,
    /// The intake: an agent's bearer token.
    Bearer,
    /// `fleetdash serve`: the htpasswd's users, in the realm nginx's `auth_basic "fleetdash"`
    /// names too.
    Basic,
}

impl Challenge {
    fn header(self) -> Option<&'static str> {
        match self {
            Challenge::None => None,
            Challenge::Bearer => Some("Bearer"),
            Challenge::Basic => Some("Basic realm=\"fleetdash\", charset=\"UTF-8\""),
        }
    }
}

impl Problem {
    pub fn body(&self) -> serde_json::Value {
        let mut body = json!({
            "type": format!("urn:agent-status:{}", self.asc.name),
            "title": self.title,
            "status": self.status.as_u16(),
            "detail": self.detail,
            "agent_status": {
                "code": self.asc.code,
                "name": self.asc.name,
                "scope": self.scope,
                "terminal": self.terminal,
            },
        });
        if let Some(after) = self.retry {
            let mut retry = json!({"retryable": true, "safe": true});
            if let Some(after) = after {
                retry["after_ms"] = (whole_seconds(after) * 1000).into();
            }
            body["retry"] = retry;
        }
        body
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let body = self.body().to_string();
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON))],
            body,
        )
            .into_response();
        let headers = response.headers_mut();
        if let Some(challenge) = self.challenge.header() {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        if let Some(Some(after)) = self.retry {
            headers.insert(header::RETRY_AFTER, whole_seconds(after).into());
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_carries_the_envelope_its_challenge_and_its_wait() {
        let problem = Problem {
            status: StatusCode::TOO_MANY_REQUESTS,
            asc: RATE_LIMITED,
            title: "Too many",
            detail: "slow down".into(),
            scope: "handoff",
            terminal: false,
            retry: Some(Some(Duration::from_millis(1500))),
            challenge: Challenge::Basic,
        };
        let body = problem.body();
        assert_eq!(body["type"], "urn:agent-status:RATE_LIMITED");
        assert_eq!(body["agent_status"]["code"], 5001);
        assert_eq!(body["retry"]["after_ms"], 2000);
        let response = problem.into_response();
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
        assert_eq!(
            response.headers()[header::WWW_AUTHENTICATE],
            "Basic realm=\"fleetdash\", charset=\"UTF-8\""
        );
        assert_eq!(response.headers()[header::CONTENT_TYPE], PROBLEM_JSON);
    }
}
