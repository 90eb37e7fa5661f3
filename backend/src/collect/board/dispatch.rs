//! The host boundary (spec §3.1): which profiles this host's dispatcher may claim cards for.
//!
//! The board split is a host boundary as well as a topic boundary: a card assigned to a profile
//! that does not run here (e.g. `tam`, a Pulse profile, on the LAB board) can never be claimed,
//! and it sits in its column forever unless the dashboard says so. Hermes enforces the boundary
//! with `kanban.dispatch_profiles` in its YAML config, a fail-closed allowlist; this module reads
//! the same key with the same semantics:
//!
//! | `kanban.dispatch_profiles` | dispatchable here |
//! | --- | --- |
//! | key absent (or no `kanban:` at all) | any profile |
//! | `null`, `""`, `[]`, a list of blanks | none |
//! | a list of names | those names (trimmed, lower case) |
//! | anything else, or the file unreadable or not YAML | none, and the source says why |
//!
//! Only that one key is read: the Hermes config also holds provider keys, so nothing else of it
//! is kept, and a parse error is reported by position only, never with the parser's excerpt.

use std::collections::BTreeSet;
use std::path::Path;

use serde_yaml_ng::Value;

/// Who may be dispatched on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dispatchable {
    /// No allowlist: any profile.
    Any,
    /// Only these profiles (lower case). Empty: none at all.
    Only(BTreeSet<String>),
}

impl Dispatchable {
    pub fn allows(&self, assignee: &str) -> bool {
        match self {
            Dispatchable::Any => true,
            Dispatchable::Only(names) => names.contains(&assignee.trim().to_lowercase()),
        }
    }
}

/// The boundary as read for one pass: who is dispatchable, and why the config could not be
/// trusted when it could not (then nobody is, fail closed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostBoundary {
    pub dispatchable: Dispatchable,
    pub warning: Option<String>,
}

impl HostBoundary {
    /// The boundary is not checked for this board (no `dispatch_config`).
    pub fn unchecked() -> Self {
        HostBoundary {
            dispatchable: Dispatchable::Any,
            warning: None,
        }
    }

    fn closed(warning: String) -> Self {
        HostBoundary {
            dispatchable: Dispatchable::Only(BTreeSet::new()),
            warning: Some(warning),
        }
    }

    /// The condition a card gets when its assignee cannot be claimed here; `None` when it can.
    pub fn condition(&self, assignee: &str) -> Option<String> {
        (!self.dispatchable.allows(assignee)).then(|| {
            format!(
                "assignee {} cannot be claimed on this host (kanban.dispatch_profiles)",
                assignee.trim().to_lowercase()
            )
        })
    }
}

/// Reads the Hermes config at `path` (blocking; small file).
pub fn load(path: &Path) -> HostBoundary {
    match std::fs::read_to_string(path) {
        Ok(text) => match parse(&text) {
            Ok(dispatchable) => HostBoundary {
                dispatchable,
                warning: None,
            },
            Err(why) => HostBoundary::closed(format!(
                "dispatch config {}: {why}; no profile is taken as dispatchable here (fail closed)",
                path.display()
            )),
        },
        Err(e) => HostBoundary::closed(format!(
            "dispatch config {} is unreadable ({}); no profile is taken as dispatchable here (fail closed)",
            path.display(),
            io_words(&e)
        )),
    }
}

