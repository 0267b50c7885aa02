//! The errors-hierarchy contract, pinned for each service tool: one case per outcome.
//!
//! * the tool's own check → invalid input naming the parameter and value, no request made;
//! * a correctable client failure → invalid input naming the parameter and value;
//! * an uncorrectable failure → external service naming the service and step;
//! * an I/O failure (connection refused, connection dropped) → external service;
//! * a retry signal passes through: a 429 with `Retry-After` makes the dispatcher wait and run
//!   the call again, which then succeeds.

use std::time::{Duration, Instant};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::json;
use thinkers::{Dispatcher, Error};
use thinkers_tools::{
    AddressPolicy, EpoClaims, EpoClaimsConfig, EpoCredentials, PubmedConfig, PubmedFetch, WebFetch,
    WebFetchConfig,
};

use crate::fakes::{EPO_KEY, EPO_SECRET, EpoFake, PubmedFake};
use crate::support::{
    Fake, Hits, assert_external, assert_invalid, call, closed_port, fixture, http_response,
    raw_server,
};

fn web_fetch() -> WebFetch {
    WebFetch::new(WebFetchConfig {
        policy: AddressPolicy::strict().allow("127.0.0.1").unwrap(),
        ..WebFetchConfig::default()
    })
    .unwrap()
}

fn pubmed(base_url: String) -> PubmedFetch {
    PubmedFetch::new(PubmedConfig {
        base_url,
        ..PubmedConfig::default()
    })
    .unwrap()
}

fn epo(base_url: String) -> EpoClaims {
    EpoClaims::new(EpoClaimsConfig {
        base_url,
        credentials: EpoCredentials::new(EPO_KEY, EPO_SECRET),
    })
    .unwrap()
}

async fn web_fake() -> (Fake, Hits) {
    let flaky = Hits::default();
    let seen = flaky.clone();
    let router = Router::new()
        .route(
            "/missing",
            get(|| async { (StatusCode::NOT_FOUND, "no such page") }),
        )
        .route(
            "/broken",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "<h1>boom</h1>") }),
        )
        .route(
            "/private",
            get(|| async { (StatusCode::FORBIDDEN, "members only") }),
        )
        .route(
            "/flaky",
            get(move || {
                let n = seen.bump();
                async move {
                    if n == 1 {
                        (
                            StatusCode::TOO_MANY_REQUESTS,
                            [(header::RETRY_AFTER, "1")],
                            "slow down",
                        )
                            .into_response()
                    } else {
                        (
                            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                            fixture("web/article.html"),
                        )
                            .into_response()
                    }
                }
            }),
        );
    (Fake::start(router).await, flaky)
}

#[tokio::test]
async fn web_fetch_keeps_the_three_outcomes() {
    let d = Dispatcher::builder().build();
    let (fake, flaky) = web_fake().await;

    // The tool's own check: not an http URL. Nothing is sent.
    let err = call(&d, web_fetch(), json!({"url": "ftp://127.0.0.1/x"}))
        .await
        .unwrap_err();
    assert_invalid(&err, "url", "ftp://127.0.0.1/x");

    // Correctable: a 404 on a fetch names the model's URL.
    let missing = fake.url("/missing");
    let err = call(&d, web_fetch(), json!({ "url": missing }))
        .await
        .unwrap_err();
    assert_invalid(&err, "url", &missing);
    assert!(err.to_string().contains("404"), "{err}");

    // Uncorrectable: a 500 and a 403 name the site and the step.
    for path in ["/broken", "/private"] {
        let err = call(&d, web_fetch(), json!({ "url": fake.url(path) }))
            .await
            .unwrap_err();
        assert_external(&err, "127.0.0.1", "fetch");
    }

    // I/O: a refused connection, and a server that hangs up without answering.
    let refused = format!("http://127.0.0.1:{}/", closed_port());
    let err = call(&d, web_fetch(), json!({ "url": refused }))
        .await
        .unwrap_err();
    assert_external(&err, "127.0.0.1", "fetch");
    assert!(err.to_string().contains("transport failure"), "{err}");
    let (dropper, dropped) = raw_server(|_| None).await;
    let err = call(
        &d,
        web_fetch(),
        json!({ "url": format!("http://{dropper}/") }),
    )
    .await
    .unwrap_err();
    assert_external(&err, "127.0.0.1", "fetch");
    assert_eq!(dropped.get(), 1);

    // The retry signal passes through: a 429 makes the dispatcher wait, then the call succeeds.
    let started = Instant::now();
    let page = call(&d, web_fetch(), json!({ "url": fake.url("/flaky") }))
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(950));
    assert_eq!(flaky.get(), 2);
    assert_eq!(page.json["title"], "Admission & budgets — a fixture page");
}

