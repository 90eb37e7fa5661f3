//! Agent Status Codes (ASC 0.1 draft): a machine-readable class for every element's condition.
//!
//! Producers send both code and name (registry note), displayed as `ASC-<code>`. Only the codes
//! the collectors emit are named here; a reader handles any other code by its first digit.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asc {
    pub code: u16,
    pub name: Cow<'static, str>,
}

macro_rules! codes {
    ($($ident:ident = $code:literal),* $(,)?) => {
        impl Asc {
            $(pub const $ident: Asc = Asc { code: $code, name: Cow::Borrowed(stringify!($ident)) };)*
        }
    };
}

codes! {
    ACCEPTED = 1000,
    RUNNING = 1010,
    SUCCESS = 2000,
    SUCCESS_WITH_WARNINGS = 2001,
    HUMAN_INPUT_REQUIRED = 3001,
    AUTHENTICATION_REQUIRED = 3003,
    CANCELLED = 3004,
    FAILED_PRECONDITION = 4001,
    PERMISSION_DENIED = 4002,
    GUARDRAIL_BLOCKED = 4003,
    NOT_FOUND = 4006,
    UNSUPPORTED_CAPABILITY = 4007,
    RETRYABLE_ERROR = 5000,
    RESOURCE_EXHAUSTED = 5002,
    DEPENDENCY_UNAVAILABLE = 5003,
    TIMEOUT = 5004,
    INTERNAL_ERROR = 6001,
    INTEGRITY_CHECK_FAILED = 7005,
}

impl Asc {
    /// The family word of the code's first digit, as in the registry.
    pub fn family(&self) -> &'static str {
        match self.code / 1000 {
            1 => "progress",
            2 => "success",
            3 => "human_dependent",
            4 => "request_policy",
            5 => "transient_failure",
            6 => "fatal",
            7 => "trust",
            8 => "event",
            _ => "unknown",
        }
    }

    /// Serde's default for rows written before the field existed.
    pub fn success() -> Asc {
        Asc::SUCCESS
    }

    pub fn is_success(&self) -> bool {
        self.code / 1000 == 2
    }
}

impl std::fmt::Display for Asc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ASC-{} {}", self.code, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_carry_code_and_name_on_the_wire() {
        let json = serde_json::to_string(&Asc::TIMEOUT).unwrap();
        assert_eq!(json, r#"{"code":5004,"name":"TIMEOUT"}"#);
        assert_eq!(Asc::TIMEOUT.to_string(), "ASC-5004 TIMEOUT");
        assert_eq!(Asc::TIMEOUT.family(), "transient_failure");
    }
}
