//! Seed 000's OpenTelemetry attributes of one Agent Status Code: `agent.status.code`, `.name`,
//! `.class`, `.kind`, `.scope`, `.terminal`, `.retryable`, `.retry_safe` and
//! `agent.lifecycle.phase`. Every string is from the registry below or a closed list: a code
//! the registry does not know keeps its number and family, never a name read from elsewhere.

use std::borrow::Cow;

use fleetdash_model::Asc;

use super::value::{Attributes, Value};

/// The ASC 0.1 registry (shared/reference/asc-registry.json): code, name, default terminal
/// (`None`: contextual).
const REGISTRY: &[(u16, &str, Option<bool>)] = &[
    (1000, "ACCEPTED", Some(false)),
    (1010, "RUNNING", Some(false)),
    (1020, "WAITING_DEPENDENCY", Some(false)),
    (1030, "RETRY_SCHEDULED", Some(false)),
    (2000, "SUCCESS", Some(true)),
    (2001, "SUCCESS_WITH_WARNINGS", Some(true)),
    (2002, "PARTIAL_SUCCESS", Some(true)),
    (2003, "NO_ACTION_REQUIRED", Some(true)),
    (3001, "HUMAN_INPUT_REQUIRED", Some(false)),
    (3002, "HUMAN_APPROVAL_REQUIRED", Some(false)),
    (3003, "AUTHENTICATION_REQUIRED", Some(false)),
    (3004, "CANCELLED", Some(true)),
    (4000, "INVALID_REQUEST", Some(true)),
    (4001, "FAILED_PRECONDITION", Some(true)),
    (4002, "PERMISSION_DENIED", Some(true)),
    (4003, "GUARDRAIL_BLOCKED", Some(true)),
    (4004, "POLICY_REDACTED", None),
    (4005, "CONFLICT", Some(true)),
    (4006, "NOT_FOUND", Some(true)),
    (4007, "UNSUPPORTED_CAPABILITY", Some(true)),
    (5000, "RETRYABLE_ERROR", None),
    (5001, "RATE_LIMITED", None),
    (5002, "RESOURCE_EXHAUSTED", None),
    (5003, "DEPENDENCY_UNAVAILABLE", None),
    (5004, "TIMEOUT", None),
    (5005, "TOOL_EXECUTION_FAILED", None),
    (5006, "ABORTED_CONCURRENCY", Some(true)),
    (6000, "FATAL_ERROR", Some(true)),
    (6001, "INTERNAL_ERROR", Some(true)),
    (6002, "MODEL_BEHAVIOUR_ERROR", None),
    (6003, "DATA_LOSS", Some(true)),
    (6004, "MAX_ITERATIONS_EXCEEDED", Some(true)),
    (6005, "RESULT_STATE_UNKNOWN", Some(true)),
    (7000, "OUTPUT_UNVERIFIED", None),
    (7001, "LOW_CONFIDENCE", None),
    (7002, "HALLUCINATION_SUSPECTED", None),
    (7003, "HALLUCINATION_DETECTED", None),
    (7004, "PROVENANCE_INCOMPLETE", None),
    (7005, "INTEGRITY_CHECK_FAILED", None),
    (8000, "PROMPT_CACHE_HIT", None),
    (8001, "PROMPT_CACHE_MISS", None),
    (8002, "FALLBACK_USED", None),
    (8003, "RETRY_ATTEMPTED", None),
];

/// 8002: a probe got its answer another way than its first (a heartbeat's second dialect).
pub const FALLBACK_USED: Asc = Asc {
    code: 8002,
    name: Cow::Borrowed("FALLBACK_USED"),
};

/// 8003: a probe was tried again within its pass.
pub const RETRY_ATTEMPTED: Asc = Asc {
    code: 8003,
    name: Cow::Borrowed("RETRY_ATTEMPTED"),
};

/// The registry's name of `code`.
pub fn name(code: u16) -> Option<&'static str> {
    REGISTRY.iter().find(|e| e.0 == code).map(|e| e.1)
}

fn default_terminal(code: u16) -> Option<bool> {
    REGISTRY.iter().find(|e| e.0 == code).and_then(|e| e.2)
}

/// What a status applies to (the registry's scopes fleetdash uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// One probe of a pass.
    Step,
    /// One call a probe made (an attempt).
    ToolCall,
    /// An A2A task itself (live tasks, the work queue).
    Task,
}

impl Scope {
    fn as_str(self) -> &'static str {
        match self {
            Scope::Step => "step",
            Scope::ToolCall => "tool_call",
            Scope::Task => "task",
        }
    }
}

/// What the context knows beyond the code.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    pub scope: Scope,
    /// Known from the context (a task's state, an attempt retried); else the registry's.
    pub terminal: Option<bool>,
    /// Whether repeating the operation is harmless: a probe reads, so it is.
    pub retry_safe: Option<bool>,
    pub phase: Option<&'static str>,
}

impl Context {
    /// A finished probe: final for its pass, safe to repeat (the next pass does).
    pub fn probe() -> Context {
        Context {
            scope: Scope::Step,
            terminal: None,
            retry_safe: Some(true),
            phase: Some("FINISHED"),
        }
    }
}

/// A failure: a code of the families 3 to 7 (human-dependent, request/policy, transient,
/// fatal, trust); progress, success and events are not.
pub fn is_failure(asc: &Asc) -> bool {
    (3..=7).contains(&(asc.code / 1000))
}

