//! The config's alerting parts (issue 12), all under `[alerts]`: where alerts go
//! (`[[alerts.channels]]`: ntfy, a webhook, A2A to the hub agent, Alertmanager; tokens by env
//! var or file only), the collector's dead man's switch (`deadman_url`), the dashboard's URL
//! (the alerts' click target) and recurring `[[alerts.maintenance]]` windows; and `depends_on` on an agent or
//! a host, naming the elements it depends on by their transitions-log keys (`host:lab`,
//! `host:lab/tunnel:lab-heart`, `agent:hub`), so an alert about it is held back while its root
//! cause is down.
//!
//! ```toml
//! [alerts]
//! dashboard_url = "https://fleet.example/"
//! deadman_url = "https://hc.example/ping/fleetdash"
//! [[alerts.channels]]
//! type = "ntfy"
//! url = "https://ntfy.sh/fleet-alerts"
//! quiet = "23:00-07:00" # this host's zone: only a red that lasted goes out
//! [[alerts.maintenance]]
//! days = ["sun"]
//! from = "23:00"        # UTC
//! for = "2h"
//! match = ["host=lab", "kind=cron"]
//! reason = "weekly backup"
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{NaiveTime, Weekday};

use super::maintenance::{MaintenanceWindow, Matcher};
use std::collections::HashSet;

use fleetdash_model::Band;
use toml::Spanned;

use super::TokenSource;
use super::table::{Element, Table};
use super::validator::{Validator, is_plain_name};

/// Where one channel delivers.
#[derive(Debug, Clone, PartialEq)]
pub enum ChannelTarget {
    /// An ntfy topic URL (`https://ntfy.sh/fleet-alerts`).
    Ntfy(url::Url),
    /// A URL that takes a JSON POST.
    Webhook(url::Url),
    /// An `[[agents]]` entry by name: its endpoint, dialect and token are used.
    A2a(String),
    /// Alertmanager's base URLs (`http://127.0.0.1:9093/`), one per member of an HA cluster
    /// (`urls`), or one (`url`): alerts are POSTed to each member's `/api/v2/alerts`, as
    /// Prometheus does, and the members' gossip makes them one notification.
    Alertmanager(Vec<url::Url>),
}

impl ChannelTarget {
    pub fn type_name(&self) -> &'static str {
        match self {
            ChannelTarget::Ntfy(_) => "ntfy",
            ChannelTarget::Webhook(_) => "webhook",
            ChannelTarget::A2a(_) => "a2a",
            ChannelTarget::Alertmanager(_) => "alertmanager",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChannelConfig {
    /// The channel's name in the outbox, the log and on the page (default: its type).
    pub name: String,
    pub target: ChannelTarget,
    /// The bands it wants; empty: red only (an alert is a transition to red and its recovery).
    pub bands: Vec<Band>,
    /// The snapshot sections (element kinds: `agents`, `hosts`, ...) it wants; empty: all.
    pub sections: Vec<String>,
    /// ntfy, webhook and alertmanager: a bearer token (an a2a channel uses its agent's).
    pub token: Option<TokenSource>,
    /// `quiet = "23:00-07:00"` (issue 24): while it lasts, only a red that has lasted the rules'
    /// `quiet_hours.red_after_seconds` goes out; the rest waits for its end.
    pub quiet: Option<QuietHours>,
}

/// A channel's quiet hours: from a time of day to another, in this host's zone (the operator's
/// hub keeps the operator's time), across midnight when `to` is earlier than `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuietHours {
    /// Minutes after midnight.
    pub from: u32,
    pub to: u32,
}

impl QuietHours {
    /// "23:00-07:00".
    pub fn parse(text: &str) -> Option<QuietHours> {
        let (from, to) = text.trim().split_once('-')?;
        let minutes = |t: &str| {
            NaiveTime::parse_from_str(t.trim(), "%H:%M")
                .ok()
                .map(|t| chrono::Timelike::hour(&t) * 60 + chrono::Timelike::minute(&t))
        };
        let (from, to) = (minutes(from)?, minutes(to)?);
        (from != to).then_some(QuietHours { from, to })
    }

