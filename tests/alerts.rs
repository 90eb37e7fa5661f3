//! `fleetdash silence add / list / end` as an operator runs them: the silence kept in
//! state_dir's silences.json, listed while active, ended early, and bad usage refused with a
//! line saying why (exit 2). And `fleetdash ack KEY / --list / --end KEY`: an open alert
//! acknowledged, kept in state_dir's acks.json, and a key with no open alert refused (exit 1).

use crate::support;

use std::path::Path;
use std::process::Output;

use support::Scratch;

fn silence(config: &Path, args: &[&str]) -> Output {
    support::fleetdash()
        .arg("silence")
        .arg(args[0])
        .arg("--config")
        .arg(config)
        .args(&args[1..])
        .output()
        .unwrap()
}

fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_silence_is_added_listed_kept_in_state_dir_and_ended() {
    let scratch = Scratch::new();
    let config = scratch.config("");
    let out = silence(&config, &["list"]);
    support::assert_success(&out);
    assert_eq!(stdout_of(&out), "no active silences\n");

    let out = silence(
        &config,
        &[
            "add",
            "host=LAB",
            "kind=service",
            "--for",
            "2h",
            "--reason",
            "disk swap",
        ],
    );
    support::assert_success(&out);
    let line = stdout_of(&out);
    let id = line.split_whitespace().next().unwrap().to_string();
    assert!(line.contains("host=LAB kind=service  disk swap"), "{line}");

    let kept: serde_json::Value =
        serde_json::from_slice(&std::fs::read(scratch.path().join("state/silences.json")).unwrap())
            .unwrap();
    assert_eq!(kept["silences"][0]["id"], id.as_str());
    assert_eq!(kept["silences"][0]["reason"], "disk swap");

    let out = silence(&config, &["list"]);
    support::assert_success(&out);
    assert_eq!(stdout_of(&out), line);

    let out = silence(&config, &["end", &id]);
    support::assert_success(&out);
    assert!(stdout_of(&out).starts_with(&format!("ended {id}")));
    let out = silence(&config, &["list"]);
    assert_eq!(stdout_of(&out), "no active silences\n");

    let out = silence(&config, &["end", &id]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains("no active silence"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn a_bad_matcher_or_length_is_refused_with_exit_2_and_nothing_written() {
    let scratch = Scratch::new();
    let config = scratch.config("");
    let out = silence(&config, &["add", "LAB", "--for", "2h", "--reason", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr_of(&out).contains("silence add: \"LAB\": expected field=value"),
        "{}",
        stderr_of(&out)
    );
    let out = silence(
        &config,
        &["add", "host=lab", "--for", "soon", "--reason", "x"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(!scratch.path().join("state/silences.json").exists());
}

#[test]
fn list_shows_a_maintenance_window_open_now() {
    let scratch = Scratch::new();
    // Every day from midnight UTC for a whole day: open whenever the test runs.
    let config = scratch.config(
        "[alerts]\n[[alerts.maintenance]]\n\
         days = [\"mon\", \"tue\", \"wed\", \"thu\", \"fri\", \"sat\", \"sun\"]\n\
         from = \"00:00\"\nfor = \"24h\"\nmatch = [\"kind=cron\"]\nreason = \"always\"\n",
    );
    let out = silence(&config, &["list"]);
    support::assert_success(&out);
    let text = stdout_of(&out);
    assert!(text.starts_with("window  until "), "{text}");
    assert!(text.ends_with("  kind=cron  always\n"), "{text}");
}

#[test]
fn a_secret_in_the_reason_never_reaches_the_file() {
    let scratch = Scratch::new();
    let config = scratch.config("");
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    let out = silence(
        &config,
        &[
            "add",
            "agent=min",
            "--for",
            "1h",
            "--reason",
            &format!("rotating {jwt}"),
        ],
    );
    support::assert_success(&out);
    let text = std::fs::read_to_string(scratch.path().join("state/silences.json")).unwrap();
    assert!(!text.contains(jwt), "{text}");
    assert!(text.contains("rotating"), "{text}");
}

fn ack(config: &Path, args: &[&str]) -> Output {
    support::fleetdash()
        .arg("ack")
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap()
}

/// The alert engine's state with one open alert, for `key`, red since `since`: as `fleetdash
/// run` leaves it after a Firing.
fn open_alert(state_dir: &Path, key: &str, since: &str) {
    let state = serde_json::json!({
        "version": 1,
        "tracks": {
            key: {
                "red_passes": 4,
                "clear_passes": 0,
                "red_since": since,
                "clear_since": null,
                "open": {"since": since, "last": since, "reminders": 0, "takes_down": []},
                "seen": since,
                "kind": "agent",
                "name": "min",
            }
        },
        "readings": {},
    });
    std::fs::create_dir_all(state_dir).unwrap();
    std::fs::write(
        state_dir.join("alerts-engine.json"),
        serde_json::to_vec(&state).unwrap(),
    )
    .unwrap();
}

#[test]
fn an_open_alert_is_acked_listed_kept_in_state_dir_and_ended() {
    let scratch = Scratch::new();
    let config = scratch.config("");
    let state = scratch.path().join("state");
    let out = ack(&config, &["agent:min"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr_of(&out),
        "fleetdash: no open alert for \"agent:min\": no alert is open now\n"
    );
    assert!(!state.join("acks.json").exists());

    open_alert(&state, "agent:min", "2026-11-30T13:50:00Z");
    // Not the log's key: refused, saying what is open.
    let out = ack(&config, &["agent:MIN"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr_of(&out),
        "fleetdash: no open alert for \"agent:MIN\": open now: agent:min\n"
    );

    let out = ack(&config, &["agent:min"]);
    support::assert_success(&out);
    let line = stdout_of(&out);
    assert!(line.starts_with("agent:min  acked "), "{line}");
    assert!(
        line.ends_with("  cli  (alert since 2026-11-30 13:50 UTC)\n"),
        "{line}"
    );
    let kept: serde_json::Value =
        serde_json::from_slice(&std::fs::read(state.join("acks.json")).unwrap()).unwrap();
    assert_eq!(kept["version"], 1);
    assert_eq!(kept["acks"][0]["key"], "agent:min");
    assert_eq!(kept["acks"][0]["via"], "cli");
    assert_eq!(kept["acks"][0]["since"], "2026-11-30T13:50:00Z");

    let out = ack(&config, &["--list"]);
    support::assert_success(&out);
    assert_eq!(stdout_of(&out), line);

    let out = ack(&config, &["--json", "agent:min"]);
    support::assert_success(&out);
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(envelope["command"], "ack");
    assert_eq!(envelope["exit_code"], 0);

    let out = ack(&config, &["--end", "agent:min"]);
    support::assert_success(&out);
    assert!(stdout_of(&out).starts_with("ended agent:min  acked "));
    let out = ack(&config, &["--list"]);
    assert_eq!(stdout_of(&out), "no standing acks\n");
    let out = ack(&config, &["--end", "agent:min"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr_of(&out).contains("\"agent:min\" is not acked"),
        "{}",
        stderr_of(&out)
    );

    // The alert recovered and a new red run began: the old ack stands for nothing.
    let out = ack(&config, &["agent:min"]);
    support::assert_success(&out);
    open_alert(&state, "agent:min", "2026-11-30T15:00:00Z");
    let out = ack(&config, &["--list"]);
    assert_eq!(stdout_of(&out), "no standing acks\n");
    // No key and no --list: usage, exit 2.
    let out = ack(&config, &[]);
    assert_eq!(out.status.code(), Some(2));
}
