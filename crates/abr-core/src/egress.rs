//! [`EgressPolicy`]: where a browser the runner drives may connect.
//!
//! A browser driven on the operator's machine must not become a way into that machine's
//! network: the runner's own API, services on loopback, the private network, the cloud
//! metadata endpoint. The policy refuses every destination address that is not globally
//! routable, whatever name led to it, except exact `host:port` pairs the operator allowed.
//!
//! This module is the decision only (pure). The enforcement point is an egress proxy every
//! browser context is routed through, which resolves each name once, checks every address
//! here and connects only to a checked one (so DNS cannot answer differently between the
//! check and the connection).

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Why a destination is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum EgressDenied {
    /// Not a web URL (`file:`, `chrome:`, `javascript:`, `data:` ...).
    #[error("only http(s) and ws(s) destinations are allowed")]
    Scheme,
    /// A URL with user name or password in it.
    #[error("URLs with credentials in them are not allowed")]
    Userinfo,
    /// The URL has no host.
    #[error("the destination has no host")]
    NoHost,
    /// Loopback (`127.0.0.0/8`, `::1`, `localhost`): the runner's own machine.
    #[error("loopback addresses are not allowed")]
    Loopback,
    /// A private network (RFC 1918, unique local IPv6).
    #[error("private network addresses are not allowed")]
    Private,
    /// Link-local (`169.254.0.0/16`, `fe80::/10`), including the cloud metadata endpoint.
    #[error("link-local and metadata addresses are not allowed")]
    LinkLocal,
    /// Carrier-grade NAT (`100.64.0.0/10`).
    #[error("shared (CGNAT) addresses are not allowed")]
    SharedAddressSpace,
    /// Unspecified, broadcast, multicast, documentation, benchmarking or reserved ranges, and
    /// IPv6 prefixes that embed IPv4 (NAT64, 6to4, Teredo) or discard traffic.
    #[error("reserved or special-purpose addresses are not allowed")]
    Reserved,
    /// The name did not resolve to any address.
    #[error("the destination's name did not resolve")]
    Unresolved,
}

impl EgressDenied {
    /// Stable machine-readable reason.
    pub fn code(self) -> &'static str {
        match self {
            Self::Scheme => "scheme",
            Self::Userinfo => "userinfo",
            Self::NoHost => "no_host",
            Self::Loopback => "loopback",
            Self::Private => "private",
            Self::LinkLocal => "link_local",
            Self::SharedAddressSpace => "shared_address_space",
            Self::Reserved => "reserved",
            Self::Unresolved => "unresolved",
        }
    }
}

/// An exact `host:port` the operator allowed although it is not public (the demo site on
/// loopback, an intranet tool the runner must reach).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AllowedPrivate {
    /// A lowercase host name or an IP address (IPv6 without brackets).
    pub host: String,
    /// The port.
    pub port: u16,
}

impl std::str::FromStr for AllowedPrivate {
    type Err = String;

    /// Parses `host:port` or `[v6]:port`. A port is required and no wildcard is accepted.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (v6, port) = rest
                .split_once("]:")
                .ok_or_else(|| format!("{s:?} is not [IPv6]:port"))?;
            v6.parse::<Ipv6Addr>()
                .map_err(|_| format!("{s:?} is not [IPv6]:port"))?;
            (v6.to_ascii_lowercase(), port)
        } else {
            s.rsplit_once(':')
                .map(|(h, p)| (h.to_ascii_lowercase(), p))
                .ok_or_else(|| format!("{s:?} is not host:port"))?
        };
        let port: u16 = port
            .parse()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| format!("{s:?} has no valid port"))?;
        let valid_name = !host.is_empty()
            && host.len() <= 253
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'));
        if !valid_name {
            return Err(format!("{s:?} is not an exact host:port (no wildcards)"));
        }
        Ok(Self { host, port })
    }
}

impl std::fmt::Display for AllowedPrivate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Where browsers may connect: every globally routable address, and the exact non-public
/// `host:port` pairs listed in [`EgressPolicy::allow_private`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressPolicy {
    allowed: BTreeSet<AllowedPrivate>,
}

