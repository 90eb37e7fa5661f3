//! The commands a newcomer starts with, before trusting fleetdash with a fleet: `rules show`
//! (the rules in force, as a file to start one from), `alerts test` (each channel proved
//! wired before a real red) and `report` (what the fleet did since a moment, as the morning
//! report says it). Beside `app`, in its layer, each wiring what lies below.

use std::path::Path;

use anyhow::Context;

use crate::alerting::trial::{self, Outcome};
use crate::app::{Done, Failure, load};
use crate::config::{self, ConfigErrors, Rules};

/// `fleetdash rules show [--config FILE]`: the built-in rules file as shipped, comments and
/// all; with a config, the rules in force (the rules file's groups in place of the built-in
/// ones), still one valid rules file. Either parses back to the rules it shows.
pub fn rules_show(path: Option<&Path>) -> Result<Done, Failure> {
    let Some(path) = path else {
        let origin = Rules::built_in()
            .map_err(|errors| Failure::Config {
                errors,
                list_all: true,
            })?
            .origin;
        let text = config::BUILTIN_RULES.to_string();
        return Ok(Done::ok(
            text.clone(),
            serde_json::json!({ "rules": origin, "yaml": text }),
        ));
    };
    let (config, rules) = load(path)?;
    let given = match &config.rules_path {
        Some(file) => Some((
            file.clone(),
            std::fs::read_to_string(file)
                .with_context(|| format!("cannot read the rules file {}", file.display()))?,
        )),
        None => None,
    };
    let body = config::effective_rules_text(given.as_ref().map(|(f, t)| (f.as_path(), t.as_str())))
        .map_err(|errors: ConfigErrors| Failure::Config {
            errors,
            list_all: true,
        })?;
    let text = format!(
        "# The rules in force for {}: {}.\n# A rules file needs only the groups it changes, \
         each whole; the others stay built in.\n\n{body}",
        path.display(),
        rules.origin.words()
    );
    Ok(Done::ok(
        text.clone(),
        serde_json::json!({ "config": path, "rules": rules.origin, "yaml": text }),
    ))
}

/// `fleetdash alerts test [CHANNEL] --config FILE`: a test notification through each channel
/// (or CHANNEL), through the test outbox ([`trial`]); one line per channel, exit 0 when every
/// one delivered, 1 otherwise. An unknown CHANNEL is a usage error naming those there are.
pub async fn alerts_test(path: &Path, channel: Option<&str>) -> Result<Done, Failure> {
    let (config, rules) = load(path)?;
    let mut providers = crate::alerting::provider::build(&config, &rules.alerts).all;
    let names: Vec<String> = providers.iter().map(|p| p.name().to_string()).collect();
    if names.is_empty() {
        eprintln!(
            "fleetdash: alerts test: {} has no alert channel; add one, e.g. \
             `[[alerts.channels]]` with `type = \"ntfy\"` and `url` (docs/alerts.md), or \
             `fleetdash init --ntfy URL`",
            path.display()
        );
        return Err(Failure::Exit(1));
    }
    if let Some(wanted) = channel {
        if !names.iter().any(|n| n == wanted) {
            eprintln!(
                "fleetdash: alerts test: no channel {wanted:?} in {}; its channels: {}",
                path.display(),
                names.join(", ")
            );
            return Err(Failure::Exit(2));
        }
        providers.retain(|p| p.name() == wanted);
    }
    let tried = trial::send(&config, &rules, providers, chrono::Utc::now()).await?;
    let width = tried.iter().map(|t| t.channel.len()).max().unwrap_or(0);
    let mut text = String::new();
    for t in &tried {
        let detail = match &t.outcome {
            Outcome::Delivered => "the channel took it".to_string(),
            Outcome::Refused(reason) => {
                format!("{reason}; a real alert would be given up the same way")
            }
            Outcome::Retrying { reason, retry_at } => format!(
                "{reason}; a real alert would be tried again{}, backing off (this test is not)",
                retry_at.map_or(String::new(), |at| format!(
                    " from {}",
                    at.format("%H:%M:%S UTC")
                ))
            ),
        };
        text.push_str(&format!(
            "{:<width$}  {:<9}  {detail}\n",
            t.channel,
            t.outcome.word()
        ));
    }
    let delivered = tried
        .iter()
        .filter(|t| t.outcome == Outcome::Delivered)
        .count();
    text.push_str(&format!(
        "{}: {delivered} of {} channels delivered the test\n",
        path.display(),
        tried.len()
    ));
    let all = delivered == tried.len();
    Ok(Done {
        text,
        result: serde_json::json!({
            "channels": tried.iter().map(|t| {
                let (reason, retry_at) = match &t.outcome {
                    Outcome::Delivered => (None, None),
                    Outcome::Refused(r) => (Some(r.clone()), None),
                    Outcome::Retrying { reason, retry_at } => (Some(reason.clone()), *retry_at),
                };
                serde_json::json!({
                    "channel": t.channel,
                    "outcome": t.outcome.word(),
                    "reason": reason,
                    "retry_at": retry_at,
                })
            }).collect::<Vec<_>>(),
            "delivered": delivered,
        }),
        status: if all {
            fleetdash_model::Asc::SUCCESS
        } else {
            fleetdash_model::Asc::DEPENDENCY_UNAVAILABLE
        },
        exit: if all { 0 } else { 1 },
    })
}

