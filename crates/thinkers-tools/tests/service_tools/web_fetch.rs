//! `web_fetch`: pages as text, redirects, the size cap, and the address guard.
//!
//! The guard tests never send a packet to a private-range address: the refusal happens before a
//! connection is opened, which the tests check where they can (a listener on the refused loopback
//! address counts zero connections; a refused private address fails at once).

use std::time::{Duration, Instant};

use axum::Router;
use axum::http::header;
use axum::response::Redirect;
use axum::routing::get;
use serde_json::json;
use thinkers::{Dispatcher, Error};
use thinkers_tools::{AddressPolicy, WebFetch, WebFetchConfig, WebPage};
use tokio::net::TcpListener;

use crate::support::{Fake, Hits, assert_external, assert_invalid, call, fixture};

fn allowing(entries: &[&str]) -> WebFetch {
    let mut policy = AddressPolicy::strict();
    for e in entries {
        policy = policy.allow(e).unwrap();
    }
    WebFetch::new(WebFetchConfig {
        policy,
        ..WebFetchConfig::default()
    })
    .unwrap()
}

/// A site with a page, redirects, a big body and an image. `hits` counts every request.
async fn site(redirect_target: Option<String>) -> (Fake, Hits) {
    let hits = Hits::default();
    let h = hits.clone();
    let router = Router::new()
        .route(
            "/article",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    fixture("web/article.html"),
                )
            }),
        )
        .route("/moved", get(|| async { Redirect::permanent("/article") }))
        .route("/loop", get(|| async { Redirect::temporary("/loop") }))
        .route(
            "/elsewhere",
            get(move || {
                let target = redirect_target.clone().unwrap_or_default();
                async move { Redirect::temporary(&target) }
            }),
        )
        .route("/notes.txt", get(|| async { "plain notes\nline two" }))
        .route("/big", get(|| async { "x".repeat(64 * 1024) }))
        .route(
            "/logo.png",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "image/png")],
                    vec![0x89u8, b'P', b'N', b'G'],
                )
            }),
        )
        .layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                h.bump();
                async move { next.run(req).await }
            },
        ));
    (Fake::start(router).await, hits)
}

fn page(out: &thinkers::tool::ToolOutput) -> WebPage {
    out.downcast::<WebPage>().unwrap().clone()
}

#[tokio::test]
async fn a_page_reads_as_text_with_its_title() {
    let d = Dispatcher::builder().build();
    let (fake, _) = site(None).await;
    let out = call(
        &d,
        allowing(&["127.0.0.1"]),
        json!({"url": fake.url("/moved")}),
    )
    .await
    .unwrap();
    let p = page(&out);
    assert_eq!(
        p.url,
        fake.url("/article"),
        "the final URL after the redirect"
    );
    assert_eq!(p.status, 200);
    assert_eq!(p.content_type.as_deref(), Some("text/html; charset=utf-8"));
    assert_eq!(
        p.title.as_deref(),
        Some("Admission & budgets — a fixture page")
    );
    assert!(p.text.contains("How admission works"), "{}", p.text);
    assert!(
        p.text
            .contains("A job waits until its *whole* reservation fits the budget."),
        "{}",
        p.text
    );
    assert!(p.text.contains("* Tokens per minute"), "{}", p.text);
    let docs = format!("[1]: {}", fake.url("/docs"));
    assert!(p.text.contains(&docs), "{}", p.text);
    assert!(!p.text.contains("window.tracker"), "{}", p.text);
    assert!(!p.truncated);
    assert_eq!(out.json["title"], "Admission & budgets — a fixture page");

    let out = call(
        &d,
        allowing(&["127.0.0.1"]),
        json!({"url": fake.url("/notes.txt")}),
    )
    .await
    .unwrap();
    let p = page(&out);
    assert_eq!(p.text, "plain notes\nline two");
    assert_eq!(p.title, None);
}

#[tokio::test]
async fn the_size_cap_truncates_and_says_so() {
    let d = Dispatcher::builder().build();
    let (fake, _) = site(None).await;
    let tool = WebFetch::new(WebFetchConfig {
        max_bytes: 1000,
        policy: AddressPolicy::strict().allow("127.0.0.1/32").unwrap(),
        ..WebFetchConfig::default()
    })
    .unwrap();
    let p = page(
        &call(&d, tool, json!({"url": fake.url("/big")}))
            .await
            .unwrap(),
    );
    assert!(p.truncated);
    assert_eq!(p.text.len(), 1000);
}

