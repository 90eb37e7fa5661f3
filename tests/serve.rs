//! `fleetdash serve`, the real binary, against the same assertions as the production nginx
//! config (tests/nginx.rs): auth on every path, only status.json and snapshot.html from
//! output_dir, no-cache + ETag, immutable hashed assets, gzip, 304 on If-None-Match. Then what
//! only `fleetdash serve` has to get right: a configuration mistake exits 2.

mod serving;
mod support;

use serving::{Fixture, FleetdashServe};
use support::Scratch;

#[test]
fn fleetdash_serve_matches_the_production_nginx_config() {
    let fx = Fixture::new();
    let server = FleetdashServe::start(&fx);
    serving::assert_serves_like_production(&server.addr, &fx);
}

/// `serve` without a usable htpasswd is a configuration error like any other: exit 2 and one
/// line naming the file and the field.
#[test]
fn serve_without_a_usable_htpasswd_exits_2() {
    let scratch = Scratch::new();
    let missing = scratch.path().join("nowhere/htpasswd");
    let weak = scratch.path().join("weak.htpasswd");
    std::fs::write(&weak, "young:$apr1$abc$def\n").unwrap();
    let cases = [
        (String::new(), "serve.htpasswd: not set".to_string()),
        (
            format!("[serve]\nhtpasswd = {:?}\n", missing.display().to_string()),
            format!("serve.htpasswd: cannot read {}", missing.display()),
        ),
        (
            format!("[serve]\nhtpasswd = {:?}\n", weak.display().to_string()),
            format!("{}:1: user \"young\" has a non-bcrypt hash", weak.display()),
        ),
    ];
    for (body, expected) in cases {
        let config = scratch.config(&body);
        let out = support::fleetdash()
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(&config)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{body:?}: {stderr}");
        assert!(stderr.contains(&expected), "{body:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    }
}
