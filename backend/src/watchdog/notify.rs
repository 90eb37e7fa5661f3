//! systemd's service notifications (`sd_notify(3)`), for `Type=notify` units: `READY=1` once
//! the first snapshot is written, `WATCHDOG=1` after each good write (systemd restarts a
//! collector that stops writing), `RELOADING=1` on SIGHUP, `STOPPING=1` on shutdown.
//!
//! The protocol is one datagram per message to the unix socket named by `NOTIFY_SOCKET` (a
//! path, or `@name` in the abstract namespace): a few lines, so no crate. Without
//! `NOTIFY_SOCKET` (not under systemd, or not `Type=notify`) every call does nothing.

use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::Arc;
use std::time::Duration;

/// Where notifications go; cheap to clone, and a no-op when systemd did not ask for them.
#[derive(Clone, Default)]
pub struct Notifier {
    inner: Option<Arc<Inner>>,
    /// The watchdog interval systemd asked for (`WATCHDOG_USEC`, for this very process).
    watchdog: Option<Duration>,
}

struct Inner {
    socket: UnixDatagram,
    addr: SocketAddr,
}

impl Notifier {
    /// A notifier that sends nothing (the demo, tests, a run outside systemd).
    pub fn none() -> Notifier {
        Notifier::default()
    }

    /// Reads `NOTIFY_SOCKET` and `WATCHDOG_USEC` / `WATCHDOG_PID` from the environment. A
    /// socket that cannot be used is logged once and leaves notifications off: systemd then
    /// says the start timed out, which points at this line.
    pub fn from_env() -> Notifier {
        let watchdog = watchdog_interval(
            std::env::var("WATCHDOG_USEC").ok().as_deref(),
            std::env::var("WATCHDOG_PID").ok().as_deref(),
            std::process::id(),
        );
        let Some(name) = std::env::var_os("NOTIFY_SOCKET") else {
            return Notifier::default();
        };
        match open(&name.to_string_lossy()) {
            Ok(inner) => Notifier {
                inner: Some(Arc::new(inner)),
                watchdog,
            },
            Err(e) => {
                tracing::error!(
                    "NOTIFY_SOCKET={}: cannot use it ({e}); systemd will not hear that \
                     fleetdash is ready",
                    name.to_string_lossy()
                );
                Notifier::default()
            }
        }
    }

    /// The watchdog interval systemd enforces, when it does.
    pub fn watchdog_interval(&self) -> Option<Duration> {
        self.inner.as_ref().and(self.watchdog)
    }

    pub fn ready(&self) {
        self.send("READY=1\nSTATUS=collecting");
    }

    /// A good pass: only sent when systemd watches (`WatchdogSec=` set).
    pub fn watchdog(&self) {
        if self.watchdog.is_some() {
            self.send("WATCHDOG=1");
        }
    }

    /// A reload has begun; [`Notifier::ready`] ends it.
    pub fn reloading(&self) {
        self.send(&format!(
            "RELOADING=1\nMONOTONIC_USEC={}\nSTATUS=reloading the config",
            monotonic_usec()
        ));
    }

    pub fn stopping(&self) {
        self.send("STOPPING=1\nSTATUS=stopping");
    }

    /// One datagram; non-blocking (a full socket buffer loses a notification, never stalls
    /// the runtime), a failure logged and otherwise ignored.
    fn send(&self, message: &str) {
        let Some(inner) = &self.inner else { return };
        if let Err(e) = inner.socket.send_to_addr(message.as_bytes(), &inner.addr) {
            tracing::warn!("cannot notify systemd ({message:?}): {e}");
        }
    }
}

fn open(name: &str) -> std::io::Result<Inner> {
    let addr = if let Some(abstract_name) = name.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt;
        SocketAddr::from_abstract_name(abstract_name.as_bytes())?
    } else if name.starts_with('/') {
        SocketAddr::from_pathname(name)?
    } else {
        // vsock addresses (`vsock:CID:PORT`, for VMs) are not supported.
        return Err(std::io::Error::other(
            "not a unix socket path or @abstract name",
        ));
    };
    let socket = UnixDatagram::unbound()?;
    socket.set_nonblocking(true)?;
    Ok(Inner { socket, addr })
}

/// `sd_watchdog_enabled(3)`: the interval, when `WATCHDOG_USEC` is set and `WATCHDOG_PID` is
/// unset or this process.
fn watchdog_interval(usec: Option<&str>, pid: Option<&str>, me: u32) -> Option<Duration> {
    let usec: u64 = usec?.trim().parse().ok().filter(|&u| u > 0)?;
    if let Some(pid) = pid
        && pid.trim().parse::<u32>().ok() != Some(me)
    {
        return None;
    }
    Some(Duration::from_micros(usec))
}

fn monotonic_usec() -> u128 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    now.tv_sec as u128 * 1_000_000 + now.tv_nsec as u128 / 1_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watchdog_is_for_the_process_it_names() {
        assert_eq!(
            watchdog_interval(Some("30000000"), None, 7),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            watchdog_interval(Some("30000000"), Some("7"), 7),
            Some(Duration::from_secs(30))
        );
        assert_eq!(watchdog_interval(Some("30000000"), Some("8"), 7), None);
        assert_eq!(watchdog_interval(Some("0"), None, 7), None);
        assert_eq!(watchdog_interval(Some("soon"), None, 7), None);
        assert_eq!(watchdog_interval(None, None, 7), None);
    }

    #[test]
    fn messages_arrive_as_datagrams_on_a_path_and_an_abstract_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let listener = UnixDatagram::bind(&path).unwrap();
        let inner = open(path.to_str().unwrap()).unwrap();
        let notifier = Notifier {
            inner: Some(Arc::new(inner)),
            watchdog: Some(Duration::from_secs(1)),
        };
        notifier.ready();
        notifier.watchdog();
        let mut buf = [0u8; 256];
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1\nSTATUS=collecting");
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"WATCHDOG=1");

        use std::os::linux::net::SocketAddrExt;
        let name = format!("fleetdash-notify-test-{}", std::process::id());
        let listener =
            UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
                .unwrap();
        let notifier = Notifier {
            inner: Some(Arc::new(open(&format!("@{name}")).unwrap())),
            watchdog: None,
        };
        // No watchdog asked for: no WATCHDOG=1.
        notifier.watchdog();
        notifier.stopping();
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"STOPPING=1\nSTATUS=stopping");
    }
}
