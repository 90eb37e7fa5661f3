//! A simulated agent (`fleetdash::demo::sim`) behind an accept loop of the test's own, which
//! decides for each connection, in the order they come, whether the agent answers it or resets
//! it unanswered (as a dead process's port refuses it): an agent that drops one probe, or dies
//! in the middle of a pass. It counts what it got, so a test asserts how many probes came and
//! in what order, never how fast.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use fleetdash::a2a::Wire;
use fleetdash::demo::sim::{self, SimAgent};

/// What happened to one connection, in arrival order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Answered (a card GET or a heartbeat, whatever it asked).
    Answered,
    /// Reset before anything was read from it.
    Reset,
}

/// The agent, on a runtime of its own (one worker thread), stopped with it on drop.
pub struct Flaky {
    pub endpoint: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Flaky {
    /// An agent named `name` that answers connection `i` (0 the first) when `answers(i)`.
    pub fn start(name: &str, answers: impl Fn(usize) -> bool + Send + Sync + 'static) -> Flaky {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        // Bound here (a test's own runtime may be running on this thread), served there.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let endpoint = format!("http://{}/", listener.local_addr().unwrap());
        let router = sim::single_router(SimAgent::healthy(name, Wire::V1), endpoint.clone());
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = seen.clone();
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let seen = {
                    let mut log = log.lock().unwrap();
                    let seen = if answers(log.len()) {
                        Seen::Answered
                    } else {
                        Seen::Reset
                    };
                    log.push(seen);
                    seen
                };
                if seen == Seen::Reset {
                    let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
                    drop(stream);
                    continue;
                }
                let service = hyper_util::service::TowerToHyperService::new(router.clone());
                tokio::spawn(async move {
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
        Flaky {
            endpoint,
            seen,
            runtime: Some(runtime),
        }
    }

    /// Every connection so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Flaky {
    /// Stops its runtime without waiting (allowed from within a test's own runtime).
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