#[tokio::test]
async fn what_is_not_a_readable_page_is_the_models_to_fix() {
    let d = Dispatcher::builder().build();
    let (fake, _) = site(None).await;
    let tool = || allowing(&["127.0.0.1"]);
    let img = fake.url("/logo.png");
    let err = call(&d, tool(), json!({ "url": img })).await.unwrap_err();
    assert_invalid(&err, "url", &img);
    assert!(err.to_string().contains("image/png"), "{err}");

    let looping = fake.url("/loop");
    let err = call(&d, tool(), json!({ "url": looping }))
        .await
        .unwrap_err();
    assert_invalid(&err, "url", &looping);
    assert!(
        err.to_string().contains("redirects more than 5 times"),
        "{err}"
    );

    let err = call(&d, tool(), json!({"url": "not a url"}))
        .await
        .unwrap_err();
    assert_invalid(&err, "url", "not a url");
}

#[tokio::test]
async fn loopback_is_refused_by_default_before_connecting() {
    let d = Dispatcher::builder().build();
    let (fake, hits) = site(None).await;
    let strict = || WebFetch::new(WebFetchConfig::default()).unwrap();

    // An IP literal, checked before the request.
    let url = fake.url("/article");
    let err = call(&d, strict(), json!({ "url": url })).await.unwrap_err();
    assert_invalid(&err, "url", &url);
    assert!(err.to_string().contains("loopback"), "{err}");

    // A name that resolves to loopback, refused by the client's resolver.
    let by_name = format!("http://localhost:{}/article", fake.addr.port());
    let err = call(&d, strict(), json!({ "url": by_name }))
        .await
        .unwrap_err();
    assert_invalid(&err, "url", &by_name);
    assert!(err.to_string().contains("loopback"), "{err}");

    assert_eq!(hits.get(), 0, "no request reached the server");
}

#[tokio::test]
async fn private_ranges_are_refused_without_a_packet() {
    let d = Dispatcher::builder().build();
    for url in [
        "http://10.0.0.1/admin",
        "http://172.16.0.1/",
        "http://192.168.1.1:8080/",
        "http://169.254.169.254/latest/meta-data/",
        "http://100.64.0.1/",
        "http://[fd00::1]/",
        "http://[fe80::1]/",
        "http://0.0.0.0/",
        "http://224.0.0.1/",
    ] {
        let started = Instant::now();
        let err = call(
            &d,
            WebFetch::new(WebFetchConfig::default()).unwrap(),
            json!({ "url": url }),
        )
        .await
        .unwrap_err();
        assert_invalid(&err, "url", url);
        // Refused before any connection attempt: no connect timeout was waited out.
        assert!(started.elapsed() < Duration::from_secs(1), "{url}");
        match &err {
            Error::InvalidInput { source, .. } => {
                let refused = source
                    .as_ref()
                    .and_then(|s| s.downcast_ref::<thinkers_tools::Refused>())
                    .expect("the refusal is the source");
                assert_eq!(refused.address.to_string(), url_host(url), "{url}");
            }
            other => panic!("{other:?}"),
        }
    }
}

fn url_host(url: &str) -> String {
    let u = url::Url::parse(url).unwrap();
    u.host_str().unwrap().trim_matches(['[', ']']).to_owned()
}

#[tokio::test]
async fn a_redirect_into_a_private_address_is_refused() {
    let d = Dispatcher::builder().build();

    // Into a private range: refused at the hop, before connecting.
    let (fake, _) = site(Some("http://10.0.0.1/admin".to_owned())).await;
    let start = fake.url("/elsewhere");
    let err = call(&d, allowing(&["127.0.0.1"]), json!({ "url": start }))
        .await
        .unwrap_err();
    assert_invalid(&err, "url", &start);
    assert!(err.to_string().contains("10.0.0.1"), "{err}");
    assert!(err.to_string().contains("redirect"), "{err}");

    // Into another loopback address that is not allowlisted: a listener there sees nothing.
    let other = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let other_addr = other.local_addr().unwrap();
    let reached = Hits::default();
    let r = reached.clone();
    let watcher = tokio::spawn(async move {
        while other.accept().await.is_ok() {
            r.bump();
        }
    });
    let (fake, _) = site(Some(format!("http://{other_addr}/article"))).await;
    let start = fake.url("/elsewhere");
    let err = call(&d, allowing(&["127.0.0.1"]), json!({ "url": start }))
        .await
        .unwrap_err();
    assert_invalid(&err, "url", &start);
    assert!(err.to_string().contains("127.0.0.2"), "{err}");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        reached.get(),
        0,
        "the refused address received no connection"
    );
    watcher.abort();
}

