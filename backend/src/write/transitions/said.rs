//! The log's share of the transitions: each band change written to status.json is said once in
//! the log too, with the element's ASC code and name where it has one (the OpenTelemetry
//! attribute names of seed 000: `agent.status.code`, `agent.status.name`), so a log shipper can
//! count probe failures by class. A failure is said when it starts and when it ends, not at
//! every pass: a dead agent polled every 30 s is one line, not 2,880 a day.

use fleetdash_model::{Asc, Band, Probe, Snapshot, Transition};

/// Logs `changes`, judged on `snap` (the gated snapshot they were found in).
pub fn log(changes: &[Transition], snap: &Snapshot) {
    for change in changes {
        let from = change.from.map_or("new", Band::class);
        let to = change.to.class();
        let reason = change.reason.as_deref().unwrap_or("");
        match (status_of(snap, &change.key), change.to) {
            (Some(asc), Band::Green) => tracing::info!(
                element = %change.key, kind = %change.kind, from, to,
                agent.status.code = asc.code, agent.status.name = %asc.name,
                "{} recovered", change.name
            ),
            (Some(asc), _) => tracing::warn!(
                element = %change.key, kind = %change.kind, from, to,
                agent.status.code = asc.code, agent.status.name = %asc.name,
                "{} is {to}: {reason}", change.name
            ),
            (None, Band::Green) => tracing::info!(
                element = %change.key, kind = %change.kind, from, to,
                "{} recovered", change.name
            ),
            (None, _) => tracing::warn!(
                element = %change.key, kind = %change.kind, from, to,
                "{} is {to}: {reason}", change.name
            ),
        }
    }
}

/// The ASC status the snapshot gives the element `key`, for the kinds whose rows carry one.
fn status_of<'a>(snap: &'a Snapshot, key: &str) -> Option<&'a Asc> {
    if key == fleetdash_model::alerts::key::BACKUPS {
        return values(&snap.backups).map(|b| &b.status);
    }
    let (kind, rest) = key.split_once(':')?;
    match kind {
        "agent" => values(&snap.agents)?
            .iter()
            .find(|a| a.name == rest)
            .map(|a| &a.status),
        "host" => values(&snap.systems)?
            .iter()
            .find(|h| h.host == rest)
            .map(|h| &h.status),
        "task" => {
            let (agent, id) = rest.split_once('/')?;
            values(&snap.tasks.live)?
                .iter()
                .find(|t| t.agent == agent && t.id == id)
                .map(|t| &t.status)
        }
        "queue" => values(&snap.tasks.queue)?
            .iter()
            .find(|t| t.id == rest)
            .map(|t| &t.status),
        "board" => values(&snap.tasks.board)?
            .sources
            .iter()
            .find(|s| s.name == rest)
            .map(|s| &s.status),
        _ => None,
    }
}

fn values<T>(probe: &Probe<T>) -> Option<&T> {
    match probe {
        Probe::Value(v) => Some(v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::fleet_rules;
    use crate::logging::logs_of;
    use crate::write::history::tests::agent;
    use crate::write::transitions::tests::t0;

    /// A down agent is said with its ASC class, its recovery too; an element without a status
    /// of its own (a vault) is said without one.
    #[test]
    fn a_change_is_said_once_with_the_elements_asc_code() {
        let now = t0();
        let mut snap = Snapshot::empty(now, fleet_rules());
        let mut down = agent("min", false, now);
        down.status = Asc::DEPENDENCY_UNAVAILABLE;
        snap.agents = Probe::Value(vec![down]);
        let change = |key: &str, from: Band, to: Band| Transition {
            key: key.into(),
            kind: key.split(':').next().unwrap().into(),
            name: key.into(),
            from: Some(from),
            to,
            at: now,
            reason: (to != Band::Green).then(|| "connection refused".into()),
        };
        let ((), logs) = logs_of(|| {
            log(
                &[
                    change("agent:min", Band::Green, Band::Red),
                    change("host:lab/vault", Band::Green, Band::Red),
                ],
                &snap,
            )
        });
        let lines: Vec<&str> = logs.lines().collect();
        assert_eq!(lines.len(), 2, "{logs}");
        assert!(lines[0].contains("WARN"), "{logs}");
        assert!(lines[0].contains("agent.status.code=5003"), "{logs}");
        assert!(
            lines[0].contains("agent.status.name=DEPENDENCY_UNAVAILABLE"),
            "{logs}"
        );
        assert!(lines[0].contains("connection refused"), "{logs}");
        assert!(!lines[1].contains("agent.status"), "{logs}");
        let ((), logs) = logs_of(|| log(&[change("agent:min", Band::Red, Band::Green)], &snap));
        assert!(
            logs.contains("INFO") && logs.contains("min recovered"),
            "{logs}"
        );
    }
}
