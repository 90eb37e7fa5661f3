//! `[intake]`: the A2A server agents report to (`crate::intake`). Off unless `listen` is set;
//! each limit has a named default.

use std::net::SocketAddr;
use std::time::Duration;

use super::TokenSource;
use super::defaults;
use super::table::Table;
use super::validator::Validator;

#[derive(Debug, Clone)]
pub struct IntakeConfig {
    /// Where the intake listens (loopback: agents reach it over the tunnels, not via nginx);
    /// `None` leaves it off.
    pub listen: Option<SocketAddr>,
    /// A request body larger than this is refused (413) before it is read.
    pub max_body_bytes: usize,
    /// Reports (SendMessage, CancelTask) per agent per minute (a token bucket that holds this
    /// many); past it, 429.
    pub rate_per_minute: usize,
    /// Reads and every other request per caller per minute, a bucket of its own, so that a
    /// busy reader on an agent's token cannot starve that agent's reports.
    pub read_rate_per_minute: usize,
    /// The operator's token (`operator_token_env` / `operator_token_file`): it reads every
    /// agent's tasks and reports nothing. Never the token itself.
    pub operator_token: Option<TokenSource>,
    /// A body not received within this is cut (408): a slow sender holds nothing for long.
    pub body_timeout: Duration,
    /// Headers not received within this: the connection is closed.
    pub header_timeout: Duration,
    /// Connections whose token is not read yet; past it, the one idle the longest is closed.
    pub max_unauthenticated_connections: usize,
    /// Connections one token holds on each face (A2A, MCP); past it, its idlest is closed, or
    /// with all of them in a request the newcomer's request is refused (429).
    pub max_connections_per_token: usize,
    /// Open connections in all; past it, the idlest is closed, or a newcomer at once.
    pub max_connections: usize,
}

impl Default for IntakeConfig {
    fn default() -> Self {
        IntakeConfig {
            listen: None,
            max_body_bytes: defaults::INTAKE_MAX_BODY_BYTES,
            rate_per_minute: defaults::INTAKE_RATE_PER_MINUTE,
            read_rate_per_minute: defaults::INTAKE_READ_RATE_PER_MINUTE,
            operator_token: None,
            body_timeout: defaults::INTAKE_BODY_TIMEOUT,
            header_timeout: defaults::INTAKE_HEADER_TIMEOUT,
            max_unauthenticated_connections: defaults::INTAKE_MAX_UNAUTHENTICATED_CONNECTIONS,
            max_connections_per_token: defaults::INTAKE_MAX_CONNECTIONS_PER_TOKEN,
            max_connections: defaults::INTAKE_MAX_CONNECTIONS,
        }
    }
}

/// Reads `[intake]`; every key is optional. Reports become work-queue rows, so a listening
/// intake needs `[work_queue]` (`has_queue`).
pub(super) fn read(v: &mut Validator, mut t: Table, has_queue: bool) -> IntakeConfig {
    let listen = t.string(v, "listen");
    // Issue 32: an address is no identity (every tunnelled agent is 127.0.0.1); the old bound
    // is named with its replacement rather than left as an unknown key.
    if let Some(old) = t.integer(v, "max_connections_per_peer", "a number") {
        v.error(
            &old,
            t.field("max_connections_per_peer"),
            "no longer read: every agent behind an SSH tunnel arrives from 127.0.0.1, so \
             connections are shared out by token: use max_connections_per_token (and \
             max_unauthenticated_connections), or remove the line",
        );
    }
    let operator_token_env = t.string(v, "operator_token_env");
    let operator_token_file = t.string(v, "operator_token_file");
    let operator_token = TokenSource::choose(
        v,
        |k| t.field(k),
        "operator_token",
        &operator_token_env,
        &operator_token_file,
    )
    .unwrap_or(None);
    let config = IntakeConfig {
        listen: None,
        max_body_bytes: t.positive(v, "max_body_bytes", defaults::INTAKE_MAX_BODY_BYTES),
        rate_per_minute: t.positive(v, "rate_per_minute", defaults::INTAKE_RATE_PER_MINUTE),
        read_rate_per_minute: t.positive(
            v,
            "read_rate_per_minute",
            defaults::INTAKE_READ_RATE_PER_MINUTE,
        ),
        operator_token,
        body_timeout: t.duration(v, "body_timeout", defaults::INTAKE_BODY_TIMEOUT),
        header_timeout: t.duration(v, "header_timeout", defaults::INTAKE_HEADER_TIMEOUT),
        max_unauthenticated_connections: t.positive(
            v,
            "max_unauthenticated_connections",
            defaults::INTAKE_MAX_UNAUTHENTICATED_CONNECTIONS,
        ),
        max_connections_per_token: t.positive(
            v,
            "max_connections_per_token",
            defaults::INTAKE_MAX_CONNECTIONS_PER_TOKEN,
        ),
        max_connections: t.positive(v, "max_connections", defaults::INTAKE_MAX_CONNECTIONS),
    };
    t.finish(v);
    let listen = listen.and_then(|l| {
        if !has_queue {
            v.error(
                &l,
                t.field("listen"),
                "the intake writes reports into the work queue: add [work_queue] db = \"...\"",
            );
            return None;
        }
        l.get_ref().parse().ok().or_else(|| {
            v.error(
                &l,
                t.field("listen"),
                "expected an address such as \"127.0.0.1:8470\"",
            );
            None
        })
    });
    IntakeConfig { listen, ..config }
}

