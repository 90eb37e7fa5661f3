//! A remote host's facts from its Prometheus node_exporter: one bounded HTTP GET of `/metrics`,
//! parsed from the text exposition format ([`super::prom_text`]). RAM from
//! `node_memory_MemTotal_bytes` and `node_memory_MemAvailable_bytes`, disk from
//! `node_filesystem_avail_bytes{mountpoint}`, services from
//! `node_systemd_unit_state{name,state="active"}`, crons from the metrics
//! `fleetdash cron-run --textfile-dir` leaves for the textfile collector.
//!
//! A metric that is absent fails its fact alone, naming the metric and the collector flag that
//! would provide it; a scrape that fails (refused, timed out, non-2xx, oversized) fails every
//! fact with the same reason.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use fleetdash_model::Asc;

use super::local::unit_name;
use super::prom_text::{self, Exposition};
use super::{FactSource, HostFacts, Ram, UnitState, cron};
use crate::config::{CronConfig, CronEvidence, HostConfig};
use crate::net::{ProbeClient, ProbeFailure};

/// The metrics `fleetdash cron-run --textfile-dir` writes, each labelled `cron="NAME"`, values in
/// Unix seconds (the exit code as is).
pub const CRON_LAST_START: &str = "fleetdash_cron_last_start_timestamp_seconds";
pub const CRON_LAST_FINISH: &str = "fleetdash_cron_last_finish_timestamp_seconds";
pub const CRON_LAST_SUCCESS: &str = "fleetdash_cron_last_success_timestamp_seconds";
pub const CRON_LAST_EXIT_CODE: &str = "fleetdash_cron_last_exit_code";

const MEM_TOTAL: &str = "node_memory_MemTotal_bytes";
const MEM_AVAILABLE: &str = "node_memory_MemAvailable_bytes";
const FS_AVAIL: &str = "node_filesystem_avail_bytes";
const FS_DEVICE_ERROR: &str = "node_filesystem_device_error";
const UNIT_STATE: &str = "node_systemd_unit_state";
const TEXTFILE_ERROR: &str = "node_textfile_scrape_error";
const COLLECTOR_SUCCESS: &str = "node_scrape_collector_success";

pub struct NodeExporterSource {
    url: url::Url,
    client: ProbeClient,
}

impl NodeExporterSource {
    pub fn new(url: url::Url, client: ProbeClient) -> Self {
        NodeExporterSource { url, client }
    }
}

#[async_trait]
impl FactSource for NodeExporterSource {
    async fn read(&self, host: &HostConfig) -> HostFacts {
        let reply = match self.client.get(self.url.clone(), None).await {
            Ok(reply) => reply,
            Err(failure) => return HostFacts::unreachable(host, failure.context("node_exporter")),
        };
        if matches!(reply.status, 401 | 403) {
            // node_exporter's web config (basic auth) refused us; the url's user:password is
            // what is sent (as a Basic header, see net::split_credentials), so the fix goes there.
            let failure = ProbeFailure::new(
                Asc::PERMISSION_DENIED,
                format!(
                    "node_exporter answered HTTP {} (check the user:password in the url)",
                    reply.status
                ),
            );
            return HostFacts::unreachable(host, failure);
        }
        if !(200..300).contains(&reply.status) {
            let failure = ProbeFailure::new(
                Asc::DEPENDENCY_UNAVAILABLE,
                format!("node_exporter answered HTTP {}", reply.status),
            );
            return HostFacts::unreachable(host, failure);
        }
        let text = String::from_utf8_lossy(&reply.body);
        facts_from_text(host, &text)
    }
}

/// A host's facts from the text of one `/metrics` reply.
pub fn facts_from_text(host: &HostConfig, text: &str) -> HostFacts {
    let expo = prom_text::parse(text);
    if expo.samples.is_empty() {
        // Nothing parsed: the body is not an exposition at all, and every fact says so rather
        // than each naming a missing metric.
        let why = expo
            .unparseable_note()
            .unwrap_or_else(|| "an empty reply".into());
        let failure = ProbeFailure::new(
            Asc::INTEGRITY_CHECK_FAILED,
            format!("node_exporter reply holds no Prometheus samples: {why}"),
        );
        return HostFacts::unreachable(host, failure);
    }
    let facts = Facts { expo: &expo };
    HostFacts {
        ram: facts.ram(),
        disk_free_bytes: facts.disk_free(&host.disk_path),
        services: host.services.iter().map(|s| facts.service(s)).collect(),
        crons: host.crons.iter().map(|c| facts.cron(c)).collect(),
        vault: host.vault.as_ref().map(|_| {
            Err(ProbeFailure::new(
                Asc::FAILED_PRECONDITION,
                "vault parity needs a local or ssh host: node_exporter cannot run git",
            ))
        }),
    }
}

