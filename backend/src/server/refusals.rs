//! `fleetdash serve`'s refusals, each as `application/problem+json` with the ASC envelope
//! ([`crate::problem`]), the shape the report intake refuses in: a script polling
//! `/api/status.json` tells "log in", "slow down", "no such file" and "no snapshot yet" apart
//! by `agent_status.name`, and knows from `retry` whether and when to try again.

use std::time::Duration;

use axum::http::StatusCode;
use fleetdash_model::Asc;

use crate::problem::{Challenge, INVALID_REQUEST, Problem, RATE_LIMITED};

/// How long a client is told to wait for a first snapshot: a collection pass takes seconds.
const NO_SNAPSHOT_RETRY: Duration = Duration::from_secs(5);

pub fn unauthorized() -> Problem {
    Problem {
        status: StatusCode::UNAUTHORIZED,
        asc: Asc::AUTHENTICATION_REQUIRED,
        title: "The dashboard needs a login",
        detail: "log in with a user of the htpasswd file that [serve] htpasswd names".into(),
        scope: "policy_decision",
        terminal: false,
        retry: None,
        challenge: Challenge::Basic,
    }
}

pub fn throttled(wait: Duration) -> Problem {
    Problem {
        status: StatusCode::TOO_MANY_REQUESTS,
        asc: RATE_LIMITED,
        title: "Too many failed or pending logins from this address",
        detail: "wait, then log in again with the right password".into(),
        scope: "policy_decision",
        terminal: false,
        retry: Some(Some(wait)),
        challenge: Challenge::None,
    }
}

pub fn busy(wait: Duration) -> Problem {
    Problem {
        status: StatusCode::SERVICE_UNAVAILABLE,
        asc: Asc::RESOURCE_EXHAUSTED,
        title: "Too many logins being checked",
        detail: "the server is checking as many passwords as it may at once; try again shortly"
            .into(),
        scope: "handoff",
        terminal: false,
        retry: Some(Some(wait)),
        challenge: Challenge::None,
    }
}

pub fn not_found() -> Problem {
    Problem {
        status: StatusCode::NOT_FOUND,
        asc: Asc::NOT_FOUND,
        title: "Not found",
        detail: "the page is at / ; the snapshot at /api/status.json and /api/snapshot.html".into(),
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
        detail: "the dashboard is read with GET (or HEAD)".into(),
        scope: "handoff",
        terminal: true,
        retry: None,
        challenge: Challenge::None,
    }
}

/// The collector has not written the file yet (a fresh install, or `fleetdash run` not
/// running): not the client's mistake, and not for ever.
pub fn no_snapshot(file: &str) -> Problem {
    Problem {
        status: StatusCode::SERVICE_UNAVAILABLE,
        asc: Asc::DEPENDENCY_UNAVAILABLE,
        title: "No snapshot yet",
        detail: format!(
            "the collector has not written {file} yet: is `fleetdash run` running with this \
             config's output_dir? (`fleetdash doctor --config FILE` checks)"
        ),
        scope: "handoff",
        terminal: false,
        retry: Some(Some(NO_SNAPSHOT_RETRY)),
        challenge: Challenge::None,
    }
}

/// A phone's action link that is not honoured (forged, expired, used, not a link): nothing
/// changed, and trying the same link again cannot help.
pub fn action_refused(why: String) -> Problem {
    Problem {
        status: StatusCode::FORBIDDEN,
        asc: Asc::PERMISSION_DENIED,
        title: "This action link is refused",
        detail: why,
        scope: "policy_decision",
        terminal: true,
        retry: None,
        challenge: Challenge::None,
    }
}

/// A good link to acknowledge an alert that has recovered since: nothing to do, the link
/// stays unused.
pub fn action_moot(why: String) -> Problem {
    Problem {
        status: StatusCode::CONFLICT,
        asc: Asc::FAILED_PRECONDITION,
        title: "Nothing to acknowledge",
        detail: why,
        scope: "policy_decision",
        terminal: true,
        retry: None,
        challenge: Challenge::None,
    }
}

/// A good action link that could not be recorded (state_dir unwritable).
pub fn action_failed(why: String) -> Problem {
    Problem {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        asc: Asc::INTERNAL_ERROR,
        title: "The action could not be recorded",
        detail: why,
        scope: "handoff",
        terminal: false,
        retry: None,
        challenge: Challenge::None,
    }
}

pub fn action_needs_post() -> Problem {
    Problem {
        status: StatusCode::METHOD_NOT_ALLOWED,
        asc: INVALID_REQUEST,
        title: "Method not allowed",
        detail: "an action link is followed with POST (the ntfy app's button does)".into(),
        scope: "handoff",
        terminal: true,
        retry: None,
        challenge: Challenge::None,
    }
}

/// A signed link whose expiry is out of range (issue 32): the value is refused, with the limit
/// named, before any arithmetic on it.
pub fn action_out_of_range(why: String) -> Problem {
    Problem {
        status: StatusCode::BAD_REQUEST,
        asc: INVALID_REQUEST,
        title: "This action link's time is out of range",
        detail: why,
        scope: "policy_decision",
        terminal: true,
        retry: None,
        challenge: Challenge::None,
    }
}
