//! `web_fetch` and the IPv6 ranges that carry (or reach) an IPv4 address: each URL below names a
//! non-public address a translating network could deliver to an internal service, and each is
//! refused before a connection is opened, with the tool's typed refusal naming the address.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use serde_json::json;
use thinkers::{Dispatcher, Error};
use thinkers_tools::{Refused, WebFetch, WebFetchConfig};

use crate::support::{assert_invalid, call};

/// Fetch `url` with the default (strict) tool and check the refusal: invalid input on `url`,
/// refused at once, its [`Refused`] source naming `address` in the `range`.
async fn assert_refused(url: &str, address: &str, range: &str) {
    let d = Dispatcher::builder().build();
    let tool = WebFetch::new(WebFetchConfig::default()).unwrap();
    let started = Instant::now();
    let err = call(&d, tool, json!({ "url": url })).await.unwrap_err();
    assert_invalid(&err, "url", url);
    assert!(started.elapsed() < Duration::from_secs(1), "{url}: {err}");
    let address: IpAddr = address.parse().unwrap();
    let Error::InvalidInput { source, .. } = &err else {
        panic!("{err:?}");
    };
    let refused = source
        .as_ref()
        .and_then(|s| s.downcast_ref::<Refused>())
        .unwrap_or_else(|| panic!("the refusal is the source of {err}"));
    assert_eq!(refused.address, address, "{err}");
    assert_eq!(refused.range, range, "{err}");
    let message = err.to_string();
    assert!(message.contains(&address.to_string()), "{message}");
    assert!(message.contains(range), "{message}");
}

#[tokio::test]
async fn ipv4_compatible_loopback_is_refused() {
    assert_refused(
        "http://[::127.0.0.1]/",
        "::127.0.0.1",
        "deprecated IPv4-compatible",
    )
    .await;
}

#[tokio::test]
async fn ipv4_translated_loopback_is_refused() {
    assert_refused(
        "http://[::ffff:0:127.0.0.1]/",
        "::ffff:0:127.0.0.1",
        "stateless IPv4-translated",
    )
    .await;
}

#[tokio::test]
async fn local_use_nat64_is_refused() {
    assert_refused(
        "http://[64:ff9b:1::7f00:1]/",
        "64:ff9b:1::7f00:1",
        "local-use NAT64",
    )
    .await;
}

#[tokio::test]
async fn six_to_four_is_refused() {
    assert_refused("http://[2002:7f00:1::]/", "2002:7f00:1::", "6to4").await;
}

#[tokio::test]
async fn teredo_is_refused() {
    assert_refused(
        "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]:8080/",
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        "Teredo",
    )
    .await;
}

#[tokio::test]
async fn discard_only_is_refused() {
    assert_refused("http://[100::1]/", "100::1", "discard-only").await;
}

#[tokio::test]
async fn well_known_nat64_is_judged_by_the_ipv4_it_carries() {
    // 64:ff9b::7f00:1 is 127.0.0.1 behind a NAT64; the refusal names the address as written and
    // says what it carries.
    assert_refused("http://[64:ff9b::7f00:1]/", "64:ff9b::7f00:1", "loopback").await;
}
