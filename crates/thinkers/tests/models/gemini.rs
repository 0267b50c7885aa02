//! The Gemini dialect's failures over real HTTP against thinkers-sim: `google.rpc` errors mapped
//! onto the hierarchy naming the provider, the entry and the path (never the key, which travels
//! in `x-goog-api-key`), a stream and a whole answer decoded through the dispatcher.

use thinkers::ErrorKind;
use thinkers::dispatch::{Axis, BudgetStore as _, MemoryBudgets, RateSource};
use thinkers::model::SIM_DEFAULT_KEY;
use thinkers_sim::{FaultKind, FaultRule, Sim, SimConfig, SimModel};

use crate::support::{Timeouts, call, requests, runtime, streamed};

/// A sim serving `gemini-ok`, and a runtime whose provider `g` has the entries `g-ok` and
/// `g-missing` (a model the sim does not serve).
async fn setup() -> (Sim, thinkers::Runtime) {
    let sim = Sim::start(
        SimConfig::builder()
            .log_bodies(true)
            .model(SimModel::new("gemini-ok"))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let toml = catalog(
        &sim,
        &[("g-ok", "gemini-ok"), ("g-missing", "gemini-missing")],
    );
    let rt = runtime(&toml, &Timeouts::default(), None).await;
    (sim, rt)
}

/// A catalog whose provider `g` speaks Gemini to `sim`, with an entry per `(id, model)` and no
/// rate limits.
pub fn catalog(sim: &Sim, entries: &[(&str, &str)]) -> String {
    let mut toml = format!(
        "[providers.g]\ndialect = \"gemini\"\nbase_url = \"{}\"\napi_key_env = \"THINKERS_SIM_KEY\"\n",
        sim.gemini_base_url()
    );
    for (id, model) in entries {
        toml.push_str(&format!(
            "\n[[entries]]\nid = \"{id}\"\nprovider = \"g\"\nmodel = \"{model}\"\ngrade = \"small\"\n\
             context_window = 100000\noutput_ceiling = 4096\nprice_in = 1.0\nprice_out = 2.0\n\
             currency = \"USD\"\nnative_tools = true\n"
        ));
    }
    toml
}

#[tokio::test]
async fn whole_and_streamed_answers_come_through_the_dispatcher() {
    let (sim, rt) = setup().await;
    let out = rt.run(call("g-ok")).await.unwrap();
    assert!(!out.response.text().is_empty());
    assert!(out.response.usage.input > 0 && out.response.usage.output > 0);
    let (job, text) = streamed("g-ok");
    let out = rt.run(job).await.unwrap();
    assert_eq!(*text.lock().unwrap(), out.response.text());
    let logged = sim.requests();
    assert_eq!(
        logged[1].endpoint,
        "/v1beta/models/{model}:streamGenerateContent"
    );
    assert_eq!(requests(&sim, "gemini-ok"), 2);
}

#[tokio::test]
async fn google_rpc_errors_name_provider_entry_and_path_never_the_key() {
    let (sim, rt) = setup().await;
    let err = rt.run(call("g-missing")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ExternalService, "{err}");
    let msg = err.to_string();
    for part in [
        "model `gemini-missing` not found",
        "`g`",
        "g-missing",
        "/v1beta/models/gemini-missing:generateContent",
    ] {
        assert!(msg.contains(part), "`{part}` is not named: {msg}");
    }
    // A provider that echoes the key it got: the key never shows.
    sim.inject(
        FaultRule::new(FaultKind::EchoKey)
            .status(403)
            .for_model("gemini-ok")
            .times(1),
    );
    let err = rt.run(call("g-ok")).await.unwrap_err();
    let msg = format!("{err} {err:?}");
    assert!(msg.contains("PERMISSION_DENIED"), "{msg}");
    assert!(!msg.contains(SIM_DEFAULT_KEY), "{msg}");
    assert!(msg.contains("g-ok"), "{msg}");
}

#[tokio::test]
async fn a_quota_failure_paces_a_budget_without_figures_at_the_quota_stated() {
    // Gemini states no limits in headers; its 429 names the quota broken and its figure (here
    // 120 requests a minute, enforced over 1 s windows). The catalog gives no rate: from the
    // first refusal on, the budget paces requests at the figure stated, not at a guess of what
    // went through.
    let sim = Sim::start(
        SimConfig::builder()
            .model(
                SimModel::new("gemini-q")
                    .rpm(120)
                    .limit_window(std::time::Duration::from_secs(1)),
            )
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let toml = catalog(&sim, &[("g-q", "gemini-q")]);
    let store = std::sync::Arc::new(MemoryBudgets::new());
    let rt = thinkers::Runtime::builder(
        thinkers::model::Catalog::from_toml_str(&toml, "q.toml").unwrap(),
    )
    .client(crate::support::client(&Timeouts::default()))
    .config(crate::support::quick_retries())
    .budgets(store.clone())
    .build()
    .await
    .unwrap();
    let calls = (0..8).map(|_| rt.run(call("g-q")));
    for result in futures::future::join_all(calls).await {
        result.unwrap();
    }
    assert!(
        sim.stats().model("gemini-q").rate_limited > 0,
        "the sim refused some"
    );
    let rates = store.rates("model:g-q");
    let requests = rates
        .iter()
        .find(|r| r.axis == Axis::Requests)
        .unwrap_or_else(|| panic!("no request axis: {rates:?}"));
    assert_eq!(requests.catalog_per_minute, None, "{rates:?}");
    assert!(
        matches!(requests.source, RateSource::Header | RateSource::Throttle),
        "{rates:?}"
    );
    // The figure, or a throttle's margin below it.
    assert!((108.0..=120.0).contains(&requests.per_minute), "{rates:?}");
    assert!(
        rates.iter().all(|r| r.axis == Axis::Requests),
        "a request quota paces no tokens: {rates:?}"
    );
}