struct Facts<'a> {
    expo: &'a Exposition,
}

impl Facts<'_> {
    /// "METRIC missing: HINT", with a note of skipped lines when the reply had some: a missing
    /// metric may be one of them.
    fn missing(&self, what: &str, hint: &str) -> ProbeFailure {
        let mut reason = format!("{what} missing: {hint}");
        if let Some(note) = self.expo.unparseable_note() {
            reason.push_str(&format!(" (the reply had {note})"));
        }
        ProbeFailure::new(Asc::FAILED_PRECONDITION, reason)
    }

    /// A metric of `collector` is absent: either the collector is off (say which flag starts
    /// it) or it ran and failed (node_exporter says so in `node_scrape_collector_success`).
    fn missing_from(&self, what: &str, collector: &str) -> ProbeFailure {
        let failed = self
            .expo
            .matching(COLLECTOR_SUCCESS, &[("collector", collector)])
            .any(|s| s.value == 0.0);
        if failed {
            self.missing(
                what,
                &format!(
                    "node_exporter's {collector} collector failed on that host \
                     ({COLLECTOR_SUCCESS}{{collector={collector:?}}} is 0; see its log)"
                ),
            )
        } else {
            self.missing(
                what,
                &format!("start node_exporter with --collector.{collector}"),
            )
        }
    }

    /// The one unlabelled sample of `name`, finite and not negative.
    fn gauge(&self, name: &str, collector: &str) -> Result<f64, ProbeFailure> {
        let sample = self
            .expo
            .matching(name, &[])
            .next()
            .ok_or_else(|| self.missing_from(name, collector))?;
        non_negative(name, sample.value)
    }

    fn ram(&self) -> Result<Ram, ProbeFailure> {
        let total = self.gauge(MEM_TOTAL, "meminfo")?;
        let available = self.gauge(MEM_AVAILABLE, "meminfo")?;
        Ok(Ram {
            used_bytes: (total - available).max(0.0) as u64,
            total_bytes: total as u64,
        })
    }

    fn disk_free(&self, mountpoint: &str) -> Result<u64, ProbeFailure> {
        if !self.expo.has(FS_AVAIL) {
            return Err(self.missing_from(FS_AVAIL, "filesystem"));
        }
        let at = [("mountpoint", mountpoint)];
        let mut found: Vec<&prom_text::Sample> = self.expo.matching(FS_AVAIL, &at).collect();
        if found.is_empty() {
            // The filesystem collector drops a mount it could not stat and says so here.
            if self
                .expo
                .matching(FS_DEVICE_ERROR, &at)
                .any(|s| s.value == 1.0)
            {
                return Err(ProbeFailure::new(
                    Asc::DEPENDENCY_UNAVAILABLE,
                    format!("node_exporter could not stat {mountpoint} ({FS_DEVICE_ERROR} is 1)"),
                ));
            }
            let what = format!("{FS_AVAIL}{{mountpoint={mountpoint:?}}}");
            return Err(self.missing(
                &what,
                "not a mount point on that host, or excluded by \
                 --collector.filesystem.mount-points-exclude / fs-types-exclude",
            ));
        }
        // A tmpfs mounted over the same point hides nothing on disk; prefer the real one.
        found.sort_by_key(|s| s.label("fstype") == Some("tmpfs"));
        let value = non_negative(FS_AVAIL, found[0].value)?;
        Ok(value as u64)
    }

    fn service(&self, configured: &str) -> Result<UnitState, ProbeFailure> {
        if !self.expo.has(UNIT_STATE) {
            return Err(self.missing_from(UNIT_STATE, "systemd"));
        }
        let unit = unit_name(configured);
        let mut any = false;
        // One sample per possible state; the one set to 1 is the unit's state.
        for sample in self.expo.matching(UNIT_STATE, &[("name", unit.as_str())]) {
            any = true;
            if sample.value == 1.0
                && let Some(state) = sample.label("state")
            {
                return Ok(UnitState(state.to_string()));
            }
        }
        let why = if any {
            format!("{UNIT_STATE}{{name={unit:?}}} has no state set to 1")
        } else {
            format!(
                "{unit} not reported by node_exporter (not loaded on that host, or filtered \
                 by --collector.systemd.unit-include/unit-exclude)"
            )
        };
        Err(ProbeFailure::new(Asc::NOT_FOUND, why))
    }

    fn cron(&self, cfg: &CronConfig) -> Result<cron::Evidence, ProbeFailure> {
        if let CronEvidence::Stamp(_) = cfg.evidence {
            return Err(ProbeFailure::new(
                Asc::FAILED_PRECONDITION,
                "stamp files need a local or ssh host",
            ));
        }
        let by_name = [("cron", cfg.name.as_str())];
        let names = [
            CRON_LAST_START,
            CRON_LAST_FINISH,
            CRON_LAST_SUCCESS,
            CRON_LAST_EXIT_CODE,
        ];
        let recorded = names
            .iter()
            .any(|n| self.expo.matching(n, &by_name).next().is_some());
        if !recorded {
            if !self.expo.has(TEXTFILE_ERROR) {
                return Err(self.missing(
                    &format!("{CRON_LAST_START}{{cron={:?}}}", cfg.name),
                    "node_exporter's textfile collector is off; start it with \
                     --collector.textfile.directory=DIR and run the job under \
                     `fleetdash cron-run --textfile-dir DIR`",
                ));
            }
            if self
                .expo
                .matching(TEXTFILE_ERROR, &[])
                .any(|s| s.value != 0.0)
            {
                return Err(ProbeFailure::new(
                    Asc::INTEGRITY_CHECK_FAILED,
                    format!(
                        "no fleetdash_cron_* metrics for cron={:?} and {TEXTFILE_ERROR} is 1: \
                         a file in the textfile directory is unreadable (see node_exporter's log)",
                        cfg.name
                    ),
                ));
            }
            // The collector works and the job never wrote: it has not checked in yet, as with
            // a missing record file.
            return Ok(cron::Evidence::default());
        }
        let time = |name: &str| self.cron_time(name, &cfg.name);
        let last_exit_code = match self.expo.matching(CRON_LAST_EXIT_CODE, &by_name).last() {
            None => None,
            Some(s) => {
                let v = s.value;
                if !(v.is_finite() && v.fract() == 0.0 && v.abs() <= i32::MAX as f64) {
                    return Err(ProbeFailure::new(
                        Asc::INTEGRITY_CHECK_FAILED,
                        format!(
                            "{CRON_LAST_EXIT_CODE}{{cron={:?}}} is {v}, not an exit code",
                            cfg.name
                        ),
                    ));
                }
                Some(v as i32)
            }
        };
        Ok(cron::Evidence {
            last_start: time(CRON_LAST_START)?,
            last_finish: time(CRON_LAST_FINISH)?,
            last_success: time(CRON_LAST_SUCCESS)?,
            last_exit_code,
        })
    }

    /// A Unix-seconds gauge as a time. 0 (or less) means "never", as a job that has not yet
    /// succeeded may write; the latest wins if a stale copy of the metric lingers elsewhere.
    fn cron_time(&self, metric: &str, cron: &str) -> Result<Option<DateTime<Utc>>, ProbeFailure> {
        let mut latest: Option<DateTime<Utc>> = None;
        for s in self.expo.matching(metric, &[("cron", cron)]) {
            let v = s.value;
            if !v.is_finite() {
                return Err(ProbeFailure::new(
                    Asc::INTEGRITY_CHECK_FAILED,
                    format!("{metric}{{cron={cron:?}}} is {v}, not a time"),
                ));
            }
            if v <= 0.0 {
                continue;
            }
            let t =
                DateTime::from_timestamp_millis((v * 1000.0).round() as i64).ok_or_else(|| {
                    ProbeFailure::new(
                        Asc::INTEGRITY_CHECK_FAILED,
                        format!("{metric}{{cron={cron:?}}} is {v}, out of range for a time"),
                    )
                })?;
            latest = latest.max(Some(t));
        }
        Ok(latest)
    }
}

