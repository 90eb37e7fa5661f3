//! Who holds the intake's connections (issue 32). Every agent behind an SSH tunnel arrives from
//! 127.0.0.1 (spec 003 §1.1), so an address says nothing about who is connecting: connections
//! are shared out by the token their requests carry instead.
//!
//! - A new connection joins a small pool of connections not yet authenticated
//!   (`max_unauthenticated_connections`). When that pool is full, its connection idle the
//!   longest (headers not yet read: a slowloris, or a client that never spoke) is closed to make
//!   room: a newcomer that sends its headers at once is never shut out by slow ones. A
//!   connection younger than [`GRACE`] is never the one closed: the accept loop waits for one
//!   to come of age (or speak), so that a burst of agents connecting together does not close
//!   each other before their headers are read.
//! - Once a request's token is read, the connection belongs to that caller and face (A2A or
//!   MCP) ([`Holder`]), which holds at most `max_connections_per_token`. A newcomer past that
//!   closes the holder's connection idle the longest (a client's pool of kept-alive
//!   connections); when all of them are in a request, it is refused (429). So one token's slow
//!   or hostile client only ever uses its own share, and the hub agent's MCP client never the
//!   connections its reports need.
//! - At most `max_connections` in all: past it, the idle connection of longest standing goes,
//!   or the newcomer is closed at once.
//!
//! A connection is busy from the moment its request's token is read until its answer's body
//! is sent ([`Busy`]); only idle ones are ever closed to make room.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::guard::Caller;

/// How long a connection has to send its headers before it may be closed to make room: a
/// client that speaks does so within a round trip, on a loopback tunnel a few milliseconds.
pub const GRACE: Duration = Duration::from_millis(250);

/// Which face of the intake a token's connection uses: each caller has a share on each, so
/// that the hub agent's MCP client cannot take the connections its reports need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Face {
    A2a,
    Mcp,
}

/// Whose share a connection counts in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Holder {
    pub caller: Caller,
    pub face: Face,
}

/// How many connections each share holds.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub unauthenticated: usize,
    pub per_token: usize,
    pub total: usize,
}

struct Connection {
    holder: Option<Holder>,
    busy: usize,
    /// When it last changed hands or finished a request, in ticks: the smallest is the
    /// longest idle.
    used: u64,
    /// The same moment on the monotonic clock: how long it has been idle.
    idle_since: Instant,
    close: CancellationToken,
    /// Cancelled once its task let go of the socket.
    released: CancellationToken,
}

#[derive(Default)]
struct Book {
    connections: HashMap<u64, Connection>,
    unauthenticated: usize,
    by_holder: HashMap<Holder, usize>,
    ticks: u64,
}

impl Book {
    fn tick(&mut self) -> u64 {
        self.ticks += 1;
        self.ticks
    }

    /// Closes the idle connection of longest standing among those `which` picks, if any: what
    /// says when its socket is let go.
    fn close_idlest(&mut self, which: impl Fn(&Connection) -> bool) -> Option<CancellationToken> {
        let idlest = self
            .connections
            .iter()
            .filter(|(_, c)| c.busy == 0 && which(c))
            .min_by_key(|(_, c)| c.used)
            .map(|(id, _)| *id)?;
        self.forget(idlest)
    }

    /// Removes a connection from the book (closing it if it is still open).
    fn forget(&mut self, id: u64) -> Option<CancellationToken> {
        let c = self.connections.remove(&id)?;
        c.close.cancel();
        self.uncount(&c.holder);
        Some(c.released)
    }

    fn uncount(&mut self, holder: &Option<Holder>) {
        match holder {
            None => self.unauthenticated = self.unauthenticated.saturating_sub(1),
            Some(h) => {
                if let Some(n) = self.by_holder.get_mut(h) {
                    *n -= 1;
                    if *n == 0 {
                        self.by_holder.remove(h);
                    }
                }
            }
        }
    }

    fn count(&mut self, holder: &Option<Holder>) {
        match holder {
            None => self.unauthenticated += 1,
            Some(h) => *self.by_holder.entry(h.clone()).or_insert(0) += 1,
        }
    }
}

/// The intake's open connections, by holder.
pub struct Pools {
    limits: Limits,
    book: Mutex<Book>,
    /// Told when a place may have freed (a connection spoke, or closed): the accept loop
    /// waiting for room asks again at once rather than after [`GRACE`].
    freed: tokio::sync::Notify,
}

/// How a new connection found its place.
#[derive(Debug, Clone)]
pub enum Admitted {
    /// There was room.
    Room,
    /// An idle connection was closed to make room: cancelled once its socket is let go, so
    /// that a flood never holds more descriptors than the bound (the accept loop waits).
    Closed(CancellationToken),
}

