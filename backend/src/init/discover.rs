//! What `fleetdash init` learns without asking: which endpoints answer, and from each agent's
//! card its name, its dialect and its skills. Only the card is read (a GET, as the collector's
//! liveness probe does); a heartbeat is sent only when the card does not say its protocol.

use std::time::Duration;

use futures::StreamExt;

use crate::a2a::{self, Wire};
use crate::collect::agents::card::{CARD_PATHS, join};
use crate::collect::agents::heartbeat;
use crate::net::ProbeClient;

/// A range wider than this is refused: a typo (`18301-83013`) would probe for minutes.
pub const MAX_RANGE_PORTS: u32 = 1024;
/// The deadline of each request at init: the fleet is on loopback tunnels, and a silent port
/// of a range should not hold the operator long.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// Endpoints probed at once.
const CONCURRENCY: usize = 32;
/// The largest card read.
const MAX_CARD_BYTES: usize = 256 * 1024;
/// The longest agent name taken from a card.
const NAME_MAX: usize = 48;

/// One endpoint to look at: named by the operator, or one port of a range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub endpoint: url::Url,
    /// Named explicitly: written as an agent even when nothing answers there.
    pub explicit: bool,
}

/// `--agents SPEC`: a URL, `HOST:PORT`, or a range `HOST:FIRST-LAST`.
pub fn parse_spec(spec: &str) -> Result<Vec<Target>, String> {
    let spec = spec.trim();
    if spec.contains("://") {
        let url = url::Url::parse(spec).map_err(|e| format!("{spec:?} is not a URL ({e})"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(format!(
                "{spec:?}: expected an http:// or https:// URL with a host"
            ));
        }
        return Ok(vec![Target {
            endpoint: url,
            explicit: true,
        }]);
    }
    let expected = "expected a URL, HOST:PORT, or a range HOST:FIRST-LAST such as \
                    127.0.0.1:18301-18313";
    let (host, ports) = spec
        .rsplit_once(':')
        .filter(|(h, _)| !h.is_empty())
        .ok_or_else(|| format!("{spec:?}: {expected}"))?;
    let port = |p: &str| {
        p.trim()
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("{spec:?}: {p:?} is not a port; {expected}"))
    };
    let (first, last, explicit) = match ports.split_once('-') {
        Some((a, b)) => (port(a)?, port(b)?, false),
        None => {
            let p = port(ports)?;
            (p, p, true)
        }
    };
    if first > last {
        return Err(format!(
            "{spec:?}: the range runs backwards ({first} > {last})"
        ));
    }
    if u32::from(last - first) >= MAX_RANGE_PORTS {
        return Err(format!(
            "{spec:?}: {} ports; a range holds at most {MAX_RANGE_PORTS}",
            u32::from(last - first) + 1
        ));
    }
    (first..=last)
        .map(|p| {
            let url = url::Url::parse(&format!("http://{host}:{p}/"))
                .map_err(|e| format!("{spec:?}: {host:?} is not a host ({e})"))?;
            Ok(Target {
                endpoint: url,
                explicit,
            })
        })
        .collect()
}

/// What an agent's card says.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    /// The card's `name`, made into a config name; `None` when it gives none.
    pub name: Option<String>,
    /// The dialect the card shows, as `dialect = "auto"` resolves it; `None`: neither the card
    /// nor a heartbeat told.
    pub wire: Option<Wire>,
    pub skills: u32,
}

/// What an endpoint answered at init.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Card(Card),
    /// It answers HTTP but gives no readable agent card: why.
    NoCard(String),
    /// Nothing answers there: why.
    Silent(String),
}

#[derive(Debug, Clone)]
pub struct Found {
    pub target: Target,
    pub answer: Answer,
}

/// Every target's answer, in the order given.
pub async fn probe_all(targets: Vec<Target>) -> Vec<Found> {
    let client = ProbeClient::new(PROBE_TIMEOUT, MAX_CARD_BYTES);
    futures::stream::iter(targets)
        .map(|target| {
            let client = &client;
            async move {
                let answer = probe(client, &target.endpoint).await;
                Found { target, answer }
            }
        })
        .buffered(CONCURRENCY)
        .collect()
        .await
}

