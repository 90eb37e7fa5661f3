//! `hub = "laptop"`: this hub's name, when more than one fleetdash watches the fleet
//! (docs/scale.md). It says which hub saw what wherever two hubs' words meet: the `hub` label
//! of every alert sent to Alertmanager, `fleetdash_hub_info` in /metrics, the OpenTelemetry
//! resource's `service.instance.id`. An element's own labels (its key, kind, name) are the
//! same on every hub; this one is not, so it is a plain name from a closed set (the hubs an
//! operator runs), fit for a label.

use super::table::Table;
use super::validator::{Validator, is_plain_name};

/// The longest hub name: a DNS label's length, what a hostname default can be.
const HUB_NAME_MAX: usize = 63;

/// The hub's name given, or this machine's host name, or `fleetdash` when neither is a plain
/// name.
pub(super) fn read(v: &mut Validator, top: &mut Table) -> String {
    let Some(given) = top.string(v, "hub") else {
        return this_host().unwrap_or_else(|| "fleetdash".to_string());
    };
    let name = given.get_ref();
    if !is_hub_name(name) {
        v.error(
            &given,
            top.field("hub"),
            format!(
                "expected this hub's name, e.g. \"laptop\": letters, digits, '.', '_' or '-', \
                 at most {HUB_NAME_MAX} characters (it becomes the `hub` label of its alerts)"
            ),
        );
        return "fleetdash".to_string();
    }
    name.to_string()
}

fn is_hub_name(name: &str) -> bool {
    name.len() <= HUB_NAME_MAX && is_plain_name(name) && !name.contains(['@', ':'])
}

/// The kernel's host name (what `hostname` prints), when it is a plain name.
fn this_host() -> Option<String> {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = raw.trim();
    is_hub_name(name).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::Config;

    const BASE: &str = "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n";

    #[test]
    fn a_hub_is_named_or_takes_the_host_name() {
        let c = Config::parse(Path::new("/etc/f.toml"), &format!("hub = \"lab\"\n{BASE}")).unwrap();
        assert_eq!(c.hub, "lab");
        let c = Config::parse(Path::new("/etc/f.toml"), BASE).unwrap();
        assert!(super::is_hub_name(&c.hub), "{}", c.hub);
    }

    #[test]
    fn a_hub_name_unfit_for_a_label_is_refused_with_its_line() {
        for bad in ["", "two words", "a:b", &"x".repeat(64)] {
            let text = format!("{BASE}hub = \"{bad}\"\n");
            let e = Config::parse(Path::new("/etc/f.toml"), &text)
                .unwrap_err()
                .to_string();
            assert!(e.contains("f.toml:4") && e.contains("hub:"), "{bad}: {e}");
        }
    }
}
