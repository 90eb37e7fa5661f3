//! What an agent's card says against its entry: the `dialect` it is configured with (a card
//! saying only protocolVersion 0.3.0 for `dialect = "v1"` makes every heartbeat fail with
//! `-32601 method not found`), and its skills (a card with none is red on the page, and the hub
//! cannot route work to it). Pure: the card is fetched by [`super::reach`].

use fleetdash_model::Asc;
use serde_json::Value;

use super::Finding;
use crate::a2a;
use crate::config::{AgentConfig, Dialect};

/// The `dialect` and `skills` findings of `agent` from its card's JSON.
pub fn judge(agent: &AgentConfig, card: &Value) -> Vec<Finding> {
    let subject = format!("agent {}", agent.name);
    let facts = match a2a::card_facts(card) {
        Ok(facts) => facts,
        Err(why) => {
            return vec![Finding::fail(
                "skills",
                subject,
                format!("its card cannot be read: {why}"),
                "serve an A2A agent card (v1.0 or v0.3) at /.well-known/agent-card.json",
                Asc::INTEGRITY_CHECK_FAILED,
            )];
        }
    };
    vec![dialect(agent, &subject, &facts), skills(&subject, &facts)]
}

fn dialect(agent: &AgentConfig, subject: &str, facts: &a2a::CardFacts) -> Finding {
    let said = facts.versions.join(", ");
    let configured = agent.dialect.as_str();
    if let Some(set) = a2a::contradicting(agent.dialect, &facts.versions) {
        return Finding::fail(
            "dialect",
            subject,
            format!(
                "dialect = \"{configured}\", but its card says protocolVersion {said}: every \
                 heartbeat would be refused as another dialect's (JSON-RPC -32601 method not \
                 found, or -32602)"
            ),
            format!(
                "set dialect = {set} or \"auto\" in its [[agents]] entry (auto tries v1, then \
                 v0.3, and remembers what answered)"
            ),
            Asc::UNSUPPORTED_CAPABILITY,
        );
    }
    let detail = match (agent.dialect, said.is_empty()) {
        (_, true) => format!("dialect = \"{configured}\"; its card names no protocol version"),
        (Dialect::Auto, false) => format!("auto; its card says protocolVersion {said}"),
        (_, false) => format!("\"{configured}\" agrees with its card (protocolVersion {said})"),
    };
    Finding::ok("dialect", subject, detail)
}

fn skills(subject: &str, facts: &a2a::CardFacts) -> Finding {
    match facts.skills_count {
        0 => Finding::warn(
            "skills",
            subject,
            "its card lists no skills: the hub cannot route work to it, and the page shows the \
             agent red (an empty card is a failure, never \"no data\")",
            "publish its skills on the card (AgentCard.skills: id, name, description, tags)",
            Asc::NOT_FOUND,
        ),
        n => Finding::ok("skills", subject, format!("its card lists {n} skill(s)")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::doctor::{Level, loaded};

    fn agent(dialect: &str) -> AgentConfig {
        let dir = tempfile::tempdir().unwrap();
        let body = format!(
            "[[agents]]\nname = \"kai\"\nendpoint = \"http://127.0.0.1:9\"\ndialect = \"{dialect}\"\n"
        );
        loaded(dir.path(), &body).0.agents.remove(0)
    }

    #[test]
    fn a_dialect_the_card_contradicts_fails_with_the_one_to_set() {
        let v03 = json!({"protocolVersion": "0.3.0", "skills": [{"id": "a"}]});
        let found = judge(&agent("v1"), &v03);
        assert_eq!((found[0].check, found[0].level), ("dialect", Level::Fail));
        assert!(
            found[0].detail.contains("protocolVersion 0.3.0")
                && found[0].detail.contains("-32601 method not found"),
            "{found:?}"
        );
        let fix = found[0].fix.as_deref().unwrap();
        assert!(
            fix.contains("dialect = \"v0.3\"") && fix.contains("\"auto\""),
            "{fix}"
        );
        assert_eq!((found[1].check, found[1].level), ("skills", Level::Ok));
        for dialect in ["v0.3", "auto"] {
            assert_eq!(
                judge(&agent(dialect), &v03)[0].level,
                Level::Ok,
                "{dialect}"
            );
        }
        let v1 = json!({"supportedInterfaces": [{"protocolVersion": "1.0"}], "skills": [{}]});
        assert_eq!(judge(&agent("v0.3-content"), &v1)[0].level, Level::Fail);
        assert_eq!(judge(&agent("v1"), &v1)[0].level, Level::Ok);
    }

    #[test]
    fn a_card_with_no_skills_warns_saying_what_it_costs() {
        // A v1.0 card in protobuf JSON leaves an empty list out.
        let empty = json!({"supportedInterfaces": [{"protocolVersion": "1.0"}]});
        let found = judge(&agent("v1"), &empty);
        assert_eq!((found[1].check, found[1].level), ("skills", Level::Warn));
        assert!(found[1].detail.contains("cannot route"), "{found:?}");
        assert!(found[1].fix.as_deref().unwrap().contains("skills"));
    }
}
