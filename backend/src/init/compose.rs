//! The config `fleetdash init` writes: a commented file at the first run, and at a re-run only
//! the new blocks, added with `toml_edit` into the file as it is (the operator's comments,
//! order, spacing and values untouched; never regenerated).

use std::net::SocketAddr;

use toml_edit::{ArrayOfTables, DocumentMut, Item, Table};

use crate::a2a::Wire;

/// An agent to write, with what init learned of it.
#[derive(Debug, Clone)]
pub struct AgentBlock {
    pub name: String,
    pub endpoint: String,
    /// `None`: not learned (written as "auto").
    pub wire: Option<Wire>,
    /// Comment lines above the block (why it is as it is).
    pub notes: Vec<String>,
    /// The report token's file, relative to the config's folder.
    pub report_token_file: String,
    /// The tunnel it is reached through (a loopback endpoint), if new: its name and `host:port`.
    pub tunnel: Option<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct BoardBlock {
    pub name: String,
    pub db: String,
}

#[derive(Debug, Clone)]
pub struct VaultBlock {
    pub path: String,
    /// The remote parity is compared with; `None`: the checkout has none.
    pub remote: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Channel {
    Ntfy(String),
    Webhook(String),
}

impl Channel {
    fn kind(&self) -> &'static str {
        match self {
            Channel::Ntfy(_) => "ntfy",
            Channel::Webhook(_) => "webhook",
        }
    }