/// `kanban.dispatch_profiles` from the text of a Hermes config.
pub fn parse(text: &str) -> Result<Dispatchable, String> {
    let doc: Value = serde_yaml_ng::from_str(text).map_err(|e| match e.location() {
        Some(at) => format!(
            "not valid YAML (line {}, column {})",
            at.line(),
            at.column()
        ),
        None => "not valid YAML".to_string(),
    })?;
    let kanban = match &doc {
        Value::Null => return Ok(Dispatchable::Any),
        Value::Mapping(top) => match top.get("kanban") {
            None | Some(Value::Null) => return Ok(Dispatchable::Any),
            Some(Value::Mapping(k)) => k,
            Some(_) => return Err("`kanban` is not a mapping".to_string()),
        },
        _ => return Err("the document is not a mapping".to_string()),
    };
    let names = match kanban.get("dispatch_profiles") {
        None => return Ok(Dispatchable::Any),
        Some(Value::Null) => BTreeSet::new(),
        Some(Value::String(s)) if s.trim().is_empty() => BTreeSet::new(),
        Some(Value::Sequence(items)) => {
            let mut names = BTreeSet::new();
            for item in items {
                match item {
                    Value::String(s) => {
                        let name = s.trim().to_lowercase();
                        if !name.is_empty() {
                            names.insert(name);
                        }
                    }
                    Value::Null => {}
                    _ => {
                        return Err(
                            "`kanban.dispatch_profiles` holds an entry that is not a profile name"
                                .to_string(),
                        );
                    }
                }
            }
            names
        }
        Some(_) => {
            return Err("`kanban.dispatch_profiles` is not a list of profile names".to_string());
        }
    };
    Ok(Dispatchable::Only(names))
}

fn io_words(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only(names: &[&str]) -> Dispatchable {
        Dispatchable::Only(names.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn an_absent_key_lets_any_profile_be_dispatched() {
        for text in [
            "",
            "model: x\n",
            "kanban:\n",
            "kanban:\n  review_dispatch: true\n",
        ] {
            assert_eq!(parse(text), Ok(Dispatchable::Any), "{text:?}");
        }
    }

    #[test]
    fn a_present_but_empty_key_lets_no_profile_be_dispatched() {
        for text in [
            "kanban:\n  dispatch_profiles:\n",
            "kanban:\n  dispatch_profiles: null\n",
            "kanban:\n  dispatch_profiles: []\n",
            "kanban:\n  dispatch_profiles: ''\n",
            "kanban:\n  dispatch_profiles: ['  ', ~]\n",
        ] {
            let d = parse(text).unwrap();
            assert_eq!(d, only(&[]), "{text:?}");
            assert!(!d.allows("min"));
        }
    }

    #[test]
    fn a_list_allows_exactly_its_profiles_in_lower_case() {
        let d = parse("kanban:\n  dispatch_profiles: [echo, Min, ' mira ', nova, sol]\n").unwrap();
        assert_eq!(d, only(&["echo", "min", "mira", "nova", "sol"]));
        assert!(d.allows("min") && d.allows("MIN") && d.allows("mira"));
        assert!(!d.allows("tam"));
    }

    #[test]
    fn malformed_configs_fail_closed_without_quoting_the_file() {
        for text in [
            "kanban: [1, 2]\n",
            "kanban:\n  dispatch_profiles: echo\n",
            "kanban:\n  dispatch_profiles: {a: 1}\n",
            "kanban:\n  dispatch_profiles: [echo, 3]\n",
            "- a\n- b\n",
            "kanban:\n  dispatch_profiles: [echo\napi_key: sk-ant-api03-PLANTEDabcdefghijklmnop\n",
        ] {
            let err = parse(text).unwrap_err();
            assert!(!err.contains("PLANTED") && !err.contains("echo"), "{err}");
        }
    }

    #[test]
    fn an_unreadable_or_malformed_file_closes_the_boundary_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("config.yaml");
        let b = load(&missing);
        assert_eq!(b.dispatchable, only(&[]));
        let warning = b.warning.unwrap();
        assert!(
            warning.contains("config.yaml") && warning.contains("fail closed"),
            "{warning}"
        );
        assert_eq!(
            HostBoundary::closed(String::new())
                .condition("Min")
                .as_deref(),
            Some("assignee min cannot be claimed on this host (kanban.dispatch_profiles)")
        );

        std::fs::write(&missing, "kanban: {dispatch_profiles: [min]}\n").unwrap();
        let b = load(&missing);
        assert_eq!(b.warning, None);
        assert_eq!(b.condition("min"), None);
        assert!(b.condition("tam").is_some());
        assert_eq!(HostBoundary::unchecked().condition("tam"), None);
    }
}
