//! Tunnel probes against real TCP sockets on loopback: a listener (up), a port bound then
//! released (refused) and a listener whose accept queue is full (blackholed: Linux drops the
//! SYNs, so the connect hangs until the probe's deadline). Then the same three through the
//! binary, into status.json.

use crate::support;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use fleetdash::collect::tunnels::{TunnelsCollector, connect};
use fleetdash::config::Config;
use fleetdash_model::{Asc, Band, Probe};
use socket2::{Domain, Socket, Type};
use support::Scratch;

const TIMEOUT: Duration = Duration::from_secs(1);

/// A loopback port with nothing listening: bound, then released.
fn refused_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// A listener that never answers a new connection: its accept backlog is 0 and already holds
/// a connection nobody accepts, so the kernel drops further SYNs (no RST, no SYN-ACK).
struct Blackhole {
    addr: SocketAddr,
    _listener: Socket,
    _queued: Vec<TcpStream>,
}

impl Blackhole {
    fn new() -> Blackhole {
        let listener = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        listener.bind(&any.into()).unwrap();
        listener.listen(0).unwrap();
        let addr = listener.local_addr().unwrap().as_socket().unwrap();
        // Fill the queue until a connect goes unanswered; how many fit depends on the kernel
        // (Linux: backlog + 1).
        let mut queued = Vec::new();
        for _ in 0..16 {
            match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
                Ok(s) => queued.push(s),
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    return Blackhole {
                        addr,
                        _listener: listener,
                        _queued: queued,
                    };
                }
                Err(e) => panic!("filling the accept queue of {addr}: {e}"),
            }
        }
        panic!(
            "no blackhole on this machine: the kernel accepted {} connections to a listener with \
             backlog 0 that never accepts (expected it to drop SYNs once the queue is full)",
            queued.len()
        );
    }
}

fn config_text(up: SocketAddr, refused: SocketAddr, blackholed: SocketAddr) -> String {
    format!(
        "[[hosts]]\nname = \"laptop\"\n\n\
         [[hosts.tunnels]]\nname = \"lab\"\naddress = \"{up}\"\n\n\
         [[hosts.tunnels]]\nname = \"prod\"\naddress = \"{refused}\"\n\n\
         [[hosts.tunnels]]\nname = \"backup\"\naddress = \"{blackholed}\"\n"
    )
}

#[tokio::test]
async fn connect_says_up_refused_or_silent() {
    let up = TcpListener::bind("127.0.0.1:0").unwrap();
    connect(&up.local_addr().unwrap().to_string(), TIMEOUT)
        .await
        .unwrap();

    let refused = refused_port().to_string();
    let err = connect(&refused, TIMEOUT).await.unwrap_err();
    assert_eq!(err.asc, Asc::DEPENDENCY_UNAVAILABLE);
    assert!(err.reason.contains("connection refused"), "{}", err.reason);

    let hole = Blackhole::new();
    let started = Instant::now();
    let result = connect(&hole.addr.to_string(), TIMEOUT).await;
    let took = started.elapsed();
    eprintln!("blackholed connect with a {TIMEOUT:?} timeout took {took:?}");
    let err = result.expect_err("the kernel answered a connect to the full accept queue");
    // The probe's own deadline ended it (the kernel's would have said "timed out" after
    // minutes of SYN retries), and never before the deadline.
    assert_eq!(err.asc, Asc::TIMEOUT, "{err:?}");
    assert!(err.reason.contains("no answer within 1s"), "{}", err.reason);
    assert!(took >= TIMEOUT, "gave up before its deadline: {took:?}");
}

/// However many tunnels hang, a pass costs one probe timeout, not one per tunnel: on tokio's
/// paused clock the three blackholed connects end at the same virtual instant, the deadline.
/// (Virtual time: nothing here depends on how busy the machine is.)
#[tokio::test(start_paused = true)]
async fn hung_tunnels_are_probed_concurrently() {
    let hole = Blackhole::new();
    let tunnels: String = ["a", "b", "c"]
        .iter()
        .map(|name| {
            format!(
                "[[hosts.tunnels]]\nname = \"{name}\"\naddress = \"{}\"\n\n",
                hole.addr
            )
        })
        .collect();
    let text = format!(
        "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n\n[probe]\ntimeout = \"1s\"\n\n\
         [[hosts]]\nname = \"laptop\"\n\n{tunnels}"
    );
    let config = Config::parse(Path::new("fleetdash.toml"), &text).unwrap();
    let started = tokio::time::Instant::now();
    let hosts = TunnelsCollector::new(&config).probe_all().await;
    let took = started.elapsed();
    let reasons: Vec<Option<&str>> = hosts[0]
        .tunnels
        .iter()
        .map(|t| t.ok.error_reason())
        .collect();
    assert!(
        reasons
            .iter()
            .all(|r| r.is_some_and(|r| r.contains("no answer within 1s"))),
        "every blackholed tunnel timed out: {reasons:?}"
    );
    assert_eq!(
        took, TIMEOUT,
        "one deadline for the whole pass, on the virtual clock"
    );
}

