//! The production nginx config (nginx/fleetdash.conf) under the real Debian nginx: started from
//! its own prefix on a free loopback port, serving the page as a host installs it (`fleetdash
//! page export`, nginx/README.md) and a real `fleetdash collect` output, checked with the same
//! assertions as `fleetdash serve`.

use crate::serving;
use crate::support;

use serde_json::Value;
use serving::{Fixture, Nginx, Page};

/// Nothing in the run was worth a warning in nginx's error log (a missing MIME type, a duplicate
/// gzip type, a directive of a module not loaded...).
fn assert_nothing_worth_a_warning(nginx: &Nginx) {
    let log = nginx.error_log();
    assert!(
        !log.contains("[emerg]") && !log.contains("[warn]"),
        "nginx error.log:\n{log}"
    );
}

#[test]
fn nginx_serves_the_page_and_the_snapshot_like_production() {
    let fx = Fixture::with_page(Page::Exported);
    let nginx = Nginx::start(&fx);
    serving::assert_serves_like_production(&nginx.addr, &fx);
    serving::assert_serves_the_app_manifest(&nginx.addr, &fx);
    serving::assert_serves_the_first_html(&nginx.addr, &fx);
    assert_nothing_worth_a_warning(&nginx);
}

/// Issue 35: where Debian's brotli_static module is installed and nginx/brotli.conf is in
/// /etc/nginx/fleetdash.d/ (docs/install.md), the production block answers the page's `.br` to
/// a client that takes brotli, the `.gz` to one that takes gzip only or says `br;q=0`, the file
/// to one that takes neither; Vary on each, each its own length and tag. And the rest of
/// production's assertions hold with the module loaded.
#[test]
fn nginx_with_the_brotli_module_answers_brotli_gzip_or_the_file() {
    let fx = Fixture::with_page(Page::Exported);
    let nginx = Nginx::start_with(&fx, true);
    serving::assert_negotiates_brotli_and_gzip(&nginx.addr, &fx, true);
    serving::assert_serves_like_production(&nginx.addr, &fx);
    assert_nothing_worth_a_warning(&nginx);
}

/// Issue 35: nginx without the brotli module (nothing in /etc/nginx/fleetdash.d/) starts on the
/// same block and answers gzip or the file, never brotli, though the page holds `.br` files.
#[test]
fn nginx_without_the_brotli_module_answers_gzip_or_the_file() {
    let fx = Fixture::with_page(Page::Exported);
    let nginx = Nginx::start(&fx);
    serving::assert_negotiates_brotli_and_gzip(&nginx.addr, &fx, false);
}

/// Issue 32: the production block sends the page's headers on every answer, with the policy
/// of the page it serves (`fleetdash page export`: the committed page/). A page rebuilt without
/// updating the block's script hash fails here (scripts/build-frontend --update rewrites it).
#[test]
fn nginx_sends_the_pages_security_headers_on_every_answer() {
    let fx = Fixture::with_page(Page::Exported);
    let nginx = Nginx::start(&fx);
    serving::assert_sends_the_pages_security_headers(&nginx.addr, &fx);
}

#[test]
fn nginx_config_has_one_listen_and_the_install_binds_loopback() {
    let conf = std::fs::read_to_string(support::repo_root().join("nginx/fleetdash.conf")).unwrap();
    let listens: Vec<&str> = conf
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("listen "))
        .collect();
    assert_eq!(
        listens,
        ["listen {{LISTEN}};"],
        "one listen, the placeholder"
    );
    // The documented install substitutes a loopback address.
    let readme = std::fs::read_to_string(support::repo_root().join("nginx/README.md")).unwrap();
    assert!(
        readme.contains("s|{{LISTEN}}|127.0.0.1:"),
        "README's sed line"
    );
}

/// The phone's action buttons through the production block: `/act` reaches `fleetdash run`'s
/// intake with no login (the ntfy app sends none), a good signed link is done once, a garbled
/// one refused by fleetdash (403, its problem+json), and every other path still asks for the
/// password.
#[test]
fn nginx_passes_the_phones_act_links_to_the_intake_without_the_login() {
    let mut fx = Fixture::with_page(Page::Exported);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    fx.intake = format!("127.0.0.1:{port}");
    let root = fx.scratch.path();
    let run_config = root.join("run.toml");
    std::fs::write(
        &run_config,
        format!(
            "output_dir = \"out-run\"\nstate_dir = \"state\"\nrules = \"rules.yaml\"\n\n\
             [intake]\nlisten = \"{}\"\n\n[work_queue]\ndb = \"state/tasks.db\"\n",
            fx.intake
        ),
    )
    .unwrap();
    let mut run = support::fleetdash()
        .args(["run", "--config"])
        .arg(&run_config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let nginx = Nginx::start(&fx);
    let deadline = std::time::Instant::now() + support::HANG_BUDGET;
    while std::net::TcpStream::connect(&fx.intake).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the intake never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let signer = fleetdash::alerting::phone::Signer::load_or_create(&root.join("state")).unwrap();
    let token = signer.token(
        "agent:vega",
        fleetdash::alerting::phone::Action::Silence,
        chrono::Utc::now() + chrono::Duration::hours(1),
    );
    let good = format!("/act?t={token}");
    let done = serving::request(&nginx.addr, "POST", &good, None);
    let replayed = serving::request(&nginx.addr, "POST", &good, None);
    let garbled = serving::request(&nginx.addr, "POST", "/act?t=garbled", None);
    let _ = run.kill();
    let _ = run.wait();
    assert_eq!(done.status, 200, "{}", String::from_utf8_lossy(&done.body));
    let body: Value = serde_json::from_slice(&done.decoded_body()).unwrap();
    assert_eq!(body["element"], "agent:vega", "{body:#}");
    let silences = std::fs::read_to_string(root.join("state/silences.json")).unwrap();
    assert!(silences.contains("from the phone"), "{silences}");
    for (what, reply, words) in [
        ("replayed", &replayed, "used already"),
        ("garbled", &garbled, "not an action link"),
    ] {
        assert_eq!(reply.status, 403, "{what}");
        assert_eq!(
            reply.header("content-type"),
            Some("application/problem+json"),
            "{what}: fleetdash's refusal, not nginx's"
        );
        let body: Value = serde_json::from_slice(&reply.decoded_body()).unwrap();
        assert_eq!(body["agent_status"]["name"], "PERMISSION_DENIED", "{what}");
        assert!(
            body["detail"].as_str().unwrap().contains(words),
            "{what}: {body:#}"
        );
    }
    for path in ["/act/", "/actx", "/api/status.json", "/"] {
        let reply = serving::request(&nginx.addr, "POST", path, None);
        assert_eq!(reply.status, 401, "{path} still needs the login");
    }
}