/// The card at `endpoint` (the same paths the collector reads), and its dialect.
async fn probe(client: &ProbeClient, endpoint: &url::Url) -> Answer {
    let mut last = String::new();
    for path in CARD_PATHS {
        let reply = match client.get(join(endpoint, path), None).await {
            Ok(reply) => reply,
            Err(failure) if failure.answered => return Answer::NoCard(failure.reason),
            Err(failure) => return Answer::Silent(failure.reason),
        };
        if let Some(denied) = reply.permission_failure() {
            return Answer::NoCard(format!("card: {}", denied.reason));
        }
        if !(200..300).contains(&reply.status) {
            last = format!("no agent card (HTTP {} at /{path})", reply.status);
            continue;
        }
        let card = match reply.json() {
            Ok(card) => card,
            Err(e) => return Answer::NoCard(format!("card: {}", e.reason)),
        };
        let facts = match a2a::card_facts(&card) {
            Ok(facts) => facts,
            Err(e) => return Answer::NoCard(format!("card: {e}")),
        };
        let mut wire = facts.protocol_version.as_deref().and_then(wire_of_version);
        if wire.is_none() {
            // The card does not say: what the heartbeat of `auto` would settle on.
            let attempts = Wire::attempts(crate::config::Dialect::Auto);
            wire = heartbeat::probe(client, endpoint, attempts, None)
                .await
                .ok()
                .map(|reply| reply.wire);
        }
        return Answer::Card(Card {
            name: a2a::card_name(&card).and_then(|n| config_name(&n)),
            wire,
            skills: facts.skills_count,
        });
    }
    Answer::NoCard(last)
}

/// The dialect of a card's protocol version: 1.x is v1, 0.3.x is v0.3.
pub fn wire_of_version(version: &str) -> Option<Wire> {
    let mut parts = version.trim().trim_start_matches('v').split('.');
    match (parts.next(), parts.next()) {
        (Some("1"), _) => Some(Wire::V1),
        (Some("0"), Some("3")) => Some(Wire::V03),
        _ => None,
    }
}

/// A name a config, a matcher (`agent=NAME`) and a file name can all hold: letters, digits,
/// '.', '_' and '-', the rest made '-'.
pub fn config_name(raw: &str) -> Option<String> {
    let mut out = String::new();
    for c in raw.trim().chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
            c
        } else {
            '-'
        };
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    let name: String = out
        .trim_matches(|c| c == '-' || c == '.')
        .chars()
        .take(NAME_MAX)
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The name of an agent whose card gave none: its host and port.
pub fn name_of_endpoint(endpoint: &url::Url) -> String {
    let host = endpoint.host_str().unwrap_or("agent");
    let raw = match endpoint.port_or_known_default() {
        Some(port) => format!("{host}-{port}"),
        None => host.to_string(),
    };
    config_name(&raw).unwrap_or_else(|| "agent".into())
}

/// `host:port` of an endpoint, as a tunnel's address and to tell endpoints apart.
pub fn address(endpoint: &url::Url) -> Option<String> {
    let host = endpoint.host_str()?;
    let port = endpoint.port_or_known_default()?;
    Some(format!("{host}:{port}"))
}

/// Whether an endpoint is on this machine's loopback: in this fleet, an SSH tunnel's end.
pub fn is_loopback(endpoint: &url::Url) -> bool {
    match endpoint.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// Whether what listens on loopback `port` is an SSH client's forward (`ssh -L`, autossh's
/// ssh): only then is the agent behind it reached through a tunnel. A local process serving
/// its own port is no tunnel, and one whose owner this user cannot see is not taken for one
/// (a tunnel that is not there would be blamed for the agent's every fall).
pub fn forwarded_by_ssh(port: u16) -> bool {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            inodes.extend(listening_inodes(&text, port));
        }
    }
    !inodes.is_empty()
        && owner_names(&inodes)
            .iter()
            .any(|c| c == "ssh" || c == "autossh")
}

/// The socket inodes in a `/proc/net/tcp` table listening (state 0A) on `port`.
fn listening_inodes(table: &str, port: u16) -> Vec<String> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields.get(1)?.rsplit(':').next()?;
            let listening = *fields.get(3)? == "0A";
            (listening && u16::from_str_radix(local_port, 16).ok()? == port)
                .then(|| fields.get(9).map(|i| i.to_string()))
                .flatten()
        })
        .collect()
}

