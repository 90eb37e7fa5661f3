//! The rules fleetdash ships, and a rules file over them.
//!
//! `config/rules.yaml` is compiled in: without `rules` in the config, fleetdash judges by it,
//! each value with its citation. A rules file gives the groups it changes, each whole (every
//! value and its own `source`): a group left out is the built-in one, and a group given is
//! never mixed with the built-in values, so a threshold never has two sources.

use std::path::{Path, PathBuf};

use super::{GROUPS, Rules};
use crate::config::ConfigErrors;

/// The built-in rules file, as shipped (`fleetdash rules show` prints it).
pub const BUILTIN_RULES: &str = include_str!("../../../../config/rules.yaml");

/// What an error of the built-in rules would name (a test keeps there from being any).
pub(super) const BUILTIN_NAME: &str = "built-in rules";

/// Where a set of rules came from: the rules file given, and which groups it gave.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RulesOrigin {
    /// `rules = "FILE"` of the config; `None`: the built-in rules alone.
    pub file: Option<PathBuf>,
    /// The groups the file gives, in the built-in file's order; every other one is built in.
    pub from_file: Vec<String>,
    /// The groups that are built in.
    pub built_in: Vec<String>,
}

impl RulesOrigin {
    pub(super) fn built_in() -> RulesOrigin {
        RulesOrigin {
            file: None,
            from_file: Vec::new(),
            built_in: GROUPS.iter().map(|(g, _)| g.to_string()).collect(),
        }
    }

    pub(super) fn file(file: &Path, from_file: Vec<String>) -> RulesOrigin {
        RulesOrigin {
            file: Some(file.to_path_buf()),
            built_in: GROUPS
                .iter()
                .map(|(g, _)| g.to_string())
                .filter(|g| !from_file.contains(g))
                .collect(),
            from_file,
        }
    }

    /// Whether `group` came from the file.
    pub fn gives(&self, group: &str) -> bool {
        self.from_file.iter().any(|g| g == group)
    }

    /// The rules in a few words, for `check` and the log: "built in", "rules.yaml (stuck,
    /// alerts), built in for the rest", "rules.yaml (every group)".
    pub fn words(&self) -> String {
        let Some(file) = &self.file else {
            return "built in".into();
        };
        let file = file.display();
        match (self.from_file.is_empty(), self.built_in.is_empty()) {
            (_, true) => format!("{file} (every group)"),
            (true, false) => format!("{file} (no group: all built in)"),
            (false, false) => format!(
                "{file} ({}), built in for the rest",
                self.from_file.join(", ")
            ),
        }
    }

    /// Where `group`'s values come from, for a message: the file, or "built-in".
    pub fn of_group(&self, group: &str) -> String {
        match &self.file {
            Some(file) if self.gives(group) => file.display().to_string(),
            _ => "built-in".into(),
        }
    }

    /// [`RulesOrigin::of_group`], the file by its name alone (for a row's reason).
    pub fn short_of_group(&self, group: &str) -> String {
        match &self.file {
            Some(file) if self.gives(group) => file.file_name().map_or_else(
                || file.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            _ => "built-in".into(),
        }
    }

    /// A note for a mistake between two groups, `field_group`'s value against `other`'s, when
    /// one is built in: what to give in the file.
    pub(super) fn pairing(&self, field_group: &str, other: &str) -> String {
        match (
            self.file.is_some(),
            self.gives(field_group),
            self.gives(other),
        ) {
            (true, false, true) => format!(
                " (`{field_group}` is built in: give the whole `{field_group}` group in this \
                 file with a value that fits)"
            ),
            (true, true, false) => format!(" (`{other}` is built in)"),
            _ => String::new(),
        }
    }
}

/// The built-in rules file's groups, by name.
pub(super) fn groups() -> serde_yaml_ng::Mapping {
    // The built-in file is tested to parse, so this only guards against a broken build.
    serde_yaml_ng::from_str(BUILTIN_RULES).unwrap_or_default()
}

impl Rules {
    /// The built-in rules alone.
    pub fn built_in() -> Result<Rules, ConfigErrors> {
        Rules::read(None, "").into_result()
    }

    /// The built-in rules alone, as read with a config (no file, nothing of it to check).
    pub(in crate::config) fn read_built_in() -> super::RulesRead {
        Rules::read(None, "")
    }
}

/// The rules as a file to start from: the built-in file as shipped, with its comments; with a
/// rules file `given` (its path and text), each group it gives in place of the built-in one
/// (after the built-in comments that explain it), so the whole is still a valid rules file
/// that reads as the effective rules. The file is checked first: its mistakes are the answer.
pub fn effective_text(given: Option<(&Path, &str)>) -> Result<String, ConfigErrors> {
    let Some((path, text)) = given else {
        return Ok(BUILTIN_RULES.to_string());
    };
    let rules = Rules::parse(path, text)?;
    // Checked by parse: a mapping whose groups are the known ones.
    let top: serde_yaml_ng::Mapping = serde_yaml_ng::from_str::<Option<_>>(text)
        .ok()
        .flatten()
        .unwrap_or_default();
    let mut out = String::new();
    let mut lines = BUILTIN_RULES.lines().peekable();
    while let Some(line) = lines.next() {
        let group = line.strip_suffix(':').filter(|g| rules.origin.gives(g));
        let Some(group) = group else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        // The built-in group's own lines give way to the file's.
        while lines
            .peek()
            .is_some_and(|l| l.starts_with(' ') || l.starts_with('\t'))
        {
            lines.next();
        }
        let mut one = serde_yaml_ng::Mapping::new();
        if let Some(value) = top.get(group) {
            one.insert(group.into(), value.clone());
        }
        out.push_str(&format!(
            "# From {} (replaces the built-in group whole).\n",
            path.display()
        ));
        let said = serde_yaml_ng::to_string(&one)
            .map_err(|e| crate::config::error::one_error(path, None, group, e.to_string()))?;
        out.push_str(&said);
    }
    Ok(out)
}
