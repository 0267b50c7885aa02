//! The Gemini dialect's failures over real HTTP against thinkers-sim: `google.rpc` errors mapped
//! onto the hierarchy naming the provider, the entry and the path (never the key, which travels
//! in `x-goog-api-key`), a stream and a whole answer decoded through the dispatcher.

use thinkers::ErrorKind;
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
    let mut toml = format!(
        "[providers.g]\ndialect = \"gemini\"\nbase_url = \"{}\"\napi_key_env = \"THINKERS_SIM_KEY\"\n",
        sim.gemini_base_url()
    );
    for (id, model) in [("g-ok", "gemini-ok"), ("g-missing", "gemini-missing")] {
        toml.push_str(&format!(
            "\n[[entries]]\nid = \"{id}\"\nprovider = \"g\"\nmodel = \"{model}\"\ngrade = \"small\"\n\
             context_window = 100000\noutput_ceiling = 4096\nprice_in = 1.0\nprice_out = 2.0\n\
             currency = \"USD\"\nnative_tools = true\n"
        ));
    }
    let rt = runtime(&toml, &Timeouts::default(), None).await;
    (sim, rt)
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