#[tokio::test]
async fn pubmed_fetch_keeps_the_three_outcomes() {
    let d = Dispatcher::builder().build();
    let fake = PubmedFake::start().await;
    let tool = || pubmed(fake.base_url());

    // The tool's own check: an id that is not a number. Nothing is sent.
    let err = call(&d, tool(), json!({"pmids": ["31000001", "PMC42"]}))
        .await
        .unwrap_err();
    assert_invalid(&err, "pmids", "PMC42");
    assert_eq!(fake.hits.get(), 0);

    // Correctable: an id PubMed does not know, and a 400.
    let err = call(&d, tool(), json!({"pmids": ["99999999"]}))
        .await
        .unwrap_err();
    assert_invalid(&err, "pmids", "99999999");
    let err = call(&d, tool(), json!({"pmids": ["400"]}))
        .await
        .unwrap_err();
    assert_invalid(&err, "pmids", "400");

    // Uncorrectable: a 500 names the service and the step.
    let err = call(&d, tool(), json!({"pmids": ["500"]}))
        .await
        .unwrap_err();
    assert_external(&err, "pubmed", "efetch");

    // I/O: refused, and dropped.
    let closed = pubmed(format!("http://127.0.0.1:{}/eutils", closed_port()));
    let err = call(&d, closed, json!({"pmids": ["31000001"]}))
        .await
        .unwrap_err();
    assert_external(&err, "pubmed", "efetch");
    let (dropper, _) = raw_server(|_| None).await;
    let err = call(
        &d,
        pubmed(format!("http://{dropper}/eutils")),
        json!({"pmids": ["31000001"]}),
    )
    .await
    .unwrap_err();
    assert_external(&err, "pubmed", "efetch");

    // The retry signal passes through.
    let before = fake.hits.get();
    let out = call(&d, tool(), json!({"pmids": ["429", "31000001"]}))
        .await
        .unwrap();
    assert_eq!(fake.hits.get() - before, 2);
    assert_eq!(out.json["articles"][0]["pmid"], "31000001");
    assert_eq!(out.json["not_found"], json!(["429"]));
}

#[tokio::test]
async fn epo_claims_keeps_the_three_outcomes() {
    let d = Dispatcher::builder().build();
    let fake = EpoFake::start().await;
    let tool = || epo(fake.base_url());

    // The tool's own check: a number of the wrong shape. Nothing is sent.
    let err = call(&d, tool(), json!({"publication_number": "patent 42"}))
        .await
        .unwrap_err();
    assert_invalid(&err, "publication_number", "patent 42");
    assert_eq!(fake.auth_hits.get() + fake.claims_hits.get(), 0);

    // Correctable: OPS has no such publication (404).
    let err = call(&d, tool(), json!({"publication_number": "EP 9999999 A1"}))
        .await
        .unwrap_err();
    assert_invalid(&err, "publication_number", "EP 9999999 A1");
    assert!(err.to_string().contains("No results found"), "{err}");

    // Uncorrectable: a 500 on the claims step, and credentials the service refuses.
    let err = call(&d, tool(), json!({"publication_number": "EP5000000A1"}))
        .await
        .unwrap_err();
    assert_external(&err, "epo-ops", "claims");
    let wrong = EpoClaims::new(EpoClaimsConfig {
        base_url: fake.base_url(),
        credentials: EpoCredentials::new(EPO_KEY, "wrong"),
    })
    .unwrap();
    let err = call(&d, wrong, json!({"publication_number": "EP1000000A1"}))
        .await
        .unwrap_err();
    assert_external(&err, "epo-ops", "authentication");

    // I/O: the token is issued, then the claims request is dropped; and a refused connection.
    let (addr, hits) = raw_server(|head| {
        head.starts_with("POST /3.2/auth/accesstoken").then(|| {
            http_response(
                "200 OK",
                "application/json",
                r#"{"access_token":"tok-raw","expires_in":"1199"}"#,
            )
        })
    })
    .await;
    let err = call(
        &d,
        epo(format!("http://{addr}")),
        json!({"publication_number": "EP1000000A1"}),
    )
    .await
    .unwrap_err();
    assert_external(&err, "epo-ops", "claims");
    assert_eq!(
        hits.get(),
        2,
        "one token request, one dropped claims request"
    );
    let err = call(
        &d,
        epo(format!("http://127.0.0.1:{}", closed_port())),
        json!({"publication_number": "EP1000000A1"}),
    )
    .await
    .unwrap_err();
    assert_external(&err, "epo-ops", "authentication");

    // The retry signal passes through.
    let before = fake.claims_hits.get();
    let out = call(&d, tool(), json!({"publication_number": "EP4290000A1"}))
        .await
        .unwrap();
    assert_eq!(fake.claims_hits.get() - before, 2);
    assert_eq!(out.json["claims"][0]["number"], 1);
}

#[tokio::test]
async fn no_outcome_is_a_system_failure() {
    // The whole point of the wrap: whatever the service does with the model's parameter, the
    // model never reads "internal error".
    let d = Dispatcher::builder().build();
    let fake = PubmedFake::start().await;
    for ids in [
        json!(["400"]),
        json!(["500"]),
        json!(["1234"]),
        json!(["x"]),
    ] {
        let err = call(&d, pubmed(fake.base_url()), json!({ "pmids": ids }))
            .await
            .unwrap_err();
        assert!(!matches!(err, Error::System { .. }), "{err:?}");
        assert!(!err.is_retry_signal());
    }
}
