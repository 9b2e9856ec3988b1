//! Who a connection comes from, and how much of the server one client may hold: connections at
//! once (the accept loop) and MCP sessions (`mcp.rs`). A client is its address: an IPv4 address
//! (the IPv4-mapped form of one, what a dual-stack socket shows, counted as the same address), or
//! an IPv6 /64, what one host or one site is given, so that a client cannot take more by changing
//! the low bits of its address. Behind a reverse proxy every user is the proxy's address
//! (docs/http.md#limits-per-client).

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};

/// A client as the per-client caps count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientKey(IpAddr);

impl ClientKey {
    /// The client of a peer address: IPv4 (mapped or not) as it is, IPv6 by its /64.
    pub fn of(ip: IpAddr) -> ClientKey {
        match ip.to_canonical() {
            IpAddr::V6(v6) => {
                let prefix = u128::from(v6) & (u128::MAX << 64);
                ClientKey(IpAddr::V6(Ipv6Addr::from(prefix)))
            }
            v4 => ClientKey(v4),
        }
    }
}

impl fmt::Display for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => write!(f, "{v4}"),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

/// The client a request came from, put in its extensions by the accept loop (absent when the
/// router is served some other way).
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub ClientKey);

/// How many connections each client has open, against a cap (`0`: none).
pub(crate) struct ConnectionsPerClient {
    max: usize,
    open: Mutex<HashMap<ClientKey, usize>>,
}

/// One connection of a client, counted until dropped.
pub(crate) struct ClientConnection {
    client: ClientKey,
    counts: Arc<ConnectionsPerClient>,
}

impl ConnectionsPerClient {
    pub(crate) fn new(max: usize) -> Arc<ConnectionsPerClient> {
        Arc::new(ConnectionsPerClient {
            max,
            open: Mutex::new(HashMap::new()),
        })
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// Counts a new connection of `client`; `None` when the client already has the most.
    pub(crate) fn open(self: &Arc<Self>, client: ClientKey) -> Option<ClientConnection> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(client).or_insert(0);
        if self.max != 0 && *n >= self.max {
            return None;
        }
        *n += 1;
        Some(ClientConnection {
            client,
            counts: self.clone(),
        })
    }
}

impl Drop for ClientConnection {
    fn drop(&mut self) {
        let mut open = self.counts.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ip: &str) -> ClientKey {
        ClientKey::of(ip.parse().unwrap())
    }

    #[test]
    fn mapped_ipv4_is_its_ipv4_and_ipv6_counts_by_its_64() {
        assert_eq!(key("::ffff:192.0.2.7"), key("192.0.2.7"));
        assert_eq!(key("::ffff:127.0.0.1"), key("127.0.0.1"));
        assert_ne!(key("127.0.0.1"), key("127.0.0.2"));
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("2001:db8:1:2::1").to_string(), "2001:db8:1:2::/64");
        assert_eq!(key("::ffff:10.1.2.3").to_string(), "10.1.2.3");
    }

    #[test]
    fn a_client_holds_at_most_max_connections_and_gets_them_back() {
        let counts = ConnectionsPerClient::new(2);
        let a = key("10.0.0.1");
        let first = counts.open(a).unwrap();
        let _second = counts.open(a).unwrap();
        assert!(counts.open(a).is_none());
        assert!(counts.open(key("10.0.0.2")).is_some());
        drop(first);
        assert!(counts.open(a).is_some());
        let unlimited = ConnectionsPerClient::new(0);
        let held: Vec<_> = (0..100).map(|_| unlimited.open(a).unwrap()).collect();
        assert_eq!(held.len(), 100);
    }
}
