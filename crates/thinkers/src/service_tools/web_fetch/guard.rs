//! The address guard of `web_fetch`: which addresses a fetch may connect to.
//!
//! A model chooses the URL, so without a guard a model (or a page it read) could make the runtime
//! reach the deployment's own network: a metadata service on 169.254.169.254, an admin port on
//! loopback, a database on 10.x. The guard refuses every address that is not a public unicast
//! address unless the deployment allowlisted it, and it checks **the address the connection is
//! made to**, not the name in the URL:
//!
//! * an IP literal in a URL is checked before the request is sent (the HTTP connector never
//!   resolves it);
//! * a host name is resolved by `GuardedResolver`, the client's resolver, which refuses the
//!   name when any of its addresses is forbidden and otherwise hands the connector exactly the
//!   addresses it checked. A second lookup that could answer differently (DNS rebinding) never
//!   happens;
//! * redirects are followed by the tool itself, one hop at a time, so every hop goes through the
//!   same two checks.
//!
//! Both checks run before any connection is opened, so a refused address receives no packet.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use ipnet::IpNet;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::{Error, Result};

/// Ranges that are never fetched unless allowlisted, with the name a refusal gives.
const FORBIDDEN: &[(&str, &str)] = &[
    ("0.0.0.0/8", "unspecified"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared (CGNAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignment"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("fc00::/7", "unique local (private)"),
    ("fe80::/10", "link-local"),
    ("ff00::/8", "multicast"),
];

/// Which addresses `web_fetch` may connect to: public unicast addresses, plus what the
/// deployment allowlisted. The default allows nothing else.
#[derive(Debug, Clone, Default)]
pub struct AddressPolicy {
    hosts: Vec<String>,
    nets: Vec<IpNet>,
}

/// A refused address: what it is and why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{address} is a {range} address, which web_fetch does not connect to")]
pub struct Refused {
    /// The refused address.
    pub address: IpAddr,
    /// The kind of range it is in (loopback, private, link-local…).
    pub range: &'static str,
}

impl AddressPolicy {
    /// The strict policy: public unicast addresses only.
    pub fn strict() -> Self {
        Self::default()
    }

    /// Also allow `entry`: a host name (matched exactly, case-insensitively, whatever it resolves
    /// to), an IP address, or a CIDR range such as `127.0.0.1/32` or `10.1.0.0/16`.
    pub fn allow(mut self, entry: &str) -> Result<Self> {
        let entry = entry.trim();
        if let Ok(net) = entry.parse::<IpNet>() {
            self.nets.push(net);
        } else if let Ok(ip) = entry.trim_matches(['[', ']']).parse::<IpAddr>() {
            self.nets.push(IpNet::from(ip));
        } else if !entry.is_empty() && !entry.contains(['/', ' ', ':']) {
            self.hosts
                .push(entry.trim_end_matches('.').to_ascii_lowercase());
        } else {
            return Err(Error::invalid_input(
                "allow",
                Some(entry.to_owned()),
                "expected a host name, an IP address or a CIDR range",
            ));
        }
        Ok(self)
    }

    /// Whether a host name is allowlisted as a name.
    pub fn allows_host(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.');
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }

    /// Check one address: allowed when allowlisted or public unicast.
    pub fn check(&self, address: IpAddr) -> std::result::Result<(), Refused> {
        let address = canonical(address);
        if self.nets.iter().any(|n| n.contains(&address)) {
            return Ok(());
        }
        match forbidden_range(address) {
            Some(range) => Err(Refused { address, range }),
            None => Ok(()),
        }
    }
}

/// An IPv4 address written as IPv6 (`::ffff:10.0.0.1`, or NAT64 `64:ff9b::a00:1`) is the IPv4
/// address it carries.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return IpAddr::V4(v4);
            }
            let s = v6.segments();
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                let [a, b] = s[6].to_be_bytes();
                let [c, d] = s[7].to_be_bytes();
                return IpAddr::V4(Ipv4Addr::new(a, b, c, d));
            }
            IpAddr::V6(v6)
        }
        v4 @ IpAddr::V4(_) => v4,
    }
}

