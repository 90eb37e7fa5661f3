//! What depends on what, for alert suppression (issue 12): an element whose root cause is down
//! raises no alert of its own; the root's alert names what it takes down. The page says the same
//! in one line (issue 43): each write finds what is red because of what ([`Deps::causes`]) and
//! folds the needs-you lines by it.
//!
//! The edges come from what the config already says, so nobody keeps a second map in step:
//! - a host's checks (`host:lab/service:nginx`, `host:lab/tunnel:lab-heart`, crons, vault
//!   parity) depend on the host, a card on its board: read from the key itself, as the
//!   transitions log keys them;
//! - a live task depends on the agent that runs it (`task:min/t_01` on `agent:min`);
//! - every top-level element and live task depends on the snapshot section it is collected in
//!   (`agent:min` on `section:agents`): a stale section's alert speaks for its elements;
//! - an agent whose endpoint's `host:port` is a tunnel's local address depends on that tunnel
//!   (the agent is reached through it), and so does a remote host whose node_exporter URL or
//!   ssh port is one;
//! - plus an optional `depends_on = ["host:lab", ...]` per agent or host in the registry.
//!
//! Chains are followed transitively (host -> tunnel -> agents) by walking parents, with a seen
//! set so a cycle someone wrote in `depends_on` ends the walk instead of looping.

use std::collections::{BTreeMap, BTreeSet};

use fleetdash_model::Band;
use fleetdash_model::alerts::{Element, key};
use fleetdash_model::glance::fold::Cause;

use crate::collect::SectionName;
use crate::config::{Config, HostSource};

/// The dependency edges: element key -> the keys it depends on (besides its host, implied by
/// its key).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deps {
    parents: BTreeMap<String, BTreeSet<String>>,
}

impl Deps {
    /// The edges the config implies and declares.
    pub fn from_config(config: &Config) -> Deps {
        let mut deps = Deps::default();
        let mut tunnels = BTreeMap::new();
        for h in &config.hosts {
            for t in &h.tunnels {
                tunnels.insert(
                    normal_address(&t.address),
                    key::host_check(&h.name, "tunnel", &t.name),
                );
            }
        }
        // Every independent probe hangs on fleetdash's own reach: while most of them fail at
        // once, that one alert speaks for them (issue 24).
        for a in &config.agents {
            deps.add(&key::agent(&a.name), key::BLIND_SPOT);
        }
        for h in config
            .hosts
            .iter()
            .filter(|h| h.source != HostSource::Local)
        {
            deps.add(&key::host(&h.name), key::BLIND_SPOT);
        }
        for a in &config.agents {
            let key = key::agent(&a.name);
            if let (Some(host), Some(port)) =
                (a.endpoint.host_str(), a.endpoint.port_or_known_default())
                && let Some(tunnel) = tunnels.get(&normal_address(&format!("{host}:{port}")))
            {
                deps.add(&key, tunnel);
            }
        }
        // A remote host read through a loopback forward (its node_exporter, its sshd) is
        // reached through that tunnel.
        for h in &config.hosts {
            let address = match &h.source {
                HostSource::NodeExporter { url } => url
                    .host_str()
                    .zip(url.port_or_known_default())
                    .map(|(host, port)| format!("{host}:{port}")),
                HostSource::Ssh(ssh) => {
                    let host = ssh.destination.rsplit('@').next().unwrap_or_default();
                    Some(format!("{host}:{}", ssh.port.unwrap_or(22)))
                }
                HostSource::Local => None,
            };
            if let Some(tunnel) = address.and_then(|a| tunnels.get(&normal_address(&a))) {
                deps.add(&key::host(&h.name), tunnel);
            }
        }
        for (key, roots) in &config.depends_on {
            for root in roots {
                deps.add(key, root);
            }
        }
        deps
    }