/// Why a new connection has no place yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoRoom {
    /// The idle ones are all younger than [`GRACE`]: ask again after this.
    Wait(Duration),
    /// Every place is taken by a connection in a request: close the newcomer.
    Full,
}

impl Pools {
    pub fn new(limits: Limits) -> Arc<Pools> {
        Arc::new(Pools {
            limits,
            book: Mutex::new(Book::default()),
            freed: tokio::sync::Notify::new(),
        })
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for a new connection, not yet authenticated, at `now` (the monotonic clock).
    pub fn admit(self: &Arc<Self>, now: Instant) -> Result<(Place, Admitted), NoRoom> {
        let mut book = self.book();
        let mut admitted = Admitted::Room;
        let over_total = book.connections.len() >= self.limits.total;
        let over_unauthenticated = book.unauthenticated >= self.limits.unauthenticated;
        if over_total || over_unauthenticated {
            let come_of_age = |c: &Connection| now.duration_since(c.idle_since) >= GRACE;
            // The not yet authenticated first, then (past the total) anyone's.
            let released = book
                .close_idlest(|c| c.holder.is_none() && come_of_age(c))
                .or_else(|| over_total.then(|| book.close_idlest(come_of_age)).flatten());
            match released {
                Some(released) => admitted = Admitted::Closed(released),
                None => {
                    let eligible =
                        |c: &&Connection| c.busy == 0 && (over_total || c.holder.is_none());
                    let soonest = book
                        .connections
                        .values()
                        .filter(eligible)
                        .map(|c| GRACE.saturating_sub(now.duration_since(c.idle_since)))
                        .min();
                    return Err(match soonest {
                        Some(wait) => NoRoom::Wait(wait.max(Duration::from_millis(1))),
                        None => NoRoom::Full,
                    });
                }
            }
        }
        let id = book.tick();
        let close = CancellationToken::new();
        let released = CancellationToken::new();
        book.connections.insert(
            id,
            Connection {
                holder: None,
                busy: 0,
                used: id,
                idle_since: now,
                close: close.clone(),
                released: released.clone(),
            },
        );
        book.count(&None);
        Ok((
            Place {
                pools: self.clone(),
                id,
                close,
                released,
            },
            admitted,
        ))
    }

    /// Resolves when a place may have freed since (or a permit was left by an earlier one).
    pub async fn freed(&self) {
        self.freed.notified().await;
    }

    /// How many connections are open, and how many of them are not yet authenticated.
    pub fn open(&self) -> (usize, usize) {
        let book = self.book();
        (book.connections.len(), book.unauthenticated)
    }
}

/// One open connection's place, given back when it closes.
pub struct Place {
    pools: Arc<Pools>,
    id: u64,
    close: CancellationToken,
    released: CancellationToken,
}

impl Place {
    /// Cancelled when the connection was closed to make room for another.
    pub fn closed(&self) -> CancellationToken {
        self.close.clone()
    }

    /// What a request on this connection uses to claim it.
    pub fn handle(&self) -> Handle {
        Handle {
            pools: self.pools.clone(),
            id: self.id,
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.pools.book().forget(self.id);
        self.released.cancel();
        self.pools.freed.notify_one();
    }
}

/// A connection's handle in its requests' extensions.
#[derive(Clone)]
pub struct Handle {
    pools: Arc<Pools>,
    id: u64,
}

/// A request refused because its holder's every connection is in a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full {
    pub per_token: usize,
}

impl Handle {
    /// A request on this connection, from `holder` (`None`: a route that needs no token, the
    /// card or a phone's action link): the connection moves to the holder's share and is busy
    /// until the returned [`Busy`] is dropped.
    pub fn claim(&self, holder: Option<Holder>) -> Result<Busy, Full> {
        let pools = &self.pools;
        let mut book = pools.book();
        let current = match book.connections.get(&self.id) {
            Some(c) => c.holder.clone(),
            // Closed to make room while its headers were read: the request is answered, the
            // connection ends with it.
            None => return Ok(Busy { handle: None }),
        };
        if let Some(holder) = holder.filter(|h| current.as_ref() != Some(h)) {
            let held = book.by_holder.get(&holder).copied().unwrap_or(0);
            if held >= pools.limits.per_token
                && book
                    .close_idlest(|c| c.holder.as_ref() == Some(&holder))
                    .is_none()
            {
                return Err(Full {
                    per_token: pools.limits.per_token,
                });
            }
            book.uncount(&current);
            book.count(&Some(holder.clone()));
            if let Some(c) = book.connections.get_mut(&self.id) {
                c.holder = Some(holder);
            }
            if current.is_none() {
                pools.freed.notify_one();
            }
        }
        let used = book.tick();
        if let Some(c) = book.connections.get_mut(&self.id) {
            c.busy += 1;
            c.used = used;
        }
        Ok(Busy {
            handle: Some(self.clone()),
        })
    }
}

/// A request in progress: its connection is not closed to make room until this is dropped
/// (with the answer's body sent).
pub struct Busy {
    handle: Option<Handle>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let Some(handle) = &self.handle else { return };
        let mut book = handle.pools.book();
        let used = book.tick();
        if let Some(c) = book.connections.get_mut(&handle.id) {
            c.busy = c.busy.saturating_sub(1);
            c.used = used;
            c.idle_since = Instant::now();
        }
        drop(book);
        handle.pools.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(unauthenticated: usize, per_token: usize, total: usize) -> Limits {
        Limits {
            unauthenticated,
            per_token,
            total,
        }
    }