impl EgressPolicy {
    /// Public addresses only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also allows `host:port` (an exact pair: other ports of the host stay refused).
    #[must_use]
    pub fn allow_private(mut self, pair: AllowedPrivate) -> Self {
        self.allowed.insert(pair);
        self
    }

    /// Also allows `addr` (for tests and the demo: a server on loopback).
    #[must_use]
    pub fn allow_addr(self, addr: SocketAddr) -> Self {
        self.allow_private(AllowedPrivate {
            host: addr.ip().to_string(),
            port: addr.port(),
        })
    }

    /// The allowed pairs.
    pub fn allowed(&self) -> impl Iterator<Item = &AllowedPrivate> {
        self.allowed.iter()
    }

    fn is_allowed(&self, host: &str, port: u16) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.allowed
            .iter()
            .any(|a| a.port == port && a.host == host)
    }

    /// Checks a URL before anything is sent: a web scheme, no credentials, a host, and, when
    /// the host is an IP address or a loopback name, that address. Names are checked by
    /// [`EgressPolicy::check_resolved`] once resolved.
    ///
    /// # Errors
    /// The reason the URL is refused.
    pub fn check_url(&self, url: &url::Url) -> Result<(), EgressDenied> {
        if !matches!(url.scheme(), "http" | "https" | "ws" | "wss") {
            return Err(EgressDenied::Scheme);
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(EgressDenied::Userinfo);
        }
        let port = url.port_or_known_default().ok_or(EgressDenied::NoHost)?;
        match url.host() {
            None => Err(EgressDenied::NoHost),
            Some(url::Host::Ipv4(ip)) => self.check_addr(&ip.to_string(), (ip, port).into()),
            Some(url::Host::Ipv6(ip)) => self.check_addr(&ip.to_string(), (ip, port).into()),
            Some(url::Host::Domain(name)) => self.check_name(name, port),
        }
    }

    /// Checks a host name before resolving it: loopback names (`localhost`, `*.localhost`)
    /// are refused without asking DNS, unless allowed.
    ///
    /// # Errors
    /// [`EgressDenied::Loopback`].
    pub fn check_name(&self, name: &str, port: u16) -> Result<(), EgressDenied> {
        let lower = name.trim_end_matches('.').to_ascii_lowercase();
        if (lower == "localhost" || lower.ends_with(".localhost")) && !self.is_allowed(name, port) {
            return Err(EgressDenied::Loopback);
        }
        Ok(())
    }

    /// Checks one destination address reached through `host` (the name or address the
    /// browser asked for).
    ///
    /// # Errors
    /// The class of the address, when it is not public and the pair is not allowed.
    pub fn check_addr(&self, host: &str, addr: SocketAddr) -> Result<(), EgressDenied> {
        match classify(addr.ip()) {
            Ok(()) => Ok(()),
            Err(denied) => {
                let host = host.trim_start_matches('[').trim_end_matches(']');
                if self.is_allowed(host, addr.port())
                    || self.is_allowed(&addr.ip().to_string(), addr.port())
                {
                    Ok(())
                } else {
                    Err(denied)
                }
            }
        }
    }

    /// Picks the address to connect to among what `host` resolved to: the first allowed
    /// one. A name that resolves to any refused address is refused as a whole (a rebinding
    /// name that answers both is not trusted with either).
    ///
    /// # Errors
    /// The reason of the first refused address, or [`EgressDenied::Unresolved`].
    pub fn check_resolved(
        &self,
        host: &str,
        addrs: &[SocketAddr],
    ) -> Result<SocketAddr, EgressDenied> {
        let mut chosen = None;
        for addr in addrs {
            self.check_addr(host, *addr)?;
            chosen.get_or_insert(*addr);
        }
        chosen.ok_or(EgressDenied::Unresolved)
    }
}