/// `fleetdash report [--since DUR|TIME] [--json]`: the report of the time since `since` (a
/// span back from now, "8h"; a time of day, "07:30", the last one passed, in `[report]`'s
/// zone or this host's; or an RFC 3339 moment), by default since the last scheduled report
/// ended, else the last 24 h. Read only: it sends nothing and moves no schedule.
pub async fn report(path: &Path, since: Option<&str>) -> Result<Done, Failure> {
    let (config, rules) = load(path)?;
    let now = chrono::Utc::now();
    let since = match since {
        Some(text) => Some(parse_since(&config, text, now).map_err(|e| {
            eprintln!("fleetdash: report: --since {text:?}: {e}");
            Failure::Exit(2)
        })?),
        None => None,
    };
    let report = tokio::task::spawn_blocking(move || {
        let since = since.unwrap_or_else(|| crate::report::default_since(&config, now));
        crate::report::on_demand(&config, &rules, since, now)
    })
    .await
    .context("the report's thread")??;
    let result = serde_json::to_value(&report).context("the report as JSON")?;
    Ok(Done::ok(report.text(), result))
}

/// `--since`: "8h" (back from now), "07:30" (the last such time passed, in the report's zone)
/// or an RFC 3339 moment.
fn parse_since(
    config: &config::Config,
    text: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<chrono::DateTime<chrono::Utc>, String> {
    if let Ok(span) = humantime::parse_duration(text) {
        if span > crate::clock::HORIZON {
            return Err(format!(
                "{} back is further than fleetdash keeps anything (366 d)",
                humantime::format_duration(span)
            ));
        }
        let span = chrono::Duration::from_std(span).map_err(|e| e.to_string())?;
        return Ok(now - span);
    }
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(text) {
        if at > now {
            return Err("a moment after now: a report covers what has happened".into());
        }
        return Ok(at.to_utc());
    }
    if let Ok(time) = chrono::NaiveTime::parse_from_str(text, "%H:%M") {
        let offset = crate::report::zone_at(config, now).1;
        let local = now.with_timezone(&offset);
        let mut at = local.date_naive().and_time(time);
        if at > local.naive_local() {
            at -= chrono::Duration::days(1);
        }
        return Ok((at - offset).and_utc());
    }
    Err(
        "expected a span back from now (\"8h\"), a time of day (\"07:30\") or an RFC 3339 \
         moment"
            .into(),
    )
}
