//! The fake services: PubMed E-utilities and EPO OPS on loopback, replaying the fixtures.
//!
//! Each fake picks its answer from what the request asks for, so one server serves every outcome:
//! a known id or number answers with a fixture, others with the failure the test is about.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::support::{Fake, Hits, fixture};

/// The credentials the EPO fake accepts.
pub const EPO_KEY: &str = "ops-key";
pub const EPO_SECRET: &str = "ops-secret";
/// `Basic base64("ops-key:ops-secret")`.
const EPO_BASIC: &str = "Basic b3BzLWtleTpvcHMtc2VjcmV0";

fn xml(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/xml; charset=UTF-8")],
        body,
    )
        .into_response()
}

fn throttled() -> Response {
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::RETRY_AFTER, "1")],
        "rate limit exceeded",
    )
        .into_response()
}

/// The PubMed fake, with what it saw.
pub struct PubmedFake {
    pub server: Fake,
    pub hits: Hits,
    /// When each request arrived.
    pub arrivals: Arc<Mutex<Vec<Instant>>>,
    /// The query string of each request.
    pub queries: Arc<Mutex<Vec<HashMap<String, String>>>>,
}

impl PubmedFake {
    /// `efetch.fcgi` answering by id: `31000001`/`31000002` from the two-article fixture, `400`
    /// with a 400, `500` with a 500, `429` with a 429 the first time, anything else with an
    /// empty article set.
    pub async fn start() -> Self {
        let hits = Hits::default();
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let queries = Arc::new(Mutex::new(Vec::new()));
        let throttled_once = Hits::default();
        let (h, a, q) = (hits.clone(), arrivals.clone(), queries.clone());
        let router = Router::new().route(
            "/eutils/efetch.fcgi",
            get(move |Query(params): Query<HashMap<String, String>>| {
                let (h, a, q, t) = (h.clone(), a.clone(), q.clone(), throttled_once.clone());
                async move {
                    a.lock().unwrap().push(Instant::now());
                    h.bump();
                    let ids = params.get("id").cloned().unwrap_or_default();
                    q.lock().unwrap().push(params);
                    let asked = |id: &str| ids.split(',').any(|i| i == id);
                    if asked("400") {
                        xml(
                            StatusCode::BAD_REQUEST,
                            "<eFetchResult><ERROR>Invalid id</ERROR></eFetchResult>".into(),
                        )
                    } else if asked("500") {
                        xml(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "<html>oops</html>".into(),
                        )
                    } else if asked("429") && t.bump() == 1 {
                        throttled()
                    } else if asked("31000001") || asked("31000002") {
                        xml(StatusCode::OK, fixture("pubmed/efetch_two_articles.xml"))
                    } else {
                        xml(StatusCode::OK, fixture("pubmed/efetch_empty.xml"))
                    }
                }
            }),
        );
        Self {
            server: Fake::start(router).await,
            hits,
            arrivals,
            queries,
        }
    }

    /// The base URL to configure the tool with.
    pub fn base_url(&self) -> String {
        self.server.url("/eutils")
    }
}

/// The EPO OPS fake, with what it saw.
pub struct EpoFake {
    pub server: Fake,
    pub auth_hits: Hits,
    pub claims_hits: Hits,
    /// The epodoc numbers the claims requests named.
    pub numbers: Arc<Mutex<Vec<String>>>,
}

impl EpoFake {
    /// Token endpoint: issues `tok-1`, `tok-2`… for the right basic credentials, 401 otherwise.
    /// Claims endpoint, by number: `EP1000000[.A1]` the fixture; `EP9999999.A1` a 404 fault;
    /// `EP5000000.A1` a 500; `EP4290000.A1` a 429 the first time; `EP4010000.A1` a 401 for the
    /// first token (a token the service revoked early), the fixture for a later one.
    pub async fn start() -> Self {
        let auth_hits = Hits::default();
        let claims_hits = Hits::default();
        let numbers = Arc::new(Mutex::new(Vec::new()));
        let throttled_once = Hits::default();
        let issued = auth_hits.clone();
        let (c, n) = (claims_hits.clone(), numbers.clone());
        let router = Router::new()
            .route(
                "/3.2/auth/accesstoken",
                post(move |headers: HeaderMap, body: String| {
                    let issued = issued.clone();
                    async move {
                        let auth = headers.get(header::AUTHORIZATION);
                        if auth.and_then(|v| v.to_str().ok()) != Some(EPO_BASIC)
                            || body != "grant_type=client_credentials"
                        {
                            return (StatusCode::UNAUTHORIZED, "invalid client").into_response();
                        }
                        let n = issued.bump();
                        let token = serde_json::json!({
                            "access_token": format!("tok-{n}"),
                            "token_type": "BearerToken",
                            "expires_in": "1199",
                            "status": "approved",
                        });
                        axum::Json(token).into_response()
                    }
                }),
            )
            .route(
                "/3.2/rest-services/published-data/publication/epodoc/{number}/claims",
                get(move |Path(number): Path<String>, headers: HeaderMap| {
                    let (c, n, t) = (c.clone(), n.clone(), throttled_once.clone());
                    async move {
                        c.bump();
                        n.lock().unwrap().push(number.clone());
                        let bearer = headers
                            .get(header::AUTHORIZATION)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_owned();
                        if !bearer.starts_with("Bearer tok-") {
                            return (StatusCode::UNAUTHORIZED, "no token").into_response();
                        }
                        match number.as_str() {
                            "EP9999999.A1" => {
                                xml(StatusCode::NOT_FOUND, fixture("epo/fault_not_found.xml"))
                            }
                            "EP5000000.A1" => xml(
                                StatusCode::INTERNAL_SERVER_ERROR,
                                "<fault><message>backend down</message></fault>".into(),
                            ),
                            "EP4290000.A1" if t.bump() == 1 => throttled(),
                            "EP4010000.A1" if bearer == "Bearer tok-1" => {
                                (StatusCode::UNAUTHORIZED, "token expired").into_response()
                            }
                            _ => xml(StatusCode::OK, fixture("epo/claims_ep1000000.xml")),
                        }
                    }
                }),
            );
        Self {
            server: Fake::start(router).await,
            auth_hits,
            claims_hits,
            numbers,
        }
    }

    /// The base URL to configure the tool with.
    pub fn base_url(&self) -> String {
        self.server.url("")
    }
}
