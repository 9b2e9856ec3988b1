//! Which `Host` and `Origin` a server answers: the defence against DNS rebinding. A web page
//! the user opens can make its browser send requests to the server (its DNS name pointed at
//! 127.0.0.1); the request then names the page's own host in `Host`, and a same-origin `GET`
//! sends no `Origin`, so the `Host` check is what stops it.
//!
//! Bound to loopback, a request must name a loopback host (`localhost`, `*.localhost`,
//! `127.0.0.0/8`, `[::1]`) with any port, or a name given with `--allowed-host` (a reverse
//! proxy's own name). Bound beyond loopback with `--allowed-host`, those names, loopback hosts and
//! IP addresses (a client that dials the address, never a rebinding page) are answered; without
//! it, any host (the server warns at start). A request without `Host` (HTTP/1.0; no browser
//! sends one) is answered. An `Origin`, where one is checked (`/mcp`), must be a whole origin
//! (`scheme://host[:port]`, http or https, nothing after it) whose host the same policy allows,
//! or, with every host allowed, the request's own `Host`.

use std::net::{IpAddr, Ipv6Addr};

/// A host name or address as a request names it, with its port when it gives one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authority {
    /// Lowercase, without a trailing dot; an IPv6 address without its brackets.
    pub host: String,
    pub port: Option<u16>,
}

impl Authority {
    /// `name`, `name:port`, `a.b.c.d[:port]` or `[v6][:port]`; `None` for anything else (a user
    /// part, a path, an empty name, a port that is not a number below 65536).
    pub fn parse(text: &str) -> Option<Authority> {
        let text = text.trim();
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (inside, after) = rest.split_once(']')?;
            inside.parse::<Ipv6Addr>().ok()?;
            let port = match after {
                "" => None,
                _ => Some(parse_port(after.strip_prefix(':')?)?),
            };
            (inside.to_string(), port)
        } else {
            let (host, port) = match text.rsplit_once(':') {
                Some((host, port)) => (host, Some(parse_port(port)?)),
                None => (text, None),
            };
            let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
            if host.is_empty() || !host.chars().all(name_char) {
                return None;
            }
            (host.to_string(), port)
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        (!host.is_empty()).then_some(Authority { host, port })
    }

    fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }

    /// A name or address that only ever reaches this machine: `localhost` and its subdomains
    /// (RFC 6761: resolvers and browsers keep them on loopback), 127.0.0.0/8, ::1 and the
    /// IPv4-mapped loopback.
    pub fn is_loopback(&self) -> bool {
        if self.host == "localhost" || self.host.ends_with(".localhost") {
            return true;
        }
        self.ip().is_some_and(is_loopback_ip)
    }

    /// True when `self`, an allowed entry, admits `other`: the same host, and the same port
    /// when the entry names one.
    fn admits(&self, other: &Authority) -> bool {
        self.host == other.host && self.port.is_none_or(|port| other.port == Some(port))
    }
}

/// True for an address that only ever reaches this machine: 127.0.0.0/8, `::1`, and the
/// IPv4-mapped form of 127.0.0.0/8 (`::ffff:127.0.0.1`, what a dual-stack socket bound to or
/// reached from IPv4 loopback shows). Every "is this loopback" of the server asks this.
pub fn is_loopback_ip(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

fn parse_port(text: &str) -> Option<u16> {
    if text.is_empty() || text.len() > 5 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// The hosts a server answers.
#[derive(Debug, Clone, Default)]
pub struct HostPolicy {
    /// The server listens on a loopback address only.
    pub loopback: bool,
    /// `--allowed-host` entries.
    pub allowed: Vec<Authority>,
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Host,
    Origin,
}

impl Refusal {
    /// What the client is told, with what would make the request acceptable.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::Host => "The request's Host header names a host this server does not answer for (DNS rebinding protection). Reach it as localhost or 127.0.0.1, or start it with --allowed-host NAME for the name a proxy or client uses.",
            Refusal::Origin => "The request's Origin is not allowed (DNS rebinding and cross-site protection): only a page served from a host this server answers for may call it.",
        }
    }
}

