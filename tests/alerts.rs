//! `fleetdash silence add / list / end` as an operator runs them: the silence kept in
//! state_dir's silences.json, listed while active, ended early, and bad usage refused with a
//! line saying why (exit 2).

mod support;

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