#[cfg(test)]
mod tests {
    use crate::config::fixtures::parse;
    use crate::config::{TokenSource, defaults};

    /// Issue 25: the hub agent is marked by its role; any other role is a mistake named.
    #[test]
    fn the_hub_agent_is_marked_by_its_role() {
        let entry = |role: &str| {
            format!(
                "[[agents]]\nname = \"min\"\nendpoint = \"http://127.0.0.1:1/\"\n{role}\n\
                 [[agents]]\nname = \"sol\"\nendpoint = \"http://127.0.0.1:2/\"\n"
            )
        };
        let c = parse(&entry("role = \"hub\"")).unwrap();
        assert!(c.agents[0].hub);
        assert!(!c.agents[1].hub, "no role: an agent that reports");
        let e = parse(&entry("role = \"boss\"")).unwrap_err().to_string();
        assert!(e.contains("agents[0].role: expected \"hub\""), "{e}");
    }

    #[test]
    fn the_intake_is_off_unless_it_listens_and_has_its_defaults() {
        let c = parse("").unwrap();
        assert_eq!(c.intake.listen, None);
        assert_eq!(c.intake.max_body_bytes, defaults::INTAKE_MAX_BODY_BYTES);
        let c = parse(
            "[intake]\nlisten = \"127.0.0.1:8470\"\nmax_body_bytes = 1000\nrate_per_minute = 5\n\
             body_timeout = \"3s\"\n[work_queue]\ndb = \"tasks.db\"\n\
             [[agents]]\nname = \"sol\"\nendpoint = \"http://127.0.0.1:1/\"\nreport_token_env = \"SOL_REPORT\"\n",
        )
        .unwrap();
        assert_eq!(c.intake.listen, Some("127.0.0.1:8470".parse().unwrap()));
        assert_eq!(c.intake.max_body_bytes, 1000);
        assert_eq!(c.intake.rate_per_minute, 5);
        assert_eq!(c.intake.body_timeout, std::time::Duration::from_secs(3));
        assert_eq!(
            c.agents[0].report_token,
            Some(TokenSource::Env("SOL_REPORT".into()))
        );
        assert_eq!(
            c.intake.read_rate_per_minute,
            defaults::INTAKE_READ_RATE_PER_MINUTE
        );
        assert_eq!(c.intake.operator_token, None);
        let c =
            parse("[intake]\nread_rate_per_minute = 7\noperator_token_env = \"FLEET_OPERATOR\"\n")
                .unwrap();
        assert_eq!(c.intake.read_rate_per_minute, 7);
        assert_eq!(
            c.intake.operator_token,
            Some(TokenSource::Env("FLEET_OPERATOR".into()))
        );
    }

    #[test]
    fn intake_mistakes_name_the_field() {
        let errs = |extra: &str| -> Vec<String> {
            parse(extra)
                .unwrap_err()
                .0
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        let e = errs("[intake]\nlisten = \"127.0.0.1:8470\"\n");
        assert!(
            e[0].contains("intake.listen") && e[0].contains("[work_queue]"),
            "{e:?}"
        );
        let e = errs(
            "[work_queue]\ndb = \"t.db\"\n[intake]\nlisten = \"nowhere\"\nrate_per_minute = 0\n",
        );
        assert_eq!(e.len(), 2, "{e:?}");
        let e = errs(
            "[[agents]]\nname = \"a\"\nendpoint = \"http://127.0.0.1:1/\"\n\
             report_token_env = \"X\"\nreport_token_file = \"y\"\n",
        );
        assert!(
            e[0].contains("report_token_env or report_token_file"),
            "{e:?}"
        );
        let e = errs(
            "[intake]\noperator_token_env = \"X\"\noperator_token_file = \"y\"\n\
             read_rate_per_minute = 0\n",
        );
        assert!(
            e.iter().any(|e| e.contains("intake.operator_token_env")
                && e.contains("operator_token_env or operator_token_file")),
            "{e:?}"
        );
        assert!(
            e.iter().any(|e| e.contains("intake.read_rate_per_minute")),
            "{e:?}"
        );
    }

    /// Heartbeat reports are read from the work queue: `report_every` without one is a
    /// mistake `check` names, not an agent red at every pass.
    #[test]
    fn report_every_needs_the_work_queue() {
        let agent = "[[agents]]\nname = \"a\"\nendpoint = \"http://127.0.0.1:1/\"\n\
                     report_every = \"5m\"\n";
        let e: Vec<String> = parse(agent)
            .unwrap_err()
            .0
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            e.len() == 1 && e[0].contains("report_every") && e[0].contains("[work_queue]"),
            "{e:?}"
        );
        let c = parse(&format!("[work_queue]\ndb = \"t.db\"\n{agent}")).unwrap();
        assert_eq!(
            c.agents[0].report_every,
            Some(std::time::Duration::from_secs(300))
        );
    }
}