impl HostPolicy {
    /// A policy for a server bound to loopback (`loopback`) or beyond, with `--allowed-host`
    /// entries; an entry that does not parse is named in the error.
    pub fn new(loopback: bool, allowed: &[String]) -> Result<HostPolicy, String> {
        let allowed = allowed
            .iter()
            .map(|entry| {
                Authority::parse(entry).ok_or_else(|| {
                    format!(
                        "--allowed-host {entry:?} is not a host name or address with an optional port (for example kb.internal or kb.internal:8080)"
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(HostPolicy { loopback, allowed })
    }

    /// Beyond loopback with no `--allowed-host`: every host is answered.
    pub(crate) fn any_host(&self) -> bool {
        !self.loopback && self.allowed.is_empty()
    }

    fn allows(&self, authority: &Authority) -> bool {
        if self.any_host() || authority.is_loopback() {
            return true;
        }
        if self.allowed.iter().any(|a| a.admits(authority)) {
            return true;
        }
        // Beyond loopback a client may dial the server's address: no rebinding page names one.
        !self.loopback && authority.ip().is_some()
    }

    /// Checks a request's `Host` (raw header bytes, `None` when absent) and, when `check_origin`,
    /// its `Origin`.
    pub fn check(
        &self,
        host: Option<&[u8]>,
        origin: Option<&[u8]>,
        check_origin: bool,
    ) -> Result<(), Refusal> {
        let host = match host {
            None => None,
            Some(bytes) => {
                let parsed = std::str::from_utf8(bytes).ok().and_then(Authority::parse);
                match parsed {
                    Some(a) if self.allows(&a) => Some(a),
                    _ => return Err(Refusal::Host),
                }
            }
        };
        let Some(origin) = origin.filter(|_| check_origin) else {
            return Ok(());
        };
        let origin = std::str::from_utf8(origin)
            .ok()
            .and_then(parse_origin)
            .ok_or(Refusal::Origin)?;
        let allowed = if self.any_host() {
            // Same origin only: the page was served by this host.
            host.is_some_and(|h| h.host == origin.host)
        } else {
            self.allows(&origin)
        };
        allowed.then_some(()).ok_or(Refusal::Origin)
    }
}

/// The host of an `Origin` value: exactly `http://host[:port]` or `https://host[:port]`
/// (RFC 6454's serialization: no user, path, query or fragment); `null` and anything else is
/// `None`.
fn parse_origin(text: &str) -> Option<Authority> {
    let lower = text.trim().to_ascii_lowercase();
    let rest = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"))?;
    Authority::parse(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback(allowed: &[&str]) -> HostPolicy {
        let allowed: Vec<String> = allowed.iter().map(|s| s.to_string()).collect();
        HostPolicy::new(true, &allowed).unwrap()
    }

    fn host(policy: &HostPolicy, value: &str) -> bool {
        policy.check(Some(value.as_bytes()), None, false).is_ok()
    }

    fn origin(policy: &HostPolicy, host: &str, value: &str) -> bool {
        policy
            .check(Some(host.as_bytes()), Some(value.as_bytes()), true)
            .is_ok()
    }

    #[test]
    fn loopback_names_and_addresses_pass_with_or_without_a_port() {
        let p = loopback(&[]);
        for ok in [
            "localhost",
            "LOCALHOST:8080",
            "localhost.",
            "app.localhost:3000",
            "127.0.0.1",
            "127.0.0.1:7700",
            "127.1.2.3:1",
            "[::1]",
            "[::1]:7700",
            "[::ffff:127.0.0.1]:80",
        ] {
            assert!(host(&p, ok), "{ok}");
        }
        for refused in [
            "evil.com",
            "evil.com:7700",
            "localhost.evil.com",
            "127.0.0.1.evil.com",
            "10.0.0.1",
            "[::2]:80",
            "localhost:99999",
            "localhost:",
            "user@localhost",
            "localhost/x",
            "",
            "[::1",
        ] {
            assert!(!host(&p, refused), "{refused}");
        }
        // No Host at all (HTTP/1.0): no browser omits it.
        assert!(p.check(None, None, true).is_ok());
        assert!(p.check(Some(b"\xff"), None, false).is_err());
    }

    #[test]
    fn ipv4_mapped_loopback_is_loopback() {
        for ip in [
            "127.0.0.1",
            "127.9.8.7",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:127.1.2.3",
        ] {
            assert!(is_loopback_ip(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "10.0.0.1",
            "::",
            "0.0.0.0",
            "::ffff:10.0.0.1",
            "::2",
            "::127.0.0.1",
        ] {
            assert!(!is_loopback_ip(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn allowed_hosts_add_names_with_or_without_a_port() {
        let p = loopback(&["kb.internal", "proxy.lan:8443"]);
        assert!(host(&p, "kb.internal"));
        assert!(host(&p, "KB.internal:1234"));
        assert!(host(&p, "proxy.lan:8443"));
        assert!(!host(&p, "proxy.lan:8444"));
        assert!(!host(&p, "proxy.lan"));
        assert!(!host(&p, "evil.com"));
        assert!(HostPolicy::new(true, &["a b".into()]).is_err());
        assert!(HostPolicy::new(true, &["http://x".into()]).is_err());
    }

    #[test]
    fn beyond_loopback_every_host_passes_unless_hosts_are_named() {
        let open = HostPolicy::new(false, &[]).unwrap();
        assert!(open.any_host());
        assert!(host(&open, "evil.com"));
        let named = HostPolicy::new(false, &["kb.example.org".into()]).unwrap();
        assert!(host(&named, "kb.example.org:80"));
        assert!(host(&named, "192.168.1.20:7700"));
        assert!(host(&named, "localhost"));
        assert!(!host(&named, "evil.com"));
    }

    #[test]
    fn origins_are_compared_whole() {
        let p = loopback(&[]);
        for ok in [
            "http://localhost:5173",
            "http://localhost",
            "https://127.0.0.1:8443",
            "http://[::1]:1",
        ] {
            assert!(origin(&p, "127.0.0.1:7700", ok), "{ok}");
        }
        for refused in [
            "http://localhost:1234.evil.com",
            "http://localhost:1/evil",
            "http://localhost.evil.com",
            "http://evil.com",
            "http://user@localhost",
            "null",
            "file://",
            "ftp://localhost",
            "localhost",
            "http://localhost?x",
        ] {
            assert!(!origin(&p, "127.0.0.1:7700", refused), "{refused}");
        }
        // With every host answered, an origin must be the request's own host.
        let open = HostPolicy::new(false, &[]).unwrap();
        assert!(origin(&open, "kb.lan:7700", "http://kb.lan:7700"));
        assert!(!origin(&open, "kb.lan:7700", "http://evil.com"));
    }
}