    /// Whether `minute` (after midnight) is inside: from inclusive, to exclusive.
    pub fn contains(&self, minute: u32) -> bool {
        if self.from < self.to {
            (self.from..self.to).contains(&minute)
        } else {
            minute >= self.from || minute < self.to
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct AlertsConfig {
    pub channels: Vec<ChannelConfig>,
    /// Pinged after each good collector pass (a Healthchecks-style check URL).
    pub deadman_url: Option<url::Url>,
    /// The page's URL, each alert's click target.
    pub dashboard_url: Option<url::Url>,
    pub maintenance: Vec<MaintenanceWindow>,
}

impl AlertsConfig {
    /// Where the channels' own tokens live (an a2a channel uses its agent's), for the gate.
    pub fn token_sources(&self) -> impl Iterator<Item = &TokenSource> {
        self.channels.iter().filter_map(|c| c.token.as_ref())
    }

    /// Passwords written into the channels' and the dead man's URLs, for the gate.
    pub fn url_passwords(&self) -> impl Iterator<Item = String> + '_ {
        self.channels
            .iter()
            .flat_map(|c| match &c.target {
                ChannelTarget::Ntfy(u) | ChannelTarget::Webhook(u) => std::slice::from_ref(u),
                ChannelTarget::Alertmanager(urls) => urls.as_slice(),
                ChannelTarget::A2a(_) => &[],
            })
            .chain(self.deadman_url.as_ref())
            .filter_map(|u| u.password())
            .map(str::to_string)
    }
}

/// The members of an Alertmanager cluster (`urls`): at least one, each a URL, none twice.
fn cluster_urls(
    v: &mut Validator,
    c: &Table,
    list: &Spanned<Vec<Element>>,
    kind: &Spanned<String>,
) -> Option<ChannelTarget> {
    let mut urls: Vec<url::Url> = Vec::new();
    let mut ok = true;
    for (j, raw) in list.get_ref() {
        match parse_url(v, raw, c.field(&format!("urls[{j}]"))) {
            Some(u) if urls.contains(&u) => {
                ok = false;
                v.error(
                    raw,
                    c.field(&format!("urls[{j}]")),
                    "this member is listed twice",
                );
            }
            Some(u) => urls.push(u),
            None => ok = false,
        }
    }
    if list.get_ref().is_empty() {
        v.error(
            kind,
            c.field("urls"),
            "list every member of the Alertmanager cluster, e.g. \
             [\"http://127.0.0.1:9093/\", \"http://lab:9093/\"]",
        );
        return None;
    }
    ok.then_some(ChannelTarget::Alertmanager(urls))
}

const TYPES: &str = "\"ntfy\", \"webhook\", \"a2a\" or \"alertmanager\"";

fn parse_url(v: &mut Validator, raw: &Spanned<String>, field: String) -> Option<url::Url> {
    match url::Url::parse(raw.get_ref()) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Some(u),
        _ => {
            v.error(raw, field, "expected an http:// or https:// URL");
            None
        }
    }
}

/// Reads `[alerts]`; `agents` are the configured agents' names (an a2a channel names one).
pub(super) fn read(v: &mut Validator, mut t: Table, agents: &[String]) -> AlertsConfig {
    let deadman = t.string(v, "deadman_url");
    let entries = t.tables(v, "channels");
    let dashboard = t.string(v, "dashboard_url");
    let windows = t.tables(v, "maintenance");
    t.finish(v);
    let deadman_url = deadman.and_then(|d| parse_url(v, &d, t.field("deadman_url")));
    let dashboard_url = dashboard.and_then(|d| parse_url(v, &d, t.field("dashboard_url")));
    let maintenance = windows
        .into_iter()
        .filter_map(|w| read_window(v, w))
        .collect();
    let mut names = HashSet::new();
    let mut channels = Vec::new();
    for mut c in entries {
        let kind = c.required_string(v, "type", TYPES);
        let name = c.string(v, "name");
        let url = c.string(v, "url");
        let urls = c.strings(v, "urls");
        let agent = c.string(v, "agent");
        let bands = c.strings(v, "bands");
        let sections = c.strings(v, "sections");
        let token_env = c.string(v, "token_env");
        let token_file = c.string(v, "token_file");
        let quiet_text = c.string(v, "quiet");
        c.finish(v);
        let mut ok = true;
        let quiet = quiet_text.as_ref().and_then(|q| {
            let hours = QuietHours::parse(q.get_ref());
            if hours.is_none() {
                ok = false;
                v.error(
                    q,
                    c.field("quiet"),
                    "expected two different times of day, HH:MM-HH:MM in this host's zone, \
                     e.g. \"23:00-07:00\"",
                );
            }
            hours
        });
        let target = kind.as_ref().and_then(|k| {
            let url_of = |v: &mut Validator, c: &Table| match &url {
                Some(u) => parse_url(v, u, c.field("url")),
                None => {
                    v.error(
                        k,
                        c.field("url"),
                        format!("a {} channel needs url", k.get_ref()),
                    );
                    None
                }
            };
            match k.get_ref().as_str() {
                "ntfy" => url_of(v, &c).map(ChannelTarget::Ntfy),
                "webhook" => url_of(v, &c).map(ChannelTarget::Webhook),
                "alertmanager" => match (&url, &urls) {
                    (Some(_), Some(list)) => {
                        v.error(
                            list,
                            c.field("urls"),
                            "give url (one Alertmanager) or urls (every member of a cluster), \
                             not both",
                        );
                        None
                    }
                    (None, Some(list)) => cluster_urls(v, &c, list, k),
                    _ => url_of(v, &c).map(|u| ChannelTarget::Alertmanager(vec![u])),
                },
                "a2a" => match &agent {
                    Some(a) if agents.contains(a.get_ref()) => {
                        Some(ChannelTarget::A2a(a.get_ref().clone()))
                    }
                    Some(a) => {
                        v.error(a, c.field("agent"), "no [[agents]] entry has this name");
                        None
                    }
                    None => {
                        v.error(k, c.field("agent"), "an a2a channel names its hub agent");
                        None
                    }
                },
                _ => {
                    v.error(k, c.field("type"), format!("expected {TYPES}"));
                    None
                }
            }
        });
        let mut band_list = Vec::new();
        for (j, b) in bands.map(Spanned::into_inner).unwrap_or_default() {
            match b.get_ref().as_str() {
                "red" => band_list.push(Band::Red),
                "amber" => band_list.push(Band::Amber),
                "green" => band_list.push(Band::Green),
                _ => {
                    ok = false;
                    v.error(
                        &b,
                        c.field(&format!("bands[{j}]")),
                        "expected \"red\", \"amber\" or \"green\"",
                    );
                }
            }
        }
        let token = TokenSource::choose(v, |k| c.field(k), "token", &token_env, &token_file)
            .unwrap_or_else(|()| {
                ok = false;
                None
            });
        if let (Some(ChannelTarget::A2a(_)), Some(e)) =
            (&target, token_env.as_ref().or(token_file.as_ref()))
        {
            ok = false;
            v.error(
                e,
                c.field("token_env"),
                "an a2a channel uses its agent's token",
            );
        }
        if let (Some(t), Some(list)) = (&target, &urls)
            && !matches!(t, ChannelTarget::Alertmanager(_))
        {
            ok = false;
            v.error(
                list,
                c.field("urls"),
                format!(
                    "only an alertmanager channel takes urls; a {} channel takes url",
                    t.type_name()
                ),
            );
        }
        let Some(target) = target else { continue };
        let name = match &name {
            Some(n) if !is_plain_name(n.get_ref()) => {
                v.error(
                    n,
                    c.field("name"),
                    "expected a plain name (letters, digits, - _ .)",
                );
                continue;
            }
            Some(n) => n.get_ref().clone(),
            None => target.type_name().to_string(),
        };
        if !names.insert(name.clone()) {
            v.error_at(
                c.start(),
                c.field("name"),
                format!("another channel is named {name:?}: give each a name"),
            );
            continue;
        }
        if ok {
            channels.push(ChannelConfig {
                name,
                target,
                bands: band_list,
                sections: sections
                    .map(Spanned::into_inner)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(_, s)| s.into_inner())
                    .collect(),
                token,
                quiet,
            });
        }
    }
    AlertsConfig {
        dashboard_url,
        maintenance,
        channels,
        deadman_url,
    }
}

fn read_window(v: &mut Validator, mut t: Table) -> Option<MaintenanceWindow> {
    let days = t.strings(v, "days");
    let from = t.required_string(
        v,
        "from",
        "the window's start, HH:MM in UTC, e.g. \"23:00\"",
    );
    let length_raw = t.required_string(v, "for", "the window's length, e.g. \"2h\"");
    let length = v.duration(&length_raw, &t.field("for"), Duration::ZERO);
    let matchers = t.strings(v, "match");
    let reason = t.string(v, "reason");
    t.finish(v);
    let mut ok = true;
    let mut weekdays = Vec::new();
    match days {
        Some(days) => {
            for (j, day) in days.into_inner() {
                match day.get_ref().trim().parse::<Weekday>() {
                    Ok(d) => weekdays.push(d),
                    Err(_) => {
                        ok = false;
                        v.error(
                            &day,
                            t.field(&format!("days[{j}]")),
                            format!(
                                "{:?} is not a weekday; expected e.g. \"mon\" or \"sunday\"",
                                day.get_ref()
                            ),
                        );
                    }
                }
            }
        }
        None => {
            ok = false;
            v.error_at(
                t.start(),
                t.field("days"),
                "missing; the weekdays it recurs on, e.g. [\"sat\", \"sun\"]",
            );
        }
    }
    let from = from.and_then(
        |f| match NaiveTime::parse_from_str(f.get_ref().trim(), "%H:%M") {
            Ok(time) => Some(time),
            Err(_) => {
                v.error(&f, t.field("from"), "expected HH:MM in UTC, e.g. \"23:00\"");
                None
            }
        },
    );
    let mut parsed = Vec::new();
    match matchers {
        Some(list) => {
            for (j, m) in list.into_inner() {
                match Matcher::parse(m.get_ref()) {
                    Ok(matcher) => parsed.push(matcher),
                    Err(e) => {
                        ok = false;
                        v.error(&m, t.field(&format!("match[{j}]")), e);
                    }
                }
            }
        }
        None => {
            ok = false;
            v.error_at(
                t.start(),
                t.field("match"),
                "missing; what the window holds back, e.g. [\"host=lab\"]",
            );
        }
    }
    if parsed.is_empty() && ok {
        ok = false;
        v.error_at(
            t.start(),
            t.field("match"),
            "empty; a window holding back everything would hide the whole fleet",
        );
    }
    let length = chrono::Duration::from_std(length)
        .ok()
        .filter(|l| !l.is_zero());
    match (ok, from, length) {
        (true, Some(from), Some(length)) => Some(MaintenanceWindow {
            days: weekdays,
            from,
            length,
            matchers: parsed,
            reason: reason.map(|r| r.into_inner()).unwrap_or_default(),
        }),
        _ => None,
    }
}

/// Reads `depends_on` of the entry keyed `key` into `out`; an entry that is not a key (no
/// `kind:name`) is an error naming its index.
pub(super) fn depends_on(
    v: &mut Validator,
    t: &mut Table,
    key: Option<String>,
    out: &mut BTreeMap<String, Vec<String>>,
) {
    let Some(list) = t.strings(v, "depends_on") else {
        return;
    };
    let mut roots = Vec::new();
    for (j, root) in list.into_inner() {
        let text = root.get_ref().trim();
        let well_formed = text.split('/').all(|part| {
            part.split_once(':')
                .is_some_and(|(k, n)| !k.is_empty() && !n.is_empty())
        });
        if well_formed {
            roots.push(text.to_string());
        } else {
            v.error(
                &root,
                t.field(&format!("depends_on[{j}]")),
                format!(
                    "{text:?} is not an element key; expected e.g. \"host:lab\" or \"host:lab/tunnel:lab-heart\""
                ),
            );
        }
    }
    if let Some(key) = key
        && !roots.is_empty()
    {
        out.insert(key, roots);
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{ChannelTarget, Config, TokenSource};
    use fleetdash_model::Band;
    use std::path::Path;

    const BASE: &str = "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r.yaml\"\n\
        [[agents]]\nname = \"hub\"\nendpoint = \"http://127.0.0.1:1\"\n";

    #[test]
    fn quiet_hours_are_two_times_of_day_across_midnight_or_not() {
        let text = format!(
            "{BASE}[[alerts.channels]]\ntype = \"ntfy\"\nurl = \"https://ntfy.sh/fleet\"\n\
             quiet = \"23:00-07:00\"\n"
        );
        let c = Config::parse(Path::new("f.toml"), &text).unwrap();
        let q = c.alerts.channels[0].quiet.unwrap();
        assert_eq!((q.from, q.to), (23 * 60, 7 * 60));
        assert!(q.contains(23 * 60) && q.contains(3 * 60) && q.contains(7 * 60 - 1));
        assert!(!q.contains(7 * 60) && !q.contains(12 * 60) && !q.contains(23 * 60 - 1));
        let day = super::QuietHours::parse("12:00-13:30").unwrap();
        assert!(day.contains(12 * 60 + 59) && !day.contains(13 * 60 + 30) && !day.contains(0));
        for bad in ["23:00", "25:00-07:00", "07:00-07:00", "late"] {
            let text = format!(
                "{BASE}[[alerts.channels]]\ntype = \"ntfy\"\nurl = \"https://ntfy.sh/f\"\nquiet = \"{bad}\"\n"
            );
            let e = Config::parse(Path::new("f.toml"), &text)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("alerts.channels[0].quiet: expected two different times of day"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn channels_and_deadman_are_read() {
        let text = format!(
            "{BASE}[alerts]\ndeadman_url = \"https://hc-ping.com/abc\"\n\
             [[alerts.channels]]\ntype = \"ntfy\"\nurl = \"https://ntfy.sh/fleet\"\nbands = [\"red\"]\n\
             token_env = \"NTFY_TOKEN\"\n\
             [[alerts.channels]]\ntype = \"a2a\"\nagent = \"hub\"\nsections = [\"agents\"]\n\
             [[alerts.channels]]\ntype = \"alertmanager\"\nurl = \"http://127.0.0.1:9093/\"\n"
        );
        let c = Config::parse(Path::new("f.toml"), &text).unwrap();
        let a = &c.alerts;
        assert_eq!(
            a.deadman_url.as_ref().unwrap().as_str(),
            "https://hc-ping.com/abc"
        );
        assert_eq!(a.channels.len(), 3);
        assert_eq!(a.channels[0].name, "ntfy");
        assert_eq!(a.channels[0].bands, vec![Band::Red]);
        assert_eq!(
            a.channels[0].token,
            Some(TokenSource::Env("NTFY_TOKEN".into()))
        );
        assert_eq!(a.channels[1].target, ChannelTarget::A2a("hub".into()));
        assert_eq!(a.channels[1].sections, vec!["agents".to_string()]);
        assert_eq!(a.channels[2].name, "alertmanager");
        assert_eq!(
            a.channels[2].target,
            ChannelTarget::Alertmanager(vec!["http://127.0.0.1:9093/".parse().unwrap()])
        );
    }

    /// Issue 34: an HA pair of Alertmanagers is one channel listing both members.
    #[test]
    fn an_alertmanager_cluster_lists_its_members() {
        let text = format!(
            "{BASE}[[alerts.channels]]\ntype = \"alertmanager\"\n\
             urls = [\"http://127.0.0.1:9093/\", \"http://u:am-pass-4711@lab:9093/\"]\n"
        );
        let c = Config::parse(Path::new("f.toml"), &text).unwrap();
        let ChannelTarget::Alertmanager(urls) = &c.alerts.channels[0].target else {
            panic!("{:?}", c.alerts.channels[0].target)
        };
        assert_eq!(urls.len(), 2);
        assert_eq!(urls[1].host_str(), Some("lab"));
        assert!(
            !c.gate().is_clean("am-pass-4711"),
            "a member's password is a secret"
        );

        for (body, want) in [
            (
                "url = \"http://a:9093/\"\nurls = [\"http://b:9093/\"]",
                "alerts.channels[0].urls: give url (one Alertmanager) or urls",
            ),
            ("urls = []", "alerts.channels[0].urls: list every member"),
            (
                "urls = [\"http://a:9093/\", \"http://a:9093/\"]",
                "alerts.channels[0].urls[1]: this member is listed twice",
            ),
            ("urls = [\"not a url\"]", "alerts.channels[0].urls[0]"),
        ] {
            let text = format!("{BASE}[[alerts.channels]]\ntype = \"alertmanager\"\n{body}\n");
            let e = Config::parse(Path::new("f.toml"), &text)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{body}: {e}");
        }
        let text = format!(
            "{BASE}[[alerts.channels]]\ntype = \"ntfy\"\nurl = \"https://ntfy.sh/f\"\n\
             urls = [\"https://ntfy.sh/g\"]\n"
        );
        let e = Config::parse(Path::new("f.toml"), &text)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("alerts.channels[0].urls: only an alertmanager channel takes urls"),
            "{e}"
        );
    }

    #[test]
    fn the_gate_knows_the_channels_tokens() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hook.token"), "hook-secret-987654\n").unwrap();
        let text = format!(
            "{BASE}[alerts]\ndeadman_url = \"https://u:deadman-pass-123@hc.example/ping\"\n\
             [[alerts.channels]]\ntype = \"webhook\"\nurl = \"https://ops.example/h\"\n\
             token_file = \"hook.token\"\n"
        );
        let c = Config::parse(&dir.path().join("f.toml"), &text).unwrap();
        let gate = c.gate();
        assert_eq!(
            gate.redact_str("said hook-secret-987654"),
            format!("said {}", crate::redact::REDACTED)
        );
        assert!(!gate.is_clean("deadman-pass-123"));
    }

    #[test]
    fn mistakes_name_their_field() {
        let text = format!(
            "{BASE}[[alerts.channels]]\ntype = \"sms\"\n\
             [[alerts.channels]]\ntype = \"a2a\"\nagent = \"nobody\"\n\
             [[alerts.channels]]\ntype = \"ntfy\"\nbands = [\"blue\"]\nurl = \"ftp://x\"\n"
        );
        let e = Config::parse(Path::new("f.toml"), &text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("alerts.channels[0].type"), "{e}");
        assert!(e.contains("alerts.channels[1].agent"), "{e}");
        assert!(e.contains("alerts.channels[2].bands[0]"), "{e}");
        assert!(e.contains("alerts.channels[2].url"), "{e}");
    }
}

#[cfg(test)]
mod window_tests {
    use crate::config::{Config, config_beside_fleet_rules};
    use chrono::{DateTime, Utc};

    const TOP: &str = "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"rules.yaml\"\n";

    #[test]
    fn alerts_carry_the_dashboard_url_and_recurring_windows() {
        let (_dir, path) = config_beside_fleet_rules(&format!(
            "{TOP}[alerts]\ndashboard_url = \"https://fleet.example/\"\n\
             [[alerts.maintenance]]\ndays = [\"sun\", \"wed\"]\nfrom = \"23:00\"\nfor = \"2h\"\n\
             match = [\"host=lab\", \"kind=cron\"]\nreason = \"weekly backup\"\n"
        ));
        let (config, _) = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let a = &config.alerts;
        assert_eq!(
            a.dashboard_url.as_ref().unwrap().as_str(),
            "https://fleet.example/"
        );
        assert_eq!(a.maintenance.len(), 1);
        let w = &a.maintenance[0];
        assert_eq!(w.reason, "weekly backup");
        assert_eq!(w.matchers.len(), 2);
        let sunday_night: DateTime<Utc> = "2026-11-30T00:30:00Z".parse().unwrap();
        assert_eq!(
            w.until(sunday_night),
            Some("2026-11-30T01:00:00Z".parse().unwrap())
        );
    }

    #[test]
    fn a_wrong_window_is_refused_field_by_field() {
        let (_dir, path) = config_beside_fleet_rules(&format!(
            "{TOP}[alerts]\ndashboard_url = \"fleet\"\n\
             [[alerts.maintenance]]\ndays = [\"caturday\"]\nfrom = \"25:00\"\n\
             match = [\"lab\"]\n"
        ));
        let err = Config::load(&path).unwrap_err().to_string();
        for expected in [
            "alerts.dashboard_url: expected an http:// or https:// URL",
            "alerts.maintenance[0].days[0]: \"caturday\" is not a weekday",
            "alerts.maintenance[0].from: expected HH:MM in UTC",
            "alerts.maintenance[0].for",
            "alerts.maintenance[0].match[0]: \"lab\": expected field=value",
        ] {
            assert!(err.contains(expected), "missing {expected:?} in {err}");
        }
    }
}
