//! The intake's accept loop (issue 21, issue 32): what `axum::serve` does, plus the bounds a
//! server that agents reach must hold whoever connects.
//!
//! - A request's headers must arrive within `[intake] header_timeout`: a client sending them a
//!   byte at a time (slowloris) is cut, as a slow body already is (`body_timeout`).
//! - Connections are shared out by token, not by address ([`super::pools`]): a small pool for
//!   those not yet authenticated, a share per caller and face after, `max_connections` in all.
//!   A connection closed to make room is dropped by its task here.
//! - Whatever `max_connections` says, the intake holds at most half the process's open-files
//!   limit ([`connection_ceiling`]): under a lowered limit (a unit's `LimitNOFILE`, a shell's
//!   `ulimit -n`) the other half stays for the collector's snapshot writes, databases, probes
//!   and the dashboard.
//! - At shutdown, no new connection is taken and the open ones finish their request.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt as _;

use super::pools::{Admitted, Limits, NoRoom, Pools};

/// The bounds the loop holds.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub header_timeout: Duration,
    pub pools: Limits,
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

/// Serves `app` on `listener` within `bounds` until `shutdown`; then waits for the open
/// connections to finish.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    bounds: Bounds,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let (total, lowered) = connection_ceiling(bounds.pools.total, open_files_limit());
    if let Some(why) = lowered {
        tracing::warn!("intake: {why}");
    }
    let pools = Pools::new(Limits {
        total,
        ..bounds.pools
    });
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
        // A pool full of connections too young to close: wait for one to speak (or come of
        // age) while the kernel's backlog holds the newcomers.
        let admitted = loop {
            match pools.admit(std::time::Instant::now()) {
                Ok(admitted) => break Ok(admitted),
                Err(NoRoom::Full) => break Err(NoRoom::Full),
                Err(wait @ NoRoom::Wait(d)) => tokio::select! {
                    _ = shutdown.cancelled() => break Err(wait),
                    _ = tokio::time::sleep(d) => {}
                    _ = pools.freed() => {}
                },
            }
        };
        let (place, admitted) = match admitted {
            Ok(admitted) => admitted,
            Err(NoRoom::Full) => {
                tracing::warn!(
                    %peer,
                    "intake: every connection is in a request ([intake] max_connections), a \
                     new one closed at once"
                );
                drop(stream);
                continue;
            }
            Err(NoRoom::Wait(_)) => break,
        };
        if let Admitted::Closed(released) = admitted {
            tracing::debug!(%peer, "intake: an idle connection closed to make room");
            // Its socket is let go before another is accepted: a flood never holds more
            // descriptors than the bound. Its task only has to notice (it was idle).
            let _ = tokio::time::timeout(Duration::from_secs(1), released.cancelled()).await;
        }
        // Agents' reports are answered at once, not after a delayed ACK.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set on a connection: {e}");
        }
        let handle = place.handle();
        let app = app
            .clone()
            .map_request(move |mut request: axum::extract::Request<_>| {
                request.extensions_mut().insert(handle.clone());
                request
            });
        let service = TowerToHyperService::new(app);
        let shutdown = shutdown.clone();
        tracker.spawn(async move {
            let closed = place.closed();
            let _place = place;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(bounds.header_timeout);
            let connection = http.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            let finished = tokio::select! {
                finished = connection.as_mut() => finished,
                // Made room for another: dropped where it stands (it was idle).
                _ = closed.cancelled() => Ok(()),
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
