//! Agents whose last exchange nothing watches: no `audit_log` (here or on an `audit_host`), and
//! no reports to the intake that would stand for it. A choice, not a mistake: an ok-level note
//! saying what it costs and what gives it back, never a warning (the doctor would exit 1 for
//! good on a fleet that chose so).

use super::Finding;
use crate::config::Config;

pub fn notes(config: &Config) -> Vec<Finding> {
    config
        .agents
        .iter()
        .filter(|a| a.audit_log.is_none())
        .filter(|a| a.report_token.is_none() || config.work_queue.is_none())
        .map(|a| {
            Finding::ok(
                "audit",
                format!("agent {}", a.name),
                "no audit_log: its last exchange is not watched (an agent that answers the \
                 heartbeat but has stopped working looks fine); an audit_log (or audit_host for \
                 one on an ssh host), or its reports to the intake (report_token_file and \
                 [work_queue]), give it back",
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::{Level, loaded};

    #[test]
    fn only_an_agent_with_no_source_of_its_last_exchange_is_noted_and_never_above_ok() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("min.jsonl"), "").unwrap();
        std::fs::write(dir.path().join("kai.token"), "t").unwrap();
        let agents = "[[agents]]\nname = \"min\"\nendpoint = \"http://127.0.0.1:9\"\n\
             dialect = \"v1\"\naudit_log = \"min.jsonl\"\n\n\
             [[agents]]\nname = \"kai\"\nendpoint = \"http://127.0.0.1:9\"\ndialect = \"v1\"\n\
             report_token_file = \"kai.token\"\n";
        let (config, _) = loaded(dir.path(), agents);
        // kai reports, but without a work queue nothing keeps its reports.
        let found = notes(&config);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].subject, "agent kai");
        assert_eq!(found[0].level, Level::Ok);
        assert!(found[0].detail.contains("not watched"), "{found:?}");

        let queue = format!(
            "[work_queue]\ndb = \"{}\"\n",
            dir.path().join("q.db").display()
        );
        let (config, _) = loaded(dir.path(), &format!("{queue}{agents}"));
        assert!(notes(&config).is_empty(), "{:?}", notes(&config));
    }
}
