//! `fleetdash serve`, the real binary, against the same assertions as the production nginx
//! config (tests/nginx.rs): auth on every path, only status.json and snapshot.html from
//! output_dir, no-cache + ETag, immutable hashed assets, gzip, 304 on If-None-Match.

mod serving;
mod support;

use serving::{Fixture, FleetdashServe};

#[test]
fn fleetdash_serve_matches_the_production_nginx_config() {
    let fx = Fixture::new();
    let server = FleetdashServe::start(&fx);
    serving::assert_serves_like_production(&server.addr, &fx);
}