fn non_negative(name: &str, v: f64) -> Result<f64, ProbeFailure> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(ProbeFailure::new(
            Asc::INTEGRITY_CHECK_FAILED,
            format!("{name} is {v}, not a byte count"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HostSource;
    use std::time::Duration;

    fn host() -> HostConfig {
        HostConfig {
            name: "lab".into(),
            source: HostSource::NodeExporter {
                url: "http://127.0.0.1:9100/metrics".parse().unwrap(),
            },
            disk_path: "/".into(),
            services: vec!["nginx".into(), "autossh-lab.service".into(), "gone".into()],
            tunnels: vec![],
            crons: vec![
                CronConfig {
                    name: "backup".into(),
                    period: Duration::from_secs(86400),
                    grace: Duration::from_secs(3600),
                    evidence: CronEvidence::Record,
                },
                CronConfig {
                    name: "never".into(),
                    period: Duration::from_secs(86400),
                    grace: Duration::from_secs(3600),
                    evidence: CronEvidence::Record,
                },
                CronConfig {
                    name: "stamped".into(),
                    period: Duration::from_secs(86400),
                    grace: Duration::from_secs(3600),
                    evidence: CronEvidence::Stamp("/var/run/x.stamp".into()),
                },
            ],
            cron_dir: None,
            vault: None,
        }
    }

    const FULL: &str = r#"# HELP node_memory_MemTotal_bytes Memory information field MemTotal_bytes.
# TYPE node_memory_MemTotal_bytes gauge
node_memory_MemTotal_bytes 6.4e+10
node_memory_MemAvailable_bytes 4.1e+10
node_filesystem_avail_bytes{device="tmpfs",fstype="tmpfs",mountpoint="/"} 1000
node_filesystem_avail_bytes{device="/dev/sda1",fstype="ext4",mountpoint="/"} 6.12e+11
node_filesystem_avail_bytes{device="tmpfs",fstype="tmpfs",mountpoint="/run"} 5e8
node_systemd_unit_state{name="nginx.service",state="active",type="simple"} 1
node_systemd_unit_state{name="nginx.service",state="failed",type="simple"} 0
node_systemd_unit_state{name="autossh-lab.service",state="active",type="simple"} 0
node_systemd_unit_state{name="autossh-lab.service",state="failed",type="simple"} 1
node_textfile_scrape_error 0
fleetdash_cron_last_start_timestamp_seconds{cron="backup"} 1.7640036e+09
fleetdash_cron_last_finish_timestamp_seconds{cron="backup"} 1764003660
fleetdash_cron_last_success_timestamp_seconds{cron="backup"} 1764003660
fleetdash_cron_last_exit_code{cron="backup"} 0
"#;

    #[test]
    fn reads_every_fact() {
        let f = facts_from_text(&host(), FULL);
        assert_eq!(
            f.ram.unwrap(),
            Ram {
                used_bytes: 23_000_000_000,
                total_bytes: 64_000_000_000
            }
        );
        assert_eq!(
            f.disk_free_bytes.unwrap(),
            612_000_000_000,
            "ext4 beats tmpfs"
        );
        assert_eq!(f.services[0], Ok(UnitState("active".into())));
        assert!(!f.services[1].as_ref().unwrap().is_active());
        let gone = f.services[2].clone().unwrap_err();
        assert_eq!(gone.asc, Asc::NOT_FOUND);
        assert!(
            gone.reason.contains("gone.service not reported"),
            "{}",
            gone.reason
        );
        let backup = f.crons[0].clone().unwrap();
        assert_eq!(backup.last_start.unwrap().timestamp(), 1_764_003_600);
        assert_eq!(backup.last_finish.unwrap().timestamp(), 1_764_003_660);
        assert_eq!(backup.last_success, backup.last_finish);
        assert_eq!(backup.last_exit_code, Some(0));
        assert_eq!(f.crons[1], Ok(cron::Evidence::default()), "never ran");
        let stamped = f.crons[2].clone().unwrap_err();
        assert_eq!(stamped.asc, Asc::FAILED_PRECONDITION);
        assert_eq!(stamped.reason, "stamp files need a local or ssh host");
    }

    #[test]
    fn missing_metrics_name_the_flag() {
        let f = facts_from_text(&host(), "node_memory_MemTotal_bytes 1e9\nsome garbage\n");
        let ram = f.ram.unwrap_err();
        assert!(
            ram.reason.starts_with(
                "node_memory_MemAvailable_bytes missing: start node_exporter with --collector.meminfo"
            ),
            "{}",
            ram.reason
        );
        assert!(
            ram.reason.contains("1 unparseable line (line 2:"),
            "{}",
            ram.reason
        );
        let disk = f.disk_free_bytes.unwrap_err();
        assert!(
            disk.reason.contains("--collector.filesystem"),
            "{}",
            disk.reason
        );
        let svc = f.services[0].clone().unwrap_err();
        assert!(
            svc.reason.starts_with(
                "node_systemd_unit_state missing: start node_exporter with --collector.systemd"
            ),
            "{}",
            svc.reason
        );
        let cron = f.crons[0].clone().unwrap_err();
        assert!(
            cron.reason.contains("textfile collector is off"),
            "{}",
            cron.reason
        );
    }

    #[test]
    fn a_failed_collector_is_named_as_failed() {
        let text = "node_memory_MemTotal_bytes 1\n\
                    node_scrape_collector_success{collector=\"systemd\"} 0\n";
        let f = facts_from_text(&host(), text);
        let svc = f.services[0].clone().unwrap_err();
        assert_eq!(
            svc.reason,
            "node_systemd_unit_state missing: node_exporter's systemd collector failed on that \
             host (node_scrape_collector_success{collector=\"systemd\"} is 0; see its log)"
        );
    }

    #[test]
    fn other_mount_points_and_broken_values() {
        let mut h = host();
        h.disk_path = "/data".into();
        let text = "node_filesystem_avail_bytes{fstype=\"ext4\",mountpoint=\"/\"} 1\n\
                    node_filesystem_device_error{fstype=\"ext4\",mountpoint=\"/data\"} 1\n\
                    node_memory_MemTotal_bytes NaN\n\
                    node_memory_MemAvailable_bytes 1\n\
                    node_textfile_scrape_error 1\n\
                    fleetdash_cron_last_start_timestamp_seconds{cron=\"backup\"} +Inf\n";
        let f = facts_from_text(&h, text);
        let disk = f.disk_free_bytes.unwrap_err();
        assert!(
            disk.reason.contains("could not stat /data"),
            "{}",
            disk.reason
        );
        assert!(f.ram.unwrap_err().reason.contains("is NaN"));
        assert!(
            f.crons[0]
                .clone()
                .unwrap_err()
                .reason
                .contains("is inf, not a time")
        );
        assert!(
            f.crons[1]
                .clone()
                .unwrap_err()
                .reason
                .contains("node_textfile_scrape_error is 1")
        );
        h.disk_path = "/nowhere".into();
        let f = facts_from_text(&h, text);
        let disk = f.disk_free_bytes.unwrap_err();
        assert!(
            disk.reason
                .starts_with("node_filesystem_avail_bytes{mountpoint=\"/nowhere\"} missing"),
            "{}",
            disk.reason
        );
    }

    #[test]
    fn garbage_fails_every_fact_with_one_reason() {
        let f = facts_from_text(&host(), "<html>Not Found</html>\n");
        let ram = f.ram.unwrap_err();
        assert_eq!(ram.asc, Asc::INTEGRITY_CHECK_FAILED);
        assert!(
            ram.reason.starts_with(
                "node_exporter reply holds no Prometheus samples: 1 unparseable line (line 1:"
            ),
            "{}",
            ram.reason
        );
        assert_eq!(f.disk_free_bytes.unwrap_err(), ram);
        assert_eq!(f.services[0].clone().unwrap_err(), ram);
        let f = facts_from_text(&host(), "");
        assert!(f.ram.unwrap_err().reason.ends_with("an empty reply"));
    }
}
