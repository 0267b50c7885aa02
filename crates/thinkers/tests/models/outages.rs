//! What a provider that keeps refusing costs and says, the same in every dialect: a persistent
//! 429 ends naming provider, entry, status, URL and the provider's message; an outage (502, 503,
//! 504, Anthropic's 529 `overloaded_error`) is a transient fault bounded by
//! `max_transient_retries`; an HTML error page reaches the error as one line.

use std::sync::atomic::Ordering;
use std::time::Duration;

use thinkers::ErrorKind;
use thinkers::model::SIM_DEFAULT_KEY;
use thinkers_sim::{FaultKind, FaultRule, Sim, SimConfig, SimModel};

use crate::support::{Timeouts, call, canned_server, requests, runtime};

/// Each dialect's provider key, entry, model and the path its requests go to.
pub const DIALECTS: [(&str, &str, &str, &str); 5] = [
    ("o-openai", "o-e", "o-m", "/v1/chat/completions"),
    ("o-anthropic", "a-e", "a-m", "/v1/messages"),
    ("o-responses", "r-e", "r-m", "/v1/responses"),
    (
        "o-gemini",
        "g-e",
        "g-m",
        "/v1beta/models/g-m:generateContent",
    ),
    ("o-bedrock", "b-e", "b-m", "/model/b-m/converse"),
];

/// A sim serving one model per dialect and a runtime over a catalog of one provider and one
/// entry per dialect, with server-requested waits capped at 20 ms.
pub async fn every_dialect() -> (Sim, thinkers::Runtime) {
    let mut b = SimConfig::builder().log_bodies(true).seed(7);
    for (_, _, model, _) in DIALECTS {
        b = b.model(SimModel::new(model));
    }
    let sim = Sim::start(b.build().unwrap()).await.unwrap();
    let base = sim.base_url();
    let mut toml = format!(
        "[providers.o-openai]\ndialect = \"openai\"\nbase_url = \"{base}/v1\"\n\
         api_key_env = \"THINKERS_SIM_KEY\"\n\n\
         [providers.o-anthropic]\ndialect = \"anthropic\"\nbase_url = \"{base}\"\n\
         api_key_env = \"THINKERS_SIM_KEY\"\n\n\
         [providers.o-responses]\ndialect = \"openai-responses\"\nbase_url = \"{base}/v1\"\n\
         api_key_env = \"THINKERS_SIM_KEY\"\n\n\
         [providers.o-gemini]\ndialect = \"gemini\"\nbase_url = \"{base}/v1beta\"\n\
         api_key_env = \"THINKERS_SIM_KEY\"\n\n\
         [providers.o-bedrock]\ndialect = \"bedrock-converse\"\nbase_url = \"{base}\"\n\
         region = \"us-east-1\"\naccess_key_env = \"THINKERS_SIM_KEY\"\n\
         secret_key_env = \"THINKERS_SIM_KEY\"\n"
    );
    for (provider, entry, model, _) in DIALECTS {
        toml.push_str(&format!(
            "\n[[entries]]\nid = \"{entry}\"\nprovider = \"{provider}\"\nmodel = \"{model}\"\n\
             grade = \"small\"\ncontext_window = 100000\noutput_ceiling = 4096\nprice_in = 1.0\n\
             price_out = 2.0\ncurrency = \"USD\"\nnative_tools = true\n"
        ));
    }
    let t = Timeouts {
        max_retry_wait: Some(Duration::from_millis(20)),
        ..Timeouts::default()
    };
    let rt = runtime(&toml, &t, None).await;
    (sim, rt)
}

#[tokio::test]
async fn a_persistent_429_names_provider_entry_status_url_and_message() {
    let (sim, rt) = every_dialect().await;
    let bound = rt.dispatcher().config().max_throttles;
    for (provider, entry, model, path) in DIALECTS {
        sim.inject(
            FaultRule::new(FaultKind::RateLimit429)
                .for_model(model)
                .times(100),
        );
        let err = tokio::time::timeout(Duration::from_secs(30), rt.run(call(entry)))
            .await
            .expect("a throttled call ends")
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AttemptsExhausted, "{entry}: {err}");
        assert_eq!(
            requests(&sim, model),
            u64::from(bound) + 1,
            "{entry}: {err}"
        );
        let msg = err.to_string();
        for part in [
            &format!("provider `{provider}`"),
            &format!("entry `{entry}`"),
            "HTTP 429",
            path,
        ] {
            assert!(msg.contains(part), "{entry}: `{part}` is not named: {msg}");
        }
        // The provider's own words, on one line.
        let said = [
            "rate limit",
            "too many requests",
            "exceeded your current quota",
        ];
        assert!(
            said.iter().any(|s| msg.to_lowercase().contains(s)),
            "{entry}: the provider's message is missing: {msg}"
        );
        assert!(!msg.contains('\n'), "{entry}: {msg}");
        assert!(!msg.contains(SIM_DEFAULT_KEY), "{entry}: {msg}");
    }
}

