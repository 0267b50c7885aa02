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
//! Both checks run before any connection is opened, so a refused address receives no packet. All
//! of them (the URL's literal, every redirect hop's literal, every resolved address) go through
//! one function, [`AddressPolicy::check`], so they apply one rule.
//!
//! # IPv6 addresses that carry an IPv4 address
//!
//! Several IPv6 ranges embed an IPv4 address, and a network that translates them delivers the
//! connection to that IPv4 host: `[::ffff:127.0.0.1]` is loopback on a dual-stack socket, and
//! `[64:ff9b::a00:1]` is 10.0.0.1 behind a NAT64. The guard judges each such range one of two
//! ways:
//!
//! * **the carried IPv4 address is judged by the IPv4 rule** for the IPv4-mapped range
//!   `::ffff:0:0/96` and the NAT64 well-known prefix `64:ff9b::/96` (RFC 6052), whose translation
//!   is fixed: the connection goes to exactly the carried address. `[64:ff9b::808:808]` is
//!   8.8.8.8 and allowed; `[64:ff9b::7f00:1]` is loopback and refused;
//! * **the whole range is refused** for every other one, because what it reaches depends on a
//!   translator or relay the guard cannot see: IPv4-compatible `::/96` (deprecated), IPv4-translated
//!   `::ffff:0:0:0/96` (SIIT), local-use NAT64 `64:ff9b:1::/48` (RFC 8215: the deployment's own
//!   translator, mapping as it is configured), 6to4 `2002::/16` and Teredo `2001::/32`.
//!
//! Beyond these, an IPv6 address is public only inside the global unicast space `2000::/3`,
//! minus its special-purpose blocks (the IETF protocol assignments `2001::/23`, documentation,
//! 6to4). Everything outside it (discard-only `100::/64`, segment-routing `5f00::/16`, unique
//! local, link-local, multicast, the unassigned rest) is refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use ipnet::IpNet;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use thinkers::{Error, Result};

