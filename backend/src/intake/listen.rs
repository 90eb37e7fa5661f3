//! The intake's accept loop (issue 21): what `axum::serve` does, plus the bounds a server that
//! agents reach must hold whoever connects.
//!
//! - A request's headers must arrive within `[intake] header_timeout`: a client sending them a
//!   byte at a time (slowloris) is cut, as a slow body already is (`body_timeout`).
//! - One peer address holds at most `max_connections_per_peer` connections, and the intake at
//!   most `max_connections` in all: past either, a new connection is closed at once, so that no
//!   peer can hold the intake, nor the open files the snapshot writer needs.
//! - Whatever `max_connections` says, the intake holds at most half the process's open-files
//!   limit ([`connection_ceiling`]): under a lowered limit (a unit's `LimitNOFILE`, a shell's
//!   `ulimit -n`) the other half stays for the collector's snapshot writes, databases, probes
//!   and the dashboard.
//! - At shutdown, no new connection is taken and the open ones finish their request.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The bounds the loop holds.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub header_timeout: Duration,
    pub per_peer: usize,
    pub total: usize,
}

/// The connections the intake may hold: `configured`, but at most half of `open_files` (the
/// process's soft `RLIMIT_NOFILE`, `None` when unlimited or unknown), and at least one. Said
/// when it lowers the configured number.
pub fn connection_ceiling(configured: usize, open_files: Option<u64>) -> (usize, Option<String>) {
    let Some(limit) = open_files else {
        return (configured, None);
    };
    let half = usize::try_from(limit / 2).unwrap_or(usize::MAX).max(1);
    if configured <= half {
        return (configured, None);
    }
    (
        half,
        Some(format!(
            "[intake] max_connections {configured} lowered to {half}: half the process's \
             open-files limit ({limit}) stays for the collector; raise the limit (LimitNOFILE=) \
             to hold more"
        )),
    )
}

/// The process's soft open-files limit, if it has one.
pub fn open_files_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

/// Open connections, by peer address.
#[derive(Default)]
struct Open {
    by_peer: HashMap<IpAddr, usize>,
    total: usize,
}

/// One open connection's place, given back when it closes.
struct Slot {
    open: Arc<Mutex<Open>>,
    peer: IpAddr,
}

impl Slot {
    /// A place for a connection from `peer`, if the bounds leave one.
    fn take(open: &Arc<Mutex<Open>>, peer: IpAddr, bounds: &Bounds) -> Option<Slot> {
        let mut o = open.lock().unwrap_or_else(|p| p.into_inner());
        let mine = o.by_peer.get(&peer).copied().unwrap_or(0);
        if mine >= bounds.per_peer || o.total >= bounds.total {
            return None;
        }
        *o.by_peer.entry(peer).or_insert(0) += 1;
        o.total += 1;
        Some(Slot {
            open: open.clone(),
            peer,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut o = self.open.lock().unwrap_or_else(|p| p.into_inner());
        o.total = o.total.saturating_sub(1);
        if let Some(n) = o.by_peer.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                o.by_peer.remove(&self.peer);
            }
        }
    }
}

/// Serves `app` on `listener` within `bounds` until `shutdown`; then waits for the open
/// connections to finish.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    bounds: Bounds,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let (total, lowered) = connection_ceiling(bounds.total, open_files_limit());
    if let Some(why) = lowered {
        tracing::warn!("intake: {why}");
    }
    let bounds = Bounds { total, ..bounds };
    let open = Arc::new(Mutex::new(Open::default()));
    let tracker = TaskTracker::new();
    loop {
        let (stream, peer): (tokio::net::TcpStream, SocketAddr) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors or a connection reset before it was taken: the
                    // loop goes on, after a breath so that it does not spin.
                    tracing::warn!("intake: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some(slot) = Slot::take(&open, peer.ip(), &bounds) else {
            tracing::warn!(%peer, "intake: too many open connections, one closed at once");
            drop(stream);
            continue;
        };
        // Agents' reports are answered at once, not after a delayed ACK.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set on a connection: {e}");
        }
        let service = TowerToHyperService::new(app.clone());
        let shutdown = shutdown.clone();
        tracker.spawn(async move {
            let _slot = slot;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(bounds.header_timeout);
            let connection = http.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            let finished = tokio::select! {
                finished = connection.as_mut() => finished,
                _ = shutdown.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = finished {
                tracing::debug!(%peer, "intake: a connection ended: {e}");
            }
        });
    }
    tracker.close();
    tracker.wait().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn slots_are_bounded_per_peer_and_in_all_and_given_back() {
        let open = Arc::new(Mutex::new(Open::default()));
        let bounds = Bounds {
            header_timeout: Duration::from_secs(1),
            per_peer: 2,
            total: 3,
        };
        let a = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
        let b = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        let a1 = Slot::take(&open, a, &bounds).unwrap();
        let a2 = Slot::take(&open, a, &bounds).unwrap();
        assert!(
            Slot::take(&open, a, &bounds).is_none(),
            "a third from one peer"
        );
        let b1 = Slot::take(&open, b, &bounds).unwrap();
        assert!(Slot::take(&open, b, &bounds).is_none(), "a fourth in all");
        drop(a1);
        assert!(
            Slot::take(&open, b, &bounds).is_some(),
            "a closed one's place is free"
        );
        drop((a2, b1));
        assert_eq!(open.lock().unwrap().total, 0);
        assert!(open.lock().unwrap().by_peer.is_empty());
    }

    #[test]
    fn the_intake_holds_at_most_half_the_open_files_limit() {
        assert_eq!(connection_ceiling(256, None), (256, None));
        assert_eq!(connection_ceiling(256, Some(1024)), (256, None));
        let (total, said) = connection_ceiling(256, Some(128));
        assert_eq!(total, 64);
        assert!(said.unwrap().contains("lowered to 64"));
        assert_eq!(connection_ceiling(256, Some(1)).0, 1);
    }
}
