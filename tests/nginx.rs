//! The production nginx config (nginx/fleetdash.conf) under the real Debian nginx: started from
//! its own prefix on a free loopback port, serving the page as a host installs it (`fleetdash
//! page export`, nginx/README.md) and a real `fleetdash collect` output, checked with the same
//! assertions as `fleetdash serve`.

mod serving;
mod support;

use serving::{Fixture, Nginx, Page};

#[test]
fn nginx_serves_the_page_and_the_snapshot_like_production() {
    let fx = Fixture::with_page(Page::Exported);
    let nginx = Nginx::start(&fx);
    serving::assert_serves_like_production(&nginx.addr, &fx);
    // Nothing in the run was worth a warning (a missing MIME type, a duplicate gzip type...).
    let log = nginx.error_log();
    assert!(
        !log.contains("[emerg]") && !log.contains("[warn]"),
        "nginx error.log:\n{log}"
    );
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