/// Ranges that are never fetched unless allowlisted, with the name a refusal gives. The first
/// range that holds an address names it, so specific ranges come before the ranges holding them.
/// An address in `::ffff:0:0/96` or `64:ff9b::/96` is looked up as the IPv4 address it carries
/// (see the module documentation).
const FORBIDDEN: &[(&str, &str)] = &[
    ("0.0.0.0/8", "unspecified"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared (CGNAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignment"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay (deprecated)"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::/96", "deprecated IPv4-compatible"),
    ("::ffff:0:0:0/96", "stateless IPv4-translated"),
    ("64:ff9b:1::/48", "local-use NAT64"),
    ("100::/64", "discard-only"),
    ("2001::/32", "Teredo"),
    ("2001:2::/48", "benchmarking"),
    ("2001::/23", "IETF protocol assignment"),
    ("2001:db8::/32", "documentation"),
    ("2002::/16", "6to4"),
    ("3fff::/20", "documentation"),
    ("5f00::/16", "segment-routing (SRv6)"),
    ("fc00::/7", "unique local (private)"),
    ("fe80::/10", "link-local"),
    ("ff00::/8", "multicast"),
    // Everything else outside the global unicast space 2000::/3.
    ("::/3", "reserved (not global unicast)"),
    ("4000::/2", "reserved (not global unicast)"),
    ("8000::/1", "reserved (not global unicast)"),
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
#[error(
    "{address}{} is a {range} address, which web_fetch does not connect to",
    carrying(.carried)
)]
#[non_exhaustive]
pub struct Refused {
    /// The refused address, as the URL wrote it or the resolver found it.
    pub address: IpAddr,
    /// The IPv4 address it carries, when it is IPv4-mapped or under the NAT64 well-known prefix
    /// and was judged as that IPv4 address.
    pub carried: Option<Ipv4Addr>,
    /// The kind of range it (or the IPv4 address it carries) is in: loopback, private,
    /// link-local, Teredo…
    pub range: &'static str,
}

fn carrying(carried: &Option<Ipv4Addr>) -> String {
    carried
        .map(|v4| format!(" (carrying {v4})"))
        .unwrap_or_default()
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

    /// Check one address: allowed when allowlisted (the address, or the IPv4 address it carries)
    /// or public unicast. This is the one rule every check of the guard applies; an address that
    /// carries an IPv4 address is judged as the module documentation says.
    pub fn check(&self, address: IpAddr) -> std::result::Result<(), Refused> {
        let carried = carried_ipv4(address);
        let judged = carried.map_or(address, IpAddr::V4);
        if self
            .nets
            .iter()
            .any(|n| n.contains(&address) || n.contains(&judged))
        {
            return Ok(());
        }
        match forbidden_range(judged) {
            Some(range) => Err(Refused {
                address,
                carried,
                range,
            }),
            None => Ok(()),
        }
    }
}

/// The IPv4 address an IPv6 address is judged as: the one it carries when it is IPv4-mapped
/// (`::ffff:10.0.0.1`) or under the NAT64 well-known prefix (`64:ff9b::a00:1`). Every other
/// IPv6 range that carries an IPv4 address is refused whole, by [`FORBIDDEN`].
fn carried_ipv4(address: IpAddr) -> Option<Ipv4Addr> {
    let IpAddr::V6(v6) = address else {
        return None;
    };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [a, b] = s[6].to_be_bytes();
        let [c, d] = s[7].to_be_bytes();
        return Some(Ipv4Addr::new(a, b, c, d));
    }
    None
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
            ("192.0.2.1", "documentation"),
            ("203.0.113.9", "documentation"),
            ("2001:db8::1", "documentation"),
            ("5f00::1", "segment-routing (SRv6)"),
            ("4000::1", "reserved (not global unicast)"),
        ] {
            let err = p.check(ip(addr)).unwrap_err();
            assert_eq!(err.range, range, "{addr}");
            assert_eq!(
                err.address,
                ip(addr),
                "the refusal names the address as given"
            );
        }
        for public in [
            "93.184.216.34",
            "8.8.8.8",
            "172.32.0.1",
            "2606:4700::1",
            // Public addresses next to the special-purpose blocks of 2000::/3.
            "2001:4860:4860::8888",
            "2001:200::1",
            "2003::1",
            "3ffe::1",
        ] {
            p.check(ip(public)).unwrap();
        }
    }

    #[test]
    fn ipv6_ranges_that_carry_ipv4_are_refused_whole() {
        let p = AddressPolicy::strict();
        for (addr, range) in [
            ("::127.0.0.1", "deprecated IPv4-compatible"),
            ("::8.8.8.8", "deprecated IPv4-compatible"),
            ("::ffff:0:127.0.0.1", "stateless IPv4-translated"),
            ("::ffff:0:8.8.8.8", "stateless IPv4-translated"),
            ("64:ff9b:1::7f00:1", "local-use NAT64"),
            ("64:ff9b:1::808:808", "local-use NAT64"),
            ("2002:7f00:1::", "6to4"),
            ("2002:808:808::1", "6to4"),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
            ("2001::1", "Teredo"),
            ("100::1", "discard-only"),
            ("100::ffff:ffff:ffff:ffff", "discard-only"),
        ] {
            let err = p.check(ip(addr)).unwrap_err();
            assert_eq!(err.range, range, "{addr}");
            assert_eq!(err.address, ip(addr), "{addr}");
            assert_eq!(err.carried, None, "{addr}");
            assert!(err.to_string().starts_with(&ip(addr).to_string()), "{err}");
        }
    }

    #[test]
    fn mapped_and_well_known_nat64_addresses_are_judged_as_the_ipv4_they_carry() {
        let p = AddressPolicy::strict();
        for (addr, carried, range) in [
            ("::ffff:127.0.0.1", "127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "169.254.169.254", "link-local"),
            ("64:ff9b::7f00:1", "127.0.0.1", "loopback"),
            ("64:ff9b::10.0.0.1", "10.0.0.1", "private"),
            ("64:ff9b::a9fe:a9fe", "169.254.169.254", "link-local"),
        ] {
            let err = p.check(ip(addr)).unwrap_err();
            assert_eq!(err.range, range, "{addr}");
            assert_eq!(err.address, ip(addr), "{addr}");
            assert_eq!(err.carried, Some(carried.parse().unwrap()), "{addr}");
            let msg = err.to_string();
            assert!(msg.contains(carried) && msg.contains(range), "{msg}");
        }
        for public in ["64:ff9b::808:808", "64:ff9b::1.1.1.1", "::ffff:8.8.8.8"] {
            p.check(ip(public)).unwrap();
        }
        // An allowlisted IPv4 address is allowed in the forms that carry it.
        let local = AddressPolicy::strict().allow("127.0.0.1").unwrap();
        local.check(ip("::ffff:127.0.0.1")).unwrap();
        local.check(ip("64:ff9b::7f00:1")).unwrap();
        assert!(local.check(ip("::127.0.0.1")).is_err());
    }

    #[test]
    fn every_forbidden_range_parses() {
        for (net, name) in FORBIDDEN {
            assert!(net.parse::<IpNet>().is_ok(), "{net} ({name})");
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