/// The command names (`/proc/PID/comm`) of the processes holding any of these socket inodes.
fn owner_names(inodes: &[String]) -> Vec<String> {
    let sockets: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for pid in procs.flatten() {
        let Ok(fds) = std::fs::read_dir(pid.path().join("fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|target| sockets.iter().any(|s| target.as_os_str() == s.as_str()))
        });
        if holds && let Ok(comm) = std::fs::read_to_string(pid.path().join("comm")) {
            names.push(comm.trim().to_string());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A forward's listening socket is found by its port in the kernel's table; a connection
    /// on that port, or a listener on another, is not it.
    #[test]
    fn the_listener_of_a_port_is_found_in_the_kernels_table() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:4785 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 51234 1 0\n\
   1: 0100007F:4786 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 51235 1 0\n\
   2: 0100007F:4785 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 51236 1 0\n";
        assert_eq!(listening_inodes(table, 18309), ["51234"]);
        assert!(listening_inodes(table, 18300).is_empty());
    }

    /// This test's own listener is no SSH forward.
    #[test]
    fn a_port_this_process_listens_on_is_not_a_tunnel() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let inodes: Vec<String> = ["/proc/net/tcp"]
            .iter()
            .filter_map(|t| std::fs::read_to_string(t).ok())
            .flat_map(|text| listening_inodes(&text, port))
            .collect();
        assert_eq!(inodes.len(), 1, "the listener is in the table");
        assert!(!owner_names(&inodes).is_empty(), "its owner is found");
        assert!(!forwarded_by_ssh(port));
    }

    #[test]
    fn a_spec_is_a_url_a_host_port_or_a_range() {
        let one = parse_spec("http://10.0.0.2:9000/a2a/").unwrap();
        assert_eq!(one.len(), 1);
        assert!(one[0].explicit);
        assert_eq!(one[0].endpoint.as_str(), "http://10.0.0.2:9000/a2a/");
        let one = parse_spec("127.0.0.1:18301").unwrap();
        assert_eq!(
            (one[0].endpoint.as_str(), one[0].explicit),
            ("http://127.0.0.1:18301/", true)
        );
        let range = parse_spec("127.0.0.1:18301-18313").unwrap();
        assert_eq!(range.len(), 13);
        assert!(range.iter().all(|t| !t.explicit));
        assert_eq!(range[12].endpoint.as_str(), "http://127.0.0.1:18313/");
        for bad in [
            "18301",
            ":18301",
            "127.0.0.1:x",
            "127.0.0.1:0",
            "127.0.0.1:18313-18301",
            "127.0.0.1:1-5000",
            "ftp://h/",
        ] {
            let e = parse_spec(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
    }

    #[test]
    fn a_card_version_gives_the_dialect() {
        assert_eq!(wire_of_version("1.0"), Some(Wire::V1));
        assert_eq!(wire_of_version("1.0.0"), Some(Wire::V1));
        assert_eq!(wire_of_version("0.3.0"), Some(Wire::V03));
        assert_eq!(wire_of_version("0.3"), Some(Wire::V03));
        assert_eq!(wire_of_version("0.2.5"), None);
        assert_eq!(wire_of_version(""), None);
    }

    #[test]
    fn card_names_become_config_names() {
        assert_eq!(
            config_name("Research Bot (v2)").as_deref(),
            Some("Research-Bot-v2")
        );
        assert_eq!(config_name("min").as_deref(), Some("min"));
        assert_eq!(config_name("  ").as_deref(), None);
        assert_eq!(config_name("ü").as_deref(), None);
        let e = url::Url::parse("http://127.0.0.1:18301/").unwrap();
        assert_eq!(name_of_endpoint(&e), "127.0.0.1-18301");
        assert_eq!(address(&e).as_deref(), Some("127.0.0.1:18301"));
        assert!(is_loopback(&e));
        assert!(!is_loopback(
            &url::Url::parse("http://10.1.1.1:80/").unwrap()
        ));
    }
}