/// Whether `ip` is globally routable; the class it is in otherwise. IPv4-mapped and
/// IPv4-compatible IPv6 addresses are judged as the IPv4 address they carry.
///
/// # Errors
/// The class of a non-public address.
pub fn classify(ip: IpAddr) -> Result<(), EgressDenied> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Result<(), EgressDenied> {
    let [a, b, c, _] = ip.octets();
    let denied = if ip.is_loopback() {
        EgressDenied::Loopback
    } else if ip.is_private() {
        EgressDenied::Private
    } else if ip.is_link_local() {
        EgressDenied::LinkLocal
    } else if a == 100 && (64..128).contains(&b) {
        EgressDenied::SharedAddressSpace
    } else if a == 0
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a >= 240
        // IETF protocol assignments (192.0.0.0/24), 6to4 relay anycast (192.88.99.0/24).
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 88 && c == 99)
        // Benchmarking (198.18.0.0/15).
        || (a == 198 && (b == 18 || b == 19))
    {
        EgressDenied::Reserved
    } else {
        return Ok(());
    };
    Err(denied)
}

fn classify_v6(ip: Ipv6Addr) -> Result<(), EgressDenied> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    let seg = ip.segments();
    let denied = if ip.is_loopback() {
        EgressDenied::Loopback
    } else if ip.is_unspecified() || ip.is_multicast() {
        EgressDenied::Reserved
    } else if (seg[0] & 0xfe00) == 0xfc00 {
        // Unique local fc00::/7.
        EgressDenied::Private
    } else if (seg[0] & 0xffc0) == 0xfe80 || (seg[0] & 0xffc0) == 0xfec0 {
        // Link-local fe80::/10 and the deprecated site-local fec0::/10.
        EgressDenied::LinkLocal
    } else if seg[..6] == [0, 0, 0, 0, 0, 0] {
        // IPv4-compatible ::a.b.c.d (deprecated): judged as the IPv4 it carries.
        let [_, _, _, _, _, _, hi, lo] = seg;
        return classify_v4(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        ))
        .and(Err(EgressDenied::Reserved));
    } else if (seg[0] == 0x64 && seg[1] == 0xff9b)
        // NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16, Teredo 2001::/32, discard
        // 100::/64, documentation 2001:db8::/32, benchmarking 2001:2::/48, ORCHID 2001:10::/28.
        || seg[0] == 0x2002
        || (seg[0] == 0x2001 && seg[1] == 0)
        || (seg[0] == 0x0100 && seg[1..4] == [0, 0, 0])
        || (seg[0] == 0x2001 && seg[1] == 0x0db8)
        || (seg[0] == 0x2001 && seg[1] == 0x0002 && seg[2] == 0)
        || (seg[0] == 0x2001 && (seg[1] & 0xfff0) == 0x0010)
        || (seg[0] == 0x3fff && (seg[1] & 0xf000) == 0)
    {
        EgressDenied::Reserved
    } else {
        return Ok(());
    };
    Err(denied)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn url(s: &str) -> url::Url {
        url::Url::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn every_non_public_class_is_refused() {
        let cases = [
            ("127.0.0.1", EgressDenied::Loopback),
            ("127.255.0.9", EgressDenied::Loopback),
            ("::1", EgressDenied::Loopback),
            ("::ffff:127.0.0.1", EgressDenied::Loopback),
            ("10.1.2.3", EgressDenied::Private),
            ("172.16.0.1", EgressDenied::Private),
            ("192.168.1.1", EgressDenied::Private),
            ("::ffff:192.168.1.1", EgressDenied::Private),
            ("fd00::1", EgressDenied::Private),
            ("169.254.169.254", EgressDenied::LinkLocal),
            ("::ffff:169.254.169.254", EgressDenied::LinkLocal),
            ("fe80::1", EgressDenied::LinkLocal),
            ("100.64.0.1", EgressDenied::SharedAddressSpace),
            ("100.127.255.254", EgressDenied::SharedAddressSpace),
            ("0.0.0.0", EgressDenied::Reserved),
            ("::", EgressDenied::Reserved),
            ("255.255.255.255", EgressDenied::Reserved),
            ("224.0.0.1", EgressDenied::Reserved),
            ("192.0.2.1", EgressDenied::Reserved),
            ("198.18.0.1", EgressDenied::Reserved),
            ("240.0.0.1", EgressDenied::Reserved),
            ("64:ff9b::7f00:1", EgressDenied::Reserved),
            ("2002:7f00:1::", EgressDenied::Reserved),
            ("2001:0:4136:e378::1", EgressDenied::Reserved),
            ("2001:db8::1", EgressDenied::Reserved),
            ("::127.0.0.1", EgressDenied::Loopback),
        ];
        for (addr, expected) in cases {
            assert_eq!(classify(ip(addr)), Err(expected), "{addr}");
        }
        for public in [
            "93.184.215.14",
            "1.1.1.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(classify(ip(public)), Ok(()), "{public}");
        }
    }

    #[test]
    fn urls_are_refused_by_scheme_credentials_and_literal_address() {
        let policy = EgressPolicy::new();
        let cases = [
            ("file:///etc/hostname", EgressDenied::Scheme),
            ("chrome://settings", EgressDenied::Scheme),
            ("javascript:alert(1)", EgressDenied::Scheme),
            ("data:text/html,hi", EgressDenied::Scheme),
            ("https://user:pw@example.com/", EgressDenied::Userinfo),
            ("http://127.0.0.1:8787/v1/health", EgressDenied::Loopback),
            // Decimal, hex and octal spellings normalise to the same address.
            ("http://2130706433/", EgressDenied::Loopback),
            ("http://0x7f.1/", EgressDenied::Loopback),
            ("http://0177.0.0.1/", EgressDenied::Loopback),
            ("http://[::ffff:7f00:1]/", EgressDenied::Loopback),
            (
                "http://169.254.169.254/latest/meta-data/",
                EgressDenied::LinkLocal,
            ),
            ("http://localhost:9/", EgressDenied::Loopback),
            ("http://LOCALHOST./", EgressDenied::Loopback),
            ("http://api.localhost/", EgressDenied::Loopback),
        ];
        for (u, expected) in cases {
            assert_eq!(policy.check_url(&url(u)), Err(expected), "{u}");
        }
        assert_eq!(policy.check_url(&url("https://example.com/a")), Ok(()));
        assert_eq!(policy.check_url(&url("wss://example.com/ws")), Ok(()));
    }

    #[test]
    fn an_allowed_pair_opens_exactly_that_port() {
        let policy = EgressPolicy::new().allow_private(
            "127.0.0.1:8788"
                .parse()
                .unwrap_or_else(|e: String| panic!("{e}")),
        );
        let addr = |s: &str| s.parse::<SocketAddr>().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            policy.check_addr("127.0.0.1", addr("127.0.0.1:8788")),
            Ok(())
        );
        // The same service by another name resolving to it.
        assert_eq!(
            policy.check_addr("localhost", addr("127.0.0.1:8788")),
            Ok(())
        );
        assert_eq!(
            policy.check_addr("127.0.0.1", addr("127.0.0.1:8787")),
            Err(EgressDenied::Loopback),
            "another port of an allowed host"
        );
        assert_eq!(
            policy.check_url(&url("http://127.0.0.1:8787/")),
            Err(EgressDenied::Loopback)
        );
        assert_eq!(policy.check_url(&url("http://127.0.0.1:8788/feed")), Ok(()));
    }

    #[test]
    fn a_name_resolving_to_any_refused_address_is_refused() {
        let policy = EgressPolicy::new();
        let public: SocketAddr = "93.184.215.14:443"
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        let private: SocketAddr = "10.0.0.5:443".parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(policy.check_resolved("example.com", &[public]), Ok(public));
        assert_eq!(
            policy.check_resolved("rebind.example", &[public, private]),
            Err(EgressDenied::Private)
        );
        assert_eq!(
            policy.check_resolved("nothing.example", &[]),
            Err(EgressDenied::Unresolved)
        );
    }

    #[test]
    fn allowed_pairs_parse_strictly() {
        let ok = |s: &str| {
            s.parse::<AllowedPrivate>()
                .unwrap_or_else(|e| panic!("{e}"))
        };
        assert_eq!(ok("127.0.0.1:8788").to_string(), "127.0.0.1:8788");
        assert_eq!(ok(" Intranet.Local:443 ").to_string(), "intranet.local:443");
        assert_eq!(ok("[::1]:80").to_string(), "[::1]:80");
        for bad in [
            "127.0.0.1",
            "127.0.0.1:0",
            "*.corp:80",
            "host:port",
            "[::1:80",
            ":80",
            "a b:1",
        ] {
            assert!(bad.parse::<AllowedPrivate>().is_err(), "{bad}");
        }
    }
}
