//! Who holds the intake's connections (issue 32). Every agent behind an SSH tunnel arrives from
//! 127.0.0.1 (spec 003 §1.1), so an address says nothing about who is connecting: connections
//! are shared out by the token their requests carry instead.
//!
//! - A new connection joins a small pool of connections not yet authenticated
//!   (`max_unauthenticated_connections`). When that pool is full, its connection idle the
//!   longest (headers not yet read: a slowloris, or a client that never spoke) is closed to make
//!   room: a newcomer that sends its headers at once is never shut out by slow ones.
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

use tokio_util::sync::CancellationToken;

use super::guard::Caller;

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

impl Pools {
    pub fn new(limits: Limits) -> Arc<Pools> {
        Arc::new(Pools {
            limits,
            book: Mutex::new(Book::default()),
        })
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for a new connection, not yet authenticated; `None` when every place is taken
    /// by a connection in a request.
    pub fn admit(self: &Arc<Self>) -> Option<(Place, Admitted)> {
        let mut book = self.book();
        let mut admitted = Admitted::Room;
        if book.connections.len() >= self.limits.total {
            // The not yet authenticated first, then anyone's.
            let released = book
                .close_idlest(|c| c.holder.is_none())
                .or_else(|| book.close_idlest(|_| true))?;
            admitted = Admitted::Closed(released);
        }
        if book.unauthenticated >= self.limits.unauthenticated {
            let released = book.close_idlest(|c| c.holder.is_none())?;
            admitted = Admitted::Closed(released);
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
                close: close.clone(),
                released: released.clone(),
            },
        );
        book.count(&None);
        Some((
            Place {
                pools: self.clone(),
                id,
                close,
                released,
            },
            admitted,
        ))
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
        }
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
    fn a_newcomer_closes_the_longest_idle_of_the_unauthenticated() {
        let pools = Pools::new(limits(2, 4, 100));
        let (first, _) = pools.admit().unwrap();
        let (second, _) = pools.admit().unwrap();
        let (third, how) = pools.admit().unwrap();
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
        let places: Vec<Place> = (0..4).map(|_| pools.admit().unwrap().0).collect();
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
        let (fifth, _) = pools.admit().unwrap();
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
        let (a, _) = pools.admit().unwrap();
        let (b, _) = pools.admit().unwrap();
        let _busy_a = a.handle().claim(agent("sol", Face::A2a)).unwrap();
        let _busy_b = b.handle().claim(None).unwrap();
        assert!(pools.admit().is_none(), "every place is in a request");
        drop(_busy_b);
        let (_c, how) = pools.admit().unwrap();
        let Admitted::Closed(released) = how else {
            panic!("no room was made")
        };
        assert!(b.closed().is_cancelled());
        assert!(!released.is_cancelled(), "its task still holds the socket");
        drop(b);
        assert!(released.is_cancelled());
        assert!(!a.closed().is_cancelled());
    }
}