/// `ASC-5003 DEPENDENCY_UNAVAILABLE`: a span's status description, from the registry alone.
pub fn describe(asc: &Asc) -> Cow<'static, str> {
    match name(asc.code) {
        Some(name) => Cow::Owned(format!("ASC-{} {name}", asc.code)),
        None => Cow::Owned(format!("ASC-{}", asc.code)),
    }
}

/// The binding's attributes of `asc` in `context`.
pub fn attributes(asc: &Asc, context: Context) -> Attributes {
    let family = asc.code / 1000;
    let mut out: Attributes = vec![
        ("agent.status.code", Value::Int(i64::from(asc.code))),
        ("agent.status.class", Value::from(asc.family())),
        (
            "agent.status.kind",
            Value::from(if family == 8 { "event" } else { "status" }),
        ),
        ("agent.status.scope", Value::from(context.scope.as_str())),
    ];
    if let Some(name) = name(asc.code) {
        out.push(("agent.status.name", Value::from(name)));
    }
    // A probe's outcome is final for its pass when the registry leaves it to the context.
    let terminal = context
        .terminal
        .or(default_terminal(asc.code))
        .or((context.scope == Scope::Step && family != 8).then_some(true));
    if let Some(terminal) = terminal {
        out.push(("agent.status.terminal", Value::Bool(terminal)));
    }
    let retryable = match family {
        5 => Some(true),
        4 | 6 => Some(false),
        _ => None,
    };
    if let Some(retryable) = retryable {
        out.push(("agent.status.retryable", Value::Bool(retryable)));
    }
    if let (Some(safe), true) = (context.retry_safe, retryable.is_some()) {
        out.push(("agent.status.retry_safe", Value::Bool(safe)));
    }
    if let Some(phase) = context.phase {
        out.push(("agent.lifecycle.phase", Value::from(phase)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(attrs: &'a Attributes, key: &str) -> Option<&'a Value> {
        attrs.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    #[test]
    fn the_seed_example_reads_as_the_binding_says() {
        let rate_limited = Asc {
            code: 5001,
            name: Cow::Borrowed("RATE_LIMITED"),
        };
        let ctx = Context {
            scope: Scope::ToolCall,
            terminal: Some(false),
            retry_safe: Some(true),
            phase: Some("EXECUTING"),
        };
        let a = attributes(&rate_limited, ctx);
        assert_eq!(get(&a, "agent.status.code"), Some(&Value::Int(5001)));
        assert_eq!(
            get(&a, "agent.status.name"),
            Some(&Value::from("RATE_LIMITED"))
        );
        assert_eq!(
            get(&a, "agent.status.class"),
            Some(&Value::from("transient_failure"))
        );
        assert_eq!(get(&a, "agent.status.kind"), Some(&Value::from("status")));
        assert_eq!(
            get(&a, "agent.status.scope"),
            Some(&Value::from("tool_call"))
        );
        assert_eq!(get(&a, "agent.status.terminal"), Some(&Value::Bool(false)));
        assert_eq!(get(&a, "agent.status.retryable"), Some(&Value::Bool(true)));
        assert_eq!(get(&a, "agent.status.retry_safe"), Some(&Value::Bool(true)));
        assert_eq!(
            get(&a, "agent.lifecycle.phase"),
            Some(&Value::from("EXECUTING"))
        );
    }

    #[test]
    fn a_name_comes_from_the_registry_never_from_the_code_it_came_with() {
        let forged = Asc {
            code: 9501,
            name: Cow::Owned("see https://evil.example/?t=secret".into()),
        };
        let a = attributes(&forged, Context::probe());
        assert_eq!(get(&a, "agent.status.name"), None);
        assert_eq!(get(&a, "agent.status.class"), Some(&Value::from("unknown")));
        assert_eq!(describe(&forged), "ASC-9501");
        let mismatched = Asc {
            code: 5004,
            name: Cow::Borrowed("WHATEVER"),
        };
        assert_eq!(describe(&mismatched), "ASC-5004 TIMEOUT");
    }

    #[test]
    fn success_has_no_retry_and_events_are_events() {
        let a = attributes(&Asc::SUCCESS, Context::probe());
        assert_eq!(get(&a, "agent.status.terminal"), Some(&Value::Bool(true)));
        assert_eq!(get(&a, "agent.status.retryable"), None);
        assert_eq!(get(&a, "agent.status.retry_safe"), None);
        let e = attributes(&FALLBACK_USED, Context::probe());
        assert_eq!(get(&e, "agent.status.kind"), Some(&Value::from("event")));
        assert_eq!(get(&e, "agent.status.terminal"), None);
        // A transient failure of a probe: final for its pass, retryable, safe to retry.
        let t = attributes(&Asc::DEPENDENCY_UNAVAILABLE, Context::probe());
        assert_eq!(get(&t, "agent.status.terminal"), Some(&Value::Bool(true)));
        assert_eq!(get(&t, "agent.status.retryable"), Some(&Value::Bool(true)));
        assert_eq!(get(&t, "agent.status.retry_safe"), Some(&Value::Bool(true)));
        assert!(is_failure(&Asc::DEPENDENCY_UNAVAILABLE) && !is_failure(&Asc::RUNNING));
    }
}