    fn agent(name: &str, face: Face) -> Option<Holder> {
        Some(Holder {
            caller: Caller::Agent(name.into()),
            face,
        })
    }

    #[test]
    fn a_newcomer_closes_the_longest_idle_of_the_unauthenticated_once_of_age() {
        let pools = Pools::new(limits(2, 4, 100));
        let t0 = Instant::now();
        let (first, _) = pools.admit(t0).unwrap();
        let (second, _) = pools.admit(t0 + Duration::from_millis(10)).unwrap();
        // A burst: the two are too young to close; the newcomer waits for the first to age.
        assert_eq!(
            pools.admit(t0 + Duration::from_millis(50)).err(),
            Some(NoRoom::Wait(GRACE - Duration::from_millis(50)))
        );
        let (third, how) = pools.admit(t0 + GRACE).unwrap();
        assert!(matches!(how, Admitted::Closed(_)));
        assert!(first.closed().is_cancelled(), "the oldest slow one goes");
        assert!(!second.closed().is_cancelled());
        assert_eq!(pools.open(), (2, 2));
        // One that has spoken is no longer in that pool.
        let _busy = third.handle().claim(agent("sol", Face::A2a)).unwrap();
        assert_eq!(pools.open(), (2, 1));
        drop(first);
        assert_eq!(
            pools.open(),
            (2, 1),
            "a closed place is not given back twice"
        );
    }

    #[test]
    fn a_token_holds_its_share_and_no_more() {
        let pools = Pools::new(limits(8, 2, 100));
        let t0 = Instant::now();
        let places: Vec<Place> = (0..4).map(|_| pools.admit(t0).unwrap().0).collect();
        let a = places[0].handle().claim(agent("rogue", Face::A2a)).unwrap();
        let b = places[1].handle().claim(agent("rogue", Face::A2a)).unwrap();
        assert_eq!(
            places[2]
                .handle()
                .claim(agent("rogue", Face::A2a))
                .err()
                .map(|f| f.per_token),
            Some(2),
            "both of its connections are in a request: a third is refused"
        );
        assert!(
            places[3].handle().claim(agent("sol", Face::A2a)).is_ok(),
            "another agent is not slowed"
        );
        assert!(
            places[2].handle().claim(agent("rogue", Face::Mcp)).is_ok(),
            "its MCP face has a share of its own"
        );
        drop(a);
        // Its first connection is idle now (kept alive): a newcomer takes its place.
        let (fifth, _) = pools.admit(t0).unwrap();
        let _c = fifth.handle().claim(agent("rogue", Face::A2a)).unwrap();
        assert!(places[0].closed().is_cancelled());
        assert!(
            !places[1].closed().is_cancelled(),
            "a busy one is never closed"
        );
        drop(b);
    }

    #[test]
    fn in_all_the_idle_go_first_and_the_busy_never() {
        let pools = Pools::new(limits(8, 8, 2));
        let t0 = Instant::now();
        let (a, _) = pools.admit(t0).unwrap();
        let (b, _) = pools.admit(t0).unwrap();
        let _busy_a = a.handle().claim(agent("sol", Face::A2a)).unwrap();
        let busy_b = b.handle().claim(None).unwrap();
        assert_eq!(
            pools.admit(t0 + GRACE).err(),
            Some(NoRoom::Full),
            "every place is in a request"
        );
        drop(busy_b);
        let later = Instant::now() + GRACE;
        let (_c, how) = pools.admit(later).unwrap();
        let Admitted::Closed(released) = how else {
            panic!("no room was made")
        };
        assert!(b.closed().is_cancelled());
        assert!(!a.closed().is_cancelled());
        assert!(!released.is_cancelled(), "its task still holds the socket");
        drop(b);
        assert!(released.is_cancelled());
    }
}