/// The forbidden range an address is in, if any.
fn forbidden_range(address: IpAddr) -> Option<&'static str> {
    if address == IpAddr::V4(Ipv4Addr::BROADCAST) {
        return Some("broadcast");
    }
    if address == IpAddr::V6(Ipv6Addr::UNSPECIFIED) {
        return Some("unspecified");
    }
    FORBIDDEN.iter().find_map(|(net, name)| {
        net.parse::<IpNet>()
            .ok()
            .filter(|n| n.contains(&address))
            .map(|_| *name)
    })
}

/// The resolver of `web_fetch`'s client: resolves a name, then refuses it when any address is
/// forbidden, and otherwise returns exactly the checked addresses for the connector to use.
#[derive(Debug, Clone)]
pub(crate) struct GuardedResolver {
    policy: Arc<AddressPolicy>,
}

impl GuardedResolver {
    pub(crate) fn new(policy: Arc<AddressPolicy>) -> Self {
        Self { policy }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            // Port 0: the connector puts the URL's port in.
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !policy.allows_host(&host) {
                for addr in &found {
                    policy.check(addr.ip())?;
                }
            }
            let addrs: Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

/// The [`Refused`] somewhere on an error's source chain, if the failure was a refusal.
pub(crate) fn refusal_in<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refused> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(r) = e.downcast_ref::<Refused>() {
            return Some(r);
        }
        cur = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_strict_policy_refuses_non_public_addresses() {
        let p = AddressPolicy::strict();
        for (addr, range) in [
            ("127.0.0.1", "loopback"),
            ("10.0.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local"),
            ("100.64.0.1", "shared (CGNAT)"),
            ("0.0.0.0", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fd00::1", "unique local (private)"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("::ffff:10.0.0.1", "private"),
            ("64:ff9b::7f00:1", "loopback"),
        ] {
            let err = p.check(ip(addr)).unwrap_err();
            assert_eq!(err.range, range, "{addr}");
        }
        for public in ["93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700::1"] {
            p.check(ip(public)).unwrap();
        }
    }

    #[test]
    fn the_allowlist_takes_hosts_addresses_and_ranges() {
        let p = AddressPolicy::strict()
            .allow("127.0.0.1")
            .unwrap()
            .allow("10.1.0.0/16")
            .unwrap()
            .allow("LocalHost.")
            .unwrap();
        p.check(ip("127.0.0.1")).unwrap();
        assert!(p.check(ip("127.0.0.2")).is_err());
        p.check(ip("10.1.2.3")).unwrap();
        assert!(p.check(ip("10.2.0.1")).is_err());
        assert!(p.allows_host("localhost"));
        assert!(!p.allows_host("example.com"));
        assert!(AddressPolicy::strict().allow("not a host").is_err());
    }

    #[tokio::test]
    async fn the_resolver_hands_over_only_checked_addresses() {
        use std::str::FromStr;
        let strict = GuardedResolver::new(Arc::new(AddressPolicy::strict()));
        let Err(err) = strict.resolve(Name::from_str("localhost").unwrap()).await else {
            panic!("localhost resolved under the strict policy");
        };
        let refused = refusal_in(err.as_ref()).unwrap();
        assert_eq!(refused.range, "loopback");

        let named = AddressPolicy::strict().allow("localhost").unwrap();
        let resolver = GuardedResolver::new(Arc::new(named));
        let addrs: Vec<SocketAddr> =
            match resolver.resolve(Name::from_str("localhost").unwrap()).await {
                Ok(a) => a.collect(),
                Err(e) => panic!("{e}"),
            };
        assert!(!addrs.is_empty());
        assert!(addrs.iter().all(|a| a.ip().is_loopback()), "{addrs:?}");
    }
}