    pub fn url(&self) -> &str {
        match self {
            Channel::Ntfy(u) | Channel::Webhook(u) => u,
        }
    }
}

/// Everything a first run writes.
#[derive(Debug, Clone)]
pub struct Plan {
    pub listen: SocketAddr,
    pub intake: SocketAddr,
    pub host: String,
    pub channel: Option<Channel>,
    pub vault: Option<VaultBlock>,
    pub boards: Vec<BoardBlock>,
    pub agents: Vec<AgentBlock>,
    /// One comment line each: the ports of a range where no agent answered.
    pub unanswered: Vec<String>,
    /// `[report] at`, "07:30"; `None`: written commented out.
    pub report: Option<String>,
}

/// Where the report tokens are, beside the config.
pub const TOKENS_DIR: &str = "report-tokens";
/// The htpasswd, beside the config.
pub const HTPASSWD: &str = "htpasswd";

/// A TOML basic string.
pub fn quote(s: &str) -> String {
    toml_edit::Value::from(s).decorated("", "").to_string()
}

/// The whole config of a first run.
pub fn first(plan: &Plan) -> String {
    let mut out = format!(
        "# fleetdash's registry for this fleet, written by `fleetdash init`. Edit it freely: a\n\
         # re-run of `fleetdash init` only adds what is new (agents, boards, tunnels) and never\n\
         # changes what is here. Relative paths are this file's folder's.\n\
         # Validate: fleetdash check --config FILE; what is wrong and its fix: fleetdash doctor.\n\
         \n\
         # Where status.json is written (serve reads it), and fleetdash's own state (never served).\n\
         output_dir = \"out\"\n\
         state_dir = \"state\"\n\
         # No `rules`: fleetdash runs on the rules it ships, each threshold with its source.\n\
         # To change one: `fleetdash rules show` prints them; copy only the groups you change\n\
         # into rules.yaml and set rules = \"rules.yaml\" here (a group it gives replaces the\n\
         # built-in one whole; the others stay built in).\n\
         # Cadences ([cadence]) and probe limits ([probe]) keep their defaults unless set\n\
         # (config/fleetdash.example.toml says each).\n\
         \n\
         # `fleetdash serve`: the page and /api/status.json behind basic auth.\n\
         [serve]\n\
         listen = {listen}\n\
         # bcrypt entries only (mode 0600): init made one login; `htpasswd -B {HTPASSWD} USER` adds more.\n\
         htpasswd = {HTPASSWD:?}\n\
         \n\
         # The work queue agents report into (`fleetdash tasks` lists it).\n\
         [work_queue]\n\
         db = \"state/tasks.db\"\n\
         \n\
         # The A2A server agents report to, on loopback (they reach it over their tunnels), each\n\
         # with its own token (report_token_file below; docs/reporting.md).\n\
         [intake]\n\
         listen = {intake}\n\
         \n\
         # Alerts go out on red, through the channels below (a test: fleetdash alerts test).\n\
         [alerts]\n\
         # The page as your phone opens it: each alert links to it (through `ssh -L` as here;\n\
         # behind nginx, its https address).\n\
         dashboard_url = {dashboard}\n",
        listen = quote(&plan.listen.to_string()),
        dashboard = quote(&format!("http://{}/", plan.listen)),
        intake = quote(&plan.intake.to_string()),
    );
    match &plan.channel {
        Some(channel) => out.push_str(&channel_block(channel)),
        None => out.push_str(
            "# No channel yet: add one, e.g.\n\
             # [[alerts.channels]]\n\
             # type = \"ntfy\"\n\
             # url = \"https://ntfy.sh/my-topic\"\n",
        ),
    }
    match &plan.report {
        Some(at) => out.push_str(&report_block(at)),
        None => {
            out.push_str(&report_block("07:30").replace("\n[report]\nat", "\n# [report]\n# at"))
        }
    }
    if let Some(vault) = &plan.vault {
        out.push_str(&vault_block(vault));
    }
    for board in &plan.boards {
        out.push_str(&board_block(board));
    }
    if plan.agents.is_empty() {
        out.push_str(
            "\n# No agents yet: `fleetdash init --agents 127.0.0.1:18301-18313` adds those that answer.\n",
        );
    }
    for line in &plan.unanswered {
        out.push_str(&format!("\n# {line}\n"));
    }
    for agent in &plan.agents {
        out.push_str(&agent_block(agent));
    }
    out.push_str(&host_block(&plan.host, plan.vault.as_ref()));
    for agent in &plan.agents {
        if let Some((name, address)) = &agent.tunnel {
            out.push_str(&tunnel_block(name, address));
        }
    }
    out
}

/// `[report]` at `at`, with what it is and how to change its zone and period.
fn report_block(at: &str) -> String {
    format!(
        "\n# The report of the night at your hour, once a day, to the channels above (not a\n\
         # pager): what needs you, what went wrong and came back, blind spots (docs/report.md).\n\
         # In this host's zone unless zone = \"Europe/Berlin\"; every = \"week\" with weekday = \"mon\".\n\
         [report]\n\
         at = {}\n",
        quote(at)
    )
}

fn channel_block(channel: &Channel) -> String {
    format!(
        "\n# Red, reminders and recoveries go here (delivered at least once, from an outbox).\n\
         [[alerts.channels]]\n\
         type = {}\n\
         url = {}\n",
        quote(channel.kind()),
        quote(channel.url())
    )
}

fn vault_block(vault: &VaultBlock) -> String {
    format!(
        "\n# The Obsidian vault: a board's `projection` (a .kanban file inside it) is written here.\n\
         [vault]\n\
         path = {}\n",
        quote(&vault.path)
    )
}

pub fn board_block(board: &BoardBlock) -> String {
    format!(
        "\n# A Hermes kanban board, read-only.\n\
         [[boards]]\n\
         name = {}\n\
         # To mirror it into the vault (a .kanban file inside it): projection = \"Kanban/{name}.kanban\"\n\
         db = {}\n",
        quote(&board.name),
        quote(&board.db),
        name = board.name,
    )
}

pub fn agent_block(agent: &AgentBlock) -> String {
    let mut out = String::from("\n");
    for note in &agent.notes {
        out.push_str(&format!("# {note}\n"));
    }
    out.push_str(&format!(
        "[[agents]]\nname = {}\nendpoint = {}\ndialect = {}\n\
         # Optional: its A2A audit log, for its last exchange with a peer:\n\
         # audit_log = \"~/.hermes/a2a_audit.jsonl\"\n\
         # What it reports to the intake with (0600): its identity there.\n\
         report_token_file = {}\n",
        quote(&agent.name),
        quote(&agent.endpoint),
        quote(agent.wire.map_or("auto", Wire::as_str)),
        quote(&agent.report_token_file),
    ));
    out
}

fn host_block(name: &str, vault: Option<&VaultBlock>) -> String {
    let mut out = format!(
        "\n# This machine: memory, the disk's free space, the vault's parity with its remote, and\n\
         # the tunnels the agents are reached through (an agent down behind a dropped tunnel is\n\
         # one cause, said once).\n\
         [[hosts]]\n\
         name = {}\n\
         source = \"local\"\n\
         disk_path = \"/\"\n\
         # systemd units to watch (\".service\" implied): services = [\"hermes-gateway\"]\n",
        quote(name)
    );
    if let Some(vault) = vault {
        match &vault.remote {
            Some(remote) => out.push_str(&format!(
                "# In parity when HEAD is the remote's branch head and nothing is uncommitted.\n\
                 vault = {{ path = {}, remote = {} }}\n",
                quote(&vault.path),
                quote(remote)
            )),
            None => out.push_str(&format!(
                "# It had no git remote at init: watched alone (HEAD, uncommitted changes). Once it\n\
                 # has one (git -C {path} remote add origin URL), add remote = \"origin\".\n\
                 vault = {{ path = {} }}\n",
                quote(&vault.path),
                path = vault.path,
            )),
        }
    }
    out
}

pub fn tunnel_block(name: &str, address: &str) -> String {
    format!(
        "\n[[hosts.tunnels]]\nname = {}\naddress = {}\n",
        quote(name),
        quote(address)
    )
}

/// What an existing config already has, for telling what is new.
#[derive(Debug, Default)]
pub struct Existing {
    pub agent_names: Vec<String>,
    /// Each agent's endpoint as written.
    pub agent_endpoints: Vec<String>,
    pub board_names: Vec<String>,
    pub board_dbs: Vec<String>,
    /// The first `local` host's index in `[[hosts]]` and its tunnels' names and addresses.
    pub local_host: Option<usize>,
    pub tunnel_names: Vec<String>,
    pub tunnel_addresses: Vec<String>,
    pub channel_urls: Vec<String>,
    pub has_vault: bool,
    /// `[report] at` as written ("" when the table has none); `None`: no `[report]`.
    pub report: Option<String>,
    /// `[serve] listen` and `[intake] listen`, as written.
    pub listen: Option<String>,
    pub intake: Option<String>,
}

fn strings(tables: Option<&ArrayOfTables>, key: &str) -> Vec<String> {
    tables
        .map(|a| {
            a.iter()
                .filter_map(|t| t.get(key)?.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

impl Existing {
    pub fn read(doc: &DocumentMut) -> Existing {
        let agents = doc.get("agents").and_then(Item::as_array_of_tables);
        let boards = doc.get("boards").and_then(Item::as_array_of_tables);
        let hosts = doc.get("hosts").and_then(Item::as_array_of_tables);
        let local_host = hosts.and_then(|h| {
            h.iter().position(|t| {
                t.get("source")
                    .and_then(Item::as_str)
                    .is_none_or(|s| s == "local")
            })
        });
        let tunnels = local_host
            .and_then(|i| hosts?.get(i)?.get("tunnels")?.as_array_of_tables())
            .cloned();
        let channels = doc
            .get("alerts")
            .and_then(|a| a.get("channels"))
            .and_then(Item::as_array_of_tables);
        let listen_of = |table: &str| {
            doc.get(table)
                .and_then(|t| t.get("listen"))
                .and_then(Item::as_str)
                .map(str::to_string)
        };
        Existing {
            agent_names: strings(agents, "name"),
            agent_endpoints: strings(agents, "endpoint"),
            board_names: strings(boards, "name"),
            board_dbs: strings(boards, "db"),
            local_host,
            tunnel_names: strings(tunnels.as_ref(), "name"),
            tunnel_addresses: strings(tunnels.as_ref(), "address"),
            channel_urls: strings(channels, "url"),
            has_vault: doc.get("vault").is_some(),
            report: doc.get("report").map(|r| {
                r.get("at")
                    .and_then(Item::as_str)
                    .unwrap_or_default()
                    .to_string()
            }),
            listen: listen_of("serve"),
            intake: listen_of("intake"),
        }
    }
}

/// The one `[[KEY]]` table a snippet of text holds, ready to be added to another document: its
/// place in the snippet forgotten, so it goes after the last of its kind.
fn table_of(snippet: &str, path: &[&str]) -> Table {
    let doc: DocumentMut = snippet
        .parse()
        .unwrap_or_else(|e| panic!("init's own block parses: {e}\n{snippet}"));
    let (last, parents) = path.split_last().expect("a path");
    let mut table = parents
        .iter()
        .try_fold(doc.as_table(), |t, key| t.get(key)?.as_table())
        .and_then(|t| t.get(last)?.as_array_of_tables()?.get(0))
        .cloned()
        .unwrap_or_else(|| panic!("init's own block has {path:?}:\n{snippet}"));
    table.set_position(None);
    // Whatever came before its header (a blank line, comments), kept with it: where the parser
    // put it in the snippet is no concern of the document it goes into.
    let header = format!("[[{}]]", path.join("."));
    if let Some(at) = snippet.find(&header) {
        let before = &snippet[..at];
        // A tunnel's snippet opens with its host's header.
        let before = before.strip_prefix(HOST_HEADER).unwrap_or(before);
        table.decor_mut().set_prefix(before);
    }
    table
}

/// The header a tunnel's snippet is parsed under.
const HOST_HEADER: &str = "[host]";

/// `[[KEY]]` of `parent`, made when absent.
fn array<'d>(parent: &'d mut Table, key: &str) -> Option<&'d mut ArrayOfTables> {
    if parent.get(key).is_none() {
        parent.insert(key, Item::ArrayOfTables(ArrayOfTables::new()));
    }
    parent.get_mut(key)?.as_array_of_tables_mut()
}

/// Adds `agents` (and their tunnels, on the local host when there is one), `boards` and
/// `channel` to `doc`, each after the last of its kind, and `[report]` at `report` unless the
/// config has one. What was there is left as it was.
pub fn add(
    doc: &mut DocumentMut,
    agents: &[AgentBlock],
    boards: &[BoardBlock],
    channel: Option<&Channel>,
    report: Option<&str>,
    local_host: Option<usize>,
) {
    if let Some(at) = report
        && doc.get("report").is_none()
    {
        let snippet = report_block(at);
        let parsed: DocumentMut = snippet.parse().expect("init's own [report] parses");
        let mut table = parsed["report"]
            .as_table()
            .expect("init's own [report] is a table")
            .clone();
        // After everything there (no position), with its comment above it.
        table.set_position(None);
        let header = snippet.find("[report]").expect("a header");
        table.decor_mut().set_prefix(&snippet[..header]);
        doc.insert("report", Item::Table(table));
    }
    if let Some(channel) = channel {
        let alerts = doc
            .entry("alerts")
            .or_insert_with(|| {
                let mut t = Table::new();
                t.set_implicit(true);
                Item::Table(t)
            })
            .as_table_mut();
        if let Some(alerts) = alerts
            && let Some(list) = array(alerts, "channels")
        {
            list.push(table_of(&channel_block(channel), &["alerts", "channels"]));
        }
    }
    for board in boards {
        if let Some(list) = array(doc.as_table_mut(), "boards") {
            list.push(table_of(&board_block(board), &["boards"]));
        }
    }
    for agent in agents {
        if let Some(list) = array(doc.as_table_mut(), "agents") {
            list.push(table_of(&agent_block(agent), &["agents"]));
        }
    }
    let Some(host) =
        local_host.and_then(|i| doc.get_mut("hosts")?.as_array_of_tables_mut()?.get_mut(i))
    else {
        return;
    };
    for agent in agents {
        let Some((name, address)) = &agent.tunnel else {
            continue;
        };
        let snippet = format!("{HOST_HEADER}{}", tunnel_block(name, address))
            .replace("[[hosts.tunnels]]", "[[host.tunnels]]");
        if let Some(list) = array(host, "tunnels") {
            list.push(table_of(&snippet, &["host", "tunnels"]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(name: &str, port: u16) -> AgentBlock {
        AgentBlock {
            name: name.into(),
            endpoint: format!("http://127.0.0.1:{port}/"),
            wire: Some(Wire::V1),
            notes: vec![format!("from its card at {port}")],
            report_token_file: format!("{TOKENS_DIR}/{name}"),
            tunnel: Some((name.into(), format!("127.0.0.1:{port}"))),
        }
    }

    fn plan() -> Plan {
        Plan {
            listen: "127.0.0.1:8080".parse().unwrap(),
            intake: "127.0.0.1:8470".parse().unwrap(),
            host: "laptop".into(),
            channel: Some(Channel::Ntfy("https://ntfy.sh/t".into())),
            vault: Some(VaultBlock {
                path: "/v".into(),
                remote: None,
            }),
            boards: vec![BoardBlock {
                name: "research".into(),
                db: "/k/kanban.db".into(),
            }],
            agents: vec![agent("min", 18301), agent("kai", 18302)],
            unanswered: vec!["127.0.0.1:18303-18305: no agent answered".into()],
            report: None,
        }
    }

    #[test]
    fn a_first_config_reads_back_as_planned() {
        let text = first(&plan());
        let doc: DocumentMut = text.parse().unwrap();
        let seen = Existing::read(&doc);
        assert_eq!(seen.agent_names, ["min", "kai"]);
        assert_eq!(seen.board_names, ["research"]);
        assert_eq!(seen.local_host, Some(0));
        assert_eq!(seen.tunnel_names, ["min", "kai"]);
        assert_eq!(
            seen.tunnel_addresses,
            ["127.0.0.1:18301", "127.0.0.1:18302"]
        );
        assert_eq!(seen.channel_urls, ["https://ntfy.sh/t"]);
        assert!(seen.has_vault);
        assert!(!text.contains("\nrules ="), "no rules line: {text}");
    }

    /// The operator's edits survive a re-run byte for byte; the new agent and its tunnel go
    /// after the last of their kind.
    #[test]
    fn adding_keeps_every_byte_the_operator_wrote() {
        let text = first(&plan()).replacen(
            "name = \"kai\"\n",
            "name = \"kai\"   # renamed by hand\nlane = \"research\"\n",
            1,
        ) + "\n# my own closing note\n";
        let mut doc: DocumentMut = text.parse().unwrap();
        let local = Existing::read(&doc).local_host;
        let new = agent("sol", 18306);
        add(&mut doc, std::slice::from_ref(&new), &[], None, None, local);
        let after = doc.to_string();
        let block = agent_block(&new);
        let tunnel = tunnel_block("sol", "127.0.0.1:18306");
        assert_eq!(after.matches(&block).count(), 1, "{after}");
        assert_eq!(after.matches(&tunnel).count(), 1, "{after}");
        assert_eq!(after.replacen(&block, "", 1).replacen(&tunnel, "", 1), text);
        let at = |s: &str| after.find(s).unwrap();
        assert!(at("name = \"kai\"") < at(&block) && at(&block) < at("[[hosts]]"));
        assert!(at("name = \"kai\"\naddress") < at(&tunnel));
        let seen = Existing::read(&after.parse().unwrap());
        assert_eq!(seen.agent_names, ["min", "kai", "sol"]);
        assert_eq!(seen.tunnel_names, ["min", "kai", "sol"]);
    }

    /// `--report 06:45`: a first run writes `[report]` live, not commented; a re-run adds it
    /// at the end of a config that has none, and leaves one the operator wrote as it is.
    #[test]
    fn a_report_hour_is_written_once_and_never_changed() {
        let commented = first(&plan());
        assert!(
            commented.contains("\n# [report]\n# at = \"07:30\"\n"),
            "{commented}"
        );
        assert_eq!(Existing::read(&commented.parse().unwrap()).report, None);
        let live = first(&Plan {
            report: Some("06:45".into()),
            ..plan()
        });
        assert!(live.contains("\n[report]\nat = \"06:45\"\n"), "{live}");
        assert_eq!(
            Existing::read(&live.parse().unwrap()).report.as_deref(),
            Some("06:45")
        );

        let mut doc: DocumentMut = commented.parse().unwrap();
        add(&mut doc, &[], &[], None, Some("06:45"), Some(0));
        let after = doc.to_string();
        assert!(after.starts_with(&commented), "{after}");
        assert!(after.ends_with(&report_block("06:45")), "{after}");
        let config =
            crate::config::Config::parse(std::path::Path::new("/c/fleetdash.toml"), &after);
        assert!(config.is_ok(), "{config:?}\n{after}");

        let mut again: DocumentMut = after.parse().unwrap();
        add(&mut again, &[], &[], None, Some("09:00"), Some(0));
        assert_eq!(
            again.to_string(),
            after,
            "an existing [report] is the operator's"
        );
    }

    #[test]
    fn adding_to_a_config_without_agents_or_hosts_makes_their_lists() {
        let text = "output_dir = \"out\"\nstate_dir = \"state\"\n";
        let mut doc: DocumentMut = text.parse().unwrap();
        add(
            &mut doc,
            &[agent("min", 18301)],
            &[BoardBlock {
                name: "b".into(),
                db: "/b.db".into(),
            }],
            Some(&Channel::Webhook("http://127.0.0.1:9/h".into())),
            None,
            None,
        );
        let after = doc.to_string();
        assert!(after.starts_with(text), "{after}");
        let seen = Existing::read(&after.parse().unwrap());
        assert_eq!(seen.agent_names, ["min"]);
        assert_eq!(seen.board_names, ["b"]);
        assert_eq!(seen.channel_urls, ["http://127.0.0.1:9/h"]);
        assert!(seen.tunnel_names.is_empty(), "no local host: no tunnel");
    }
}