#[tokio::test]
async fn collector_rows_in_config_order() {
    let up = TcpListener::bind("127.0.0.1:0").unwrap();
    let refused = refused_port();
    let hole = Blackhole::new();
    let text = format!(
        "output_dir = \"o\"\nstate_dir = \"s\"\nrules = \"r\"\n\n[probe]\ntimeout = \"1s\"\n\n{}",
        config_text(up.local_addr().unwrap(), refused, hole.addr)
    );
    let config = Config::parse(Path::new("fleetdash.toml"), &text).unwrap();

    let hosts = TunnelsCollector::new(&config).probe_all().await;

    assert_eq!(hosts.len(), 1);
    assert_eq!(
        (hosts[0].host.as_str(), hosts[0].source.as_str()),
        ("laptop", "local")
    );
    let rows = &hosts[0].tunnels;
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["lab", "prod", "backup"]);

    assert_eq!(rows[0].ok, Probe::Value(true));
    assert_eq!(rows[0].reason, None);

    // Refused is an answer: down for sure.
    assert_eq!(rows[1].ok, Probe::Value(false));
    let why = rows[1].reason.as_deref().unwrap();
    assert!(why.contains("connection refused"), "{why}");
    assert!(why.contains(&refused.to_string()), "{why}");

    // Silence is not an answer: the probe itself failed.
    let Probe::Error(why) = &rows[2].ok else {
        panic!(
            "the blackholed tunnel answered: {:?} (the kernel did not drop the SYN)",
            rows[2]
        );
    };
    assert!(why.contains("no answer within 1s"), "{why}");
    assert_eq!(rows[2].reason.as_deref(), Some(why.as_str()));
    // Only the tunnel that gave no answer is stale: a refusal is a fresh, certain reading.
    let stale: Vec<bool> = rows.iter().map(|r| r.stale).collect();
    assert_eq!(stale, [false, false, true]);
}

#[test]
fn collect_writes_the_tunnels_into_the_hosts_row() {
    let up = TcpListener::bind("127.0.0.1:0").unwrap();
    let refused = refused_port();
    let hole = Blackhole::new();
    let scratch = Scratch::new();
    let config = scratch.config(&config_text(up.local_addr().unwrap(), refused, hole.addr));

    let out = scratch.collect(&config);
    assert!(
        out.status.success(),
        "collect failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let snapshot = scratch.snapshot();
    let Probe::Value(systems) = &snapshot.systems else {
        panic!("systems: {:?}", snapshot.systems);
    };
    assert_eq!(systems.len(), 1);
    let row = &systems[0];
    assert_eq!(row.host, "laptop");
    let tunnels: Vec<(&str, &Probe<bool>)> = row
        .tunnels
        .iter()
        .map(|t| (t.name.as_str(), &t.ok))
        .collect();
    assert_eq!(tunnels.len(), 3, "{:?}", row.tunnels);
    assert_eq!(tunnels[0], ("lab", &Probe::Value(true)));
    assert_eq!(tunnels[1], ("prod", &Probe::Value(false)));
    assert_eq!(tunnels[2].0, "backup");
    assert!(
        tunnels[2]
            .1
            .error_reason()
            .is_some_and(|r| r.contains("no answer within 2s")),
        "{:?}",
        tunnels[2]
    );

    assert_eq!(row.band, Band::Red, "{row:?}");
    let reason = row.reason.as_deref().unwrap();
    assert!(
        reason.contains(&format!("tunnel prod: {refused}: connection refused")),
        "{reason}"
    );
    assert!(reason.contains("tunnel backup: "), "{reason}");
    assert!(!reason.contains("tunnel lab"), "{reason}");
}

/// Tunnel names holding every shape glued to each kind of neighbour (issue 21): through two
/// `fleetdash collect` passes (up, then refused, so the bands change and the reasons and
/// transitions name them), nothing of them in any file fleetdash writes or in its log.
#[test]
fn glued_secrets_in_tunnel_names_reach_no_file_and_no_log() {
    use support::secrets::{GLUED, find_secret};
    let up = TcpListener::bind("127.0.0.1:0").unwrap();
    let refused = refused_port();
    let scratch = Scratch::new();
    let config_to = |address: SocketAddr| {
        let mut body = String::from("[[hosts]]\nname = \"laptop\"\n\n");
        for g in GLUED.iter() {
            body += &format!(
                "[[hosts.tunnels]]\nname = {}\naddress = \"{address}\"\n\n",
                serde_json::to_string(&g.value).unwrap()
            );
        }
        scratch.config(&body)
    };
    let collect = |config: &Path| {
        let out = support::fleetdash()
            .args(["collect", "--config"])
            .arg(config)
            .env("FLEETDASH_LOG", "debug")
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{log}");
        if let Some(found) = find_secret(&log) {
            panic!("{found} leaked into the log:\n{log}");
        }
    };
    collect(&config_to(up.local_addr().unwrap()));
    collect(&config_to(refused));

    let written: Vec<_> = ["out", "state"]
        .iter()
        .flat_map(|d| support::files_under(&scratch.path().join(d)))
        .collect();
    assert!(
        written.iter().any(|p| p.ends_with("transitions.json")),
        "{written:?}"
    );
    for path in written {
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        if let Some(found) = find_secret(&text) {
            panic!("{found} leaked into {}:\n{text}", path.display());
        }
    }

    // The names were there, redacted rather than dropped.
    let snapshot = scratch.snapshot();
    let Probe::Value(systems) = &snapshot.systems else {
        panic!("systems: {:?}", snapshot.systems);
    };
    let row = &systems[0];
    assert_eq!(row.tunnels.len(), GLUED.len(), "{row:?}");
    assert!(
        row.tunnels
            .iter()
            .all(|t| t.name.contains("[redacted]") && t.ok == Probe::Value(false)),
        "{:?}",
        row.tunnels
    );
}