    /// Says that `key` depends on `root`.
    pub fn add(&mut self, key: &str, root: &str) {
        if key != root {
            self.parents
                .entry(key.to_string())
                .or_default()
                .insert(root.to_string());
        }
    }

    /// What `key` depends on directly: its declared edges, then its [`Deps::implied_parents`].
    pub fn parents(&self, key: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .parents
            .get(key)
            .map(|p| p.iter().cloned().collect())
            .unwrap_or_default();
        for parent in Self::implied_parents(key) {
            if !out.contains(&parent) {
                out.push(parent);
            }
        }
        out
    }

    /// What the key itself says `key` depends on: what it is under (a host's check its host, a
    /// card its board; a live task its agent and its section), or the snapshot section a
    /// top-level element is collected in. Those are what list it.
    pub fn implied_parents(key: &str) -> Vec<String> {
        let mut implied = Vec::new();
        match key.split_once('/') {
            // A live task (`task:<agent>/<id>`) is run by its agent, and collected in its section.
            Some((agent, _)) if key.starts_with("task:") => {
                implied.push(key::agent(&agent["task:".len()..]));
                implied.extend(section_of(key).map(|s| key::section(s.as_str())));
            }
            // A host's check, a board's card: under what their key is under.
            Some((under, _)) => implied.push(under.to_string()),
            None => implied.extend(section_of(key).map(|s| key::section(s.as_str()))),
        }
        implied
    }

    /// The key of the snapshot section `key` is collected in (`section:agents` for
    /// `agent:min`, `section:tasks.board` for a card), [`key::TUNNELS`] for a host's tunnel
    /// (read by a collector of its own); none for a section itself. A pass counts an element
    /// when this reading is new.
    pub fn section_of(key: &str) -> Option<String> {
        if key::is_tunnel(key) {
            return Some(key::TUNNELS.to_string());
        }
        section_of(key).map(|s| key::section(s.as_str()))
    }

    /// What is red because of what, in `elements` (a snapshot's, by key): each red element with
    /// a red element among what it depends on, and the root of it, the red one that depends on
    /// nothing red itself (the first by key when there are several). Sections and fleetdash's
    /// own reach are not roots here: the page says a stale section and the blind spot apart.
    /// Two elements that depend on each other (a cycle in `depends_on`) take neither down, as
    /// for alerts. A card is nobody's: see below.
    pub fn causes(&self, elements: &BTreeMap<String, Element>) -> Vec<Cause> {
        let red = |k: &str| elements.get(k).is_some_and(|e| e.band == Band::Red);
        // What a key depends on that can take it down: elements, not the section or the reach.
        let above = |k: &str| -> BTreeSet<String> {
            self.ancestors(k)
                .into_iter()
                .filter(|a| !a.starts_with("section:") && !a.starts_with("fleetdash:"))
                .collect()
        };
        // A card is red for its own events; its board red for its read or its projection
        // (a hand-edited target) takes no card down: a board that cannot be read leaves its
        // cards stale, said alike, and folded as such.
        let card = |k: &str| k.starts_with("board:") && k.contains('/');
        let mut out = Vec::new();
        for key in elements.keys().filter(|k| red(k) && !card(k)) {
            let ups = above(key);
            let root = ups.iter().find(|a| {
                red(a) && {
                    let theirs = above(a);
                    !theirs.contains(key) && !theirs.iter().any(|b| red(b))
                }
            });
            if let Some(root) = root {
                let e = &elements[root];
                out.push(Cause {
                    key: key.clone(),
                    root: root.clone(),
                    root_what: format!("{} {}", e.kind, e.name),
                });
            }
        }
        out
    }

    /// Everything `key` depends on, directly or through others.
    pub fn ancestors(&self, key: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = self.parents(key);
        while let Some(next) = todo.pop() {
            if next != key && seen.insert(next.clone()) {
                todo.extend(self.parents(&next));
            }
        }
        seen
    }
}