#[tokio::test]
async fn an_outage_is_a_named_transient_fault_in_every_dialect() {
    // The sim's overload: Anthropic 529 `overloaded_error`, every other dialect 503.
    let (sim, rt) = every_dialect().await;
    let bound = rt.dispatcher().config().max_transient_retries;
    for (provider, entry, model, path) in DIALECTS {
        sim.inject(
            FaultRule::new(FaultKind::Overloaded529)
                .for_model(model)
                .times(100),
        );
        let err = tokio::time::timeout(Duration::from_secs(30), rt.run(call(entry)))
            .await
            .expect("an outage ends")
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ExternalService, "{entry}: {err}");
        assert_eq!(
            requests(&sim, model),
            u64::from(bound) + 1,
            "{entry}: bounded by max_transient_retries: {err}"
        );
        let msg = err.to_string();
        let status = if provider == "o-anthropic" {
            "HTTP 529"
        } else {
            "HTTP 503"
        };
        for part in [
            &format!("`{provider}`"),
            &format!("entry `{entry}`"),
            status,
            path,
        ] {
            assert!(msg.contains(part), "{entry}: `{part}` is not named: {msg}");
        }
    }
}

/// An nginx-style error page, padded well past any sensible message length.
fn gateway_page() -> String {
    format!(
        "<!DOCTYPE html>\n<html>\n<head><title>502 Bad Gateway</title>\n<style>body {{ font: \
         sans-serif }}</style></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n\
         <hr><center>nginx/1.25.3</center>\n{}</body>\n</html>\n",
        "<!-- a padding comment to make the page long -->\n".repeat(40)
    )
}

#[tokio::test]
async fn an_html_error_page_reaches_the_error_as_its_title() {
    let (base, count) = canned_server("502 Bad Gateway", "text/html", gateway_page()).await;
    let toml = format!(
        "[providers.gw]\ndialect = \"openai\"\nbase_url = \"{base}/v1\"\n\
         api_key_env = \"THINKERS_SIM_KEY\"\n\n[[entries]]\nid = \"gw-e\"\nprovider = \"gw\"\n\
         model = \"m\"\ngrade = \"small\"\ncontext_window = 100000\noutput_ceiling = 4096\n\
         price_in = 1.0\nprice_out = 2.0\ncurrency = \"USD\"\n"
    );
    let rt = runtime(&toml, &Timeouts::default(), None).await;
    let err = rt.run(call("gw-e")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ExternalService, "{err}");
    let bound = rt.dispatcher().config().max_transient_retries as usize;
    assert_eq!(
        count.load(Ordering::SeqCst),
        bound + 1,
        "a 502 is transient"
    );
    let msg = err.to_string();
    assert!(msg.contains("HTTP 502: 502 Bad Gateway"), "{msg}");
    assert!(msg.contains("entry `gw-e`"), "{msg}");
    for leaked in ["<", "nginx", "padding", "\n"] {
        assert!(
            !msg.contains(leaked),
            "`{leaked}` of the page leaked: {msg}"
        );
    }
    assert!(msg.len() < 400, "{} bytes: {msg}", msg.len());
}

#[tokio::test]
async fn a_long_text_error_body_is_cut_to_one_bounded_line() {
    let body = format!(
        "\n\n{}\nat frame 2\nat frame 3\n",
        "upstream failed ".repeat(100)
    );
    let (base, _) = canned_server("503 Service Unavailable", "text/plain", body).await;
    let toml = format!(
        "[providers.gw]\ndialect = \"anthropic\"\nbase_url = \"{base}\"\n\
         api_key_env = \"THINKERS_SIM_KEY\"\n\n[[entries]]\nid = \"gw-a\"\nprovider = \"gw\"\n\
         model = \"m\"\ngrade = \"small\"\ncontext_window = 100000\noutput_ceiling = 4096\n\
         price_in = 1.0\nprice_out = 2.0\ncurrency = \"USD\"\n"
    );
    let rt = runtime(&toml, &Timeouts::default(), None).await;
    let err = rt.run(call("gw-a")).await.unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("HTTP 503: upstream failed"), "{msg}");
    assert!(msg.contains('…'), "the cut is marked: {msg}");
    assert!(!msg.contains("frame") && !msg.contains('\n'), "{msg}");
    assert!(msg.len() < 450, "{} bytes: {msg}", msg.len());
}