#[tokio::test]
async fn the_allowlist_lets_a_test_server_through_by_name_or_range() {
    let d = Dispatcher::builder().build();
    let (fake, hits) = site(None).await;
    let by_name = format!("http://localhost:{}/article", fake.addr.port());
    let out = call(&d, allowing(&["localhost"]), json!({ "url": by_name }))
        .await
        .unwrap();
    assert_eq!(
        page(&out).title.as_deref(),
        Some("Admission & budgets — a fixture page")
    );
    let out = call(
        &d,
        allowing(&["127.0.0.0/8"]),
        json!({"url": fake.url("/article")}),
    )
    .await
    .unwrap();
    assert_eq!(page(&out).status, 200);
    assert_eq!(hits.get(), 2);
}

#[tokio::test]
async fn a_silent_server_times_out_as_a_service_failure() {
    let d = Dispatcher::builder().build();
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    let tool = WebFetch::new(WebFetchConfig {
        timeout: Duration::from_millis(300),
        policy: AddressPolicy::strict().allow("127.0.0.1").unwrap(),
        ..WebFetchConfig::default()
    })
    .unwrap();
    let err = call(&d, tool, json!({"url": format!("http://{addr}/")}))
        .await
        .unwrap_err();
    assert_external(&err, "127.0.0.1", "fetch");
    holder.abort();
}

#[tokio::test]
async fn the_largest_retry_after_a_header_can_carry_is_waited_for_the_cap() {
    // A site that throttles with `Retry-After: 18446744073709551615` (u64::MAX seconds): the
    // dispatcher waits its cap for each throttle (here 50 ms), never an hour or an overflow, and
    // ends with the throttle bound, not a system failure.
    let router = Router::new().route(
        "/busy",
        get(|| async {
            (
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, "18446744073709551615")],
                "slow down",
            )
        }),
    );
    let fake = Fake::start(router).await;
    let d = Dispatcher::builder()
        .config(thinkers::dispatch::DispatchConfig {
            max_server_wait: Duration::from_millis(50),
            max_throttles: 2,
            ..thinkers::dispatch::DispatchConfig::default()
        })
        .build();
    let started = Instant::now();
    let err = call(
        &d,
        allowing(&["127.0.0.0/8"]),
        json!({"url": fake.url("/busy")}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), thinkers::ErrorKind::AttemptsExhausted, "{err}");
    let text = err.to_string();
    assert!(text.contains("throttled"), "{text}");
    // The bound names what throttled the call: the site and step, the status, the URL and the
    // site's message.
    for part in [
        "127.0.0.1 fetch",
        "HTTP 429",
        &fake.url("/busy"),
        "slow down",
    ] {
        assert!(text.contains(part), "{part:?} missing from {text}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_nested_divs_answers_within_the_deadline() {
    // Just under the 2 MiB size cap of nested `<div>`s, the text at the bottom. Parsed as the
    // HTML standard says, this takes minutes of CPU; the tool must answer within its 2 s
    // timeout, with the text or with the timeout error. The outer bound is generous (the
    // machine is shared); without the fix the call held a runtime worker for minutes.
    let depth = (2 * 1024 * 1024 - 200) / "<div>".len();
    let body = format!(
        "<!doctype html><html><head><title>Deep</title></head><body>{}deep text</body></html>",
        "<div>".repeat(depth)
    );
    let router = Router::new().route(
        "/deep",
        get(move || {
            let body = body.clone();
            async move { ([(header::CONTENT_TYPE, "text/html")], body) }
        }),
    );
    let fake = Fake::start(router).await;
    let tool = WebFetch::new(WebFetchConfig {
        timeout: Duration::from_secs(2),
        policy: AddressPolicy::strict().allow("127.0.0.1").unwrap(),
        ..WebFetchConfig::default()
    })
    .unwrap();
    let d = Dispatcher::builder().build();
    let url = fake.url("/deep");
    let outcome = tokio::time::timeout(
        Duration::from_secs(30),
        call(&d, tool, json!({ "url": url })),
    )
    .await
    .unwrap_or_else(|_| panic!("no answer 30 s into a call with a 2 s timeout"));
    match outcome {
        Ok(out) => {
            let p = page(&out);
            assert_eq!(p.title.as_deref(), Some("Deep"));
            assert_eq!(p.text, "deep text");
            assert!(!p.truncated);
        }
        Err(err) => {
            assert_external(&err, "127.0.0.1", "fetch");
            let message = err.to_string();
            assert!(
                message.contains(&url) && message.contains("2s"),
                "{message}"
            );
        }
    }
}