/// The section a top-level element is collected in: while that section is stale or failed,
/// what it last said of its elements is not news, and the section's own alert speaks for them.
fn section_of(key: &str) -> Option<SectionName> {
    let kind = key.split_once(':').map_or(key, |(kind, _)| kind);
    Some(match kind {
        "agent" => SectionName::Agents,
        "task" => SectionName::LiveTasks,
        "queue" => SectionName::Queue,
        "board" => SectionName::Board,
        "host" => SectionName::Systems,
        "backups" => SectionName::Backups,
        // fleetdash's reach is judged on the agents' probes: counted when they are renewed.
        "fleetdash" => SectionName::Agents,
        _ => return None,
    })
}

/// `localhost` and `127.0.0.1` name the same loopback forward.
fn normal_address(address: &str) -> String {
    let address = address.trim();
    match address.strip_prefix("localhost:") {
        Some(port) => format!("127.0.0.1:{port}"),
        None => address.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosts_checks_depend_on_the_host_and_chains_are_followed() {
        let mut d = Deps::default();
        d.add("agent:min", "host:lab/tunnel:lab-heart");
        assert_eq!(d.parents("host:lab/service:nginx"), vec!["host:lab"]);
        let all: Vec<String> = d.ancestors("agent:min").into_iter().collect();
        assert_eq!(
            all,
            vec![
                "host:lab",
                "host:lab/tunnel:lab-heart",
                "section:agents",
                "section:systems"
            ]
        );
        assert_eq!(d.parents("board:ops/card:c1"), vec!["board:ops"]);
        assert_eq!(d.parents("board:ops"), vec!["section:tasks.board"]);
        assert_eq!(d.parents("queue:t_01"), vec!["section:tasks.queue"]);
        assert_eq!(
            d.parents("task:min/t_01"),
            vec!["agent:min", "section:tasks.live"]
        );
        assert_eq!(d.parents("backups"), vec!["section:backups"]);
        assert!(d.parents("section:agents").is_empty());
    }

    #[test]
    fn a_cycle_in_depends_on_ends_the_walk() {
        let mut d = Deps::default();
        d.add("agent:a", "agent:b");
        d.add("agent:b", "agent:a");
        let all: Vec<String> = d.ancestors("agent:a").into_iter().collect();
        assert_eq!(all, vec!["agent:b", "section:agents"]);
    }

    #[test]
    fn the_config_says_which_agents_sit_behind_which_tunnel_plus_depends_on() {
        let (_dir, path) = crate::config::config_beside_fleet_rules(
            "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n\
             [[agents]]\nname = \"min\"\nendpoint = \"http://localhost:18301/a2a\"\n\
             [[agents]]\nname = \"hub\"\nendpoint = \"http://127.0.0.1:18400\"\n\
             depends_on = [\"host:lab\"]\n\
             [[agents]]\nname = \"far\"\nendpoint = \"https://far.example\"\n\
             [[hosts]]\nname = \"lab\"\n\
             [[hosts.tunnels]]\nname = \"lab-heart\"\naddress = \"127.0.0.1:18301\"\n\
             [[hosts]]\nname = \"edge\"\ndepends_on = [\"host:lab/tunnel:lab-heart\"]\n",
        );
        let (config, _rules) = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let d = Deps::from_config(&config);
        // Every agent hangs on fleetdash's own reach too (issue 24); a local host does not.
        assert_eq!(
            d.parents("agent:min"),
            vec![
                "fleetdash:reach",
                "host:lab/tunnel:lab-heart",
                "section:agents"
            ]
        );
        assert_eq!(
            d.parents("agent:hub"),
            vec!["fleetdash:reach", "host:lab", "section:agents"]
        );
        assert_eq!(
            d.parents("agent:far"),
            vec!["fleetdash:reach", "section:agents"]
        );
        assert_eq!(d.parents("fleetdash:reach"), vec!["section:agents"]);
        assert!(!d.ancestors("host:lab").contains("fleetdash:reach"));
        let edge: Vec<String> = d.ancestors("host:edge/service:nginx").into_iter().collect();
        assert_eq!(
            edge,
            vec![
                "host:edge",
                "host:lab",
                "host:lab/tunnel:lab-heart",
                "section:systems"
            ]
        );
    }

    #[test]
    fn a_depends_on_entry_that_is_not_a_key_is_refused_with_its_index() {
        let (_dir, path) = crate::config::config_beside_fleet_rules(
            "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n\
             [[hosts]]\nname = \"lab\"\ndepends_on = [\"host:edge\", \"lab\"]\n",
        );
        let err = Config::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("hosts[0].depends_on[1]: \"lab\" is not an element key"),
            "{err}"
        );
    }

    /// Issue 43: a remote host read through a loopback forward hangs on that tunnel.
    #[test]
    fn a_remote_host_read_through_a_tunnel_depends_on_it() {
        let (_dir, path) = crate::config::config_beside_fleet_rules(
            "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n\
             [[hosts]]\nname = \"laptop\"\nsource = \"local\"\n\
             [[hosts.tunnels]]\nname = \"lab\"\naddress = \"localhost:19100\"\n\
             [[hosts]]\nname = \"LAB\"\nsource = \"node_exporter\"\n\
             url = \"http://127.0.0.1:19100/metrics\"\n\
             [[hosts]]\nname = \"prod\"\nsource = \"node_exporter\"\n\
             url = \"http://127.0.0.1:19200/metrics\"\n",
        );
        let (config, _rules) = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let d = Deps::from_config(&config);
        assert!(
            d.parents("host:LAB")
                .contains(&"host:laptop/tunnel:lab".to_string())
        );
        assert!(!d.ancestors("host:prod").contains("host:laptop/tunnel:lab"));
    }

    fn el(kind: &'static str, name: &str, band: Band) -> Element {
        Element {
            kind,
            name: name.into(),
            band,
            reason: None,
        }
    }

    /// Issue 43: what is red because of what, for the page's one line per cause: the root is
    /// the red element that depends on nothing red; a red element with no red above it, a
    /// green one, and two that depend on each other are nobody's.
    #[test]
    fn each_red_element_is_listed_with_the_root_of_what_took_it_down() {
        let mut d = Deps::default();
        d.add("host:LAB", "host:laptop/tunnel:lab");
        for a in ["agent:vega", "agent:kai"] {
            d.add(a, "host:LAB");
            d.add(a, key::BLIND_SPOT);
        }
        d.add("agent:x", "agent:y");
        d.add("agent:y", "agent:x");
        let elements: BTreeMap<String, Element> = [
            ("host:laptop", el("host", "laptop", Band::Green)),
            (
                "host:laptop/tunnel:lab",
                el("tunnel", "lab on laptop", Band::Red),
            ),
            ("host:LAB", el("host", "LAB", Band::Red)),
            ("agent:vega", el("agent", "vega", Band::Red)),
            ("agent:kai", el("agent", "kai", Band::Green)),
            ("agent:echo", el("agent", "echo", Band::Red)),
            ("agent:x", el("agent", "x", Band::Red)),
            ("agent:y", el("agent", "y", Band::Red)),
            (key::BLIND_SPOT, el("fleetdash", "reach", Band::Red)),
            ("section:agents", el("section", "agents", Band::Red)),
        ]
        .into_iter()
        .map(|(k, e)| (k.to_string(), e))
        .collect();
        let said: Vec<(String, String, String)> = d
            .causes(&elements)
            .into_iter()
            .map(|c| (c.key, c.root, c.root_what))
            .collect();
        let root = || "host:laptop/tunnel:lab".to_string();
        let what = || "tunnel lab on laptop".to_string();
        assert_eq!(
            said,
            vec![
                ("agent:vega".into(), root(), what()),
                ("host:LAB".into(), root(), what()),
            ]
        );
    }
}
