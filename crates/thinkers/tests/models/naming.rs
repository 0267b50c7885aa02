//! Issue 28, points 6-8: a silent server costs one bounded wait; errors name the catalog's
//! provider key, the entry id and the URL path (never the key); an empty key variable is refused
//! before anything is sent.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use thinkers::ErrorKind;
use thinkers_sim::{FaultKind, FaultRule};

use crate::support::{
    Timeouts, call, closed_port, counting_listener, entry, fault_catalog_toml, faulty, in_child,
    model, path, provider, requests, runtime,
};

/// Asserts `err` is a final provider failure naming the provider, the entry and the path.
fn assert_named(err: &thinkers::Error, anthropic: bool, e: &str) -> String {
    assert_eq!(err.kind(), ErrorKind::ExternalService, "{e}: {err}");
    let msg = err.to_string();
    for part in [provider(anthropic), e, path(anthropic)] {
        assert!(msg.contains(part), "{e}: `{part}` is not named: {msg}");
    }
    msg
}

#[tokio::test]
async fn a_silent_server_costs_one_bounded_wait() {
    let t = Timeouts {
        request: Some(Duration::from_secs(2)),
        call: Some(Duration::from_secs(3)),
        ..Timeouts::default()
    };
    let f = faulty(&t, "THINKERS_SIM_KEY", None).await;
    for anthropic in [false, true] {
        let (m, e) = (model(anthropic, 0), entry(anthropic, 0));
        f.sim
            .inject(FaultRule::new(FaultKind::Hang).for_model(&m).times(20));
        let started = Instant::now();
        let err = tokio::time::timeout(Duration::from_secs(30), f.rt.run(call(&e)))
            .await
            .expect("the call ends within 30 s")
            .expect_err("no answer comes");
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(5),
            "{e}: the error came after {took:?} and {} request(s), the call's limit is 3 s: {err}",
            requests(&f.sim, &m)
        );
        let msg = assert_named(&err, anthropic, &e);
        assert!(
            msg.contains("within"),
            "{e}: says no answer came within the call's time: {msg}"
        );
    }
}

#[tokio::test]
async fn a_refused_connection_names_provider_entry_and_path() {
    let base = format!("http://127.0.0.1:{}", closed_port());
    let toml = fault_catalog_toml(&format!("{base}/v1"), &base, "THINKERS_SIM_KEY");
    let rt = runtime(&toml, &Timeouts::default(), None).await;
    for anthropic in [false, true] {
        let e = entry(anthropic, 0);
        let err = rt.run(call(&e)).await.expect_err("nothing listens");
        assert_named(&err, anthropic, &e);
    }
}

#[tokio::test]
async fn a_timeout_names_provider_entry_and_path() {
    let t = Timeouts {
        request: Some(Duration::from_secs(1)),
        call: Some(Duration::from_secs(2)),
        ..Timeouts::default()
    };
    let f = faulty(&t, "THINKERS_SIM_KEY", None).await;
    for anthropic in [false, true] {
        let (m, e) = (model(anthropic, 1), entry(anthropic, 1));
        f.sim
            .inject(FaultRule::new(FaultKind::Hang).for_model(&m).times(20));
        let err = f.rt.run(call(&e)).await.expect_err("no answer comes");
        assert_named(&err, anthropic, &e);
    }
}

#[tokio::test]
async fn an_unknown_model_is_a_configuration_error_naming_model_and_provider() {
    let f = faulty(&Timeouts::default(), "THINKERS_SIM_KEY", None).await;
    let toml = fault_catalog_toml(
        &f.sim.openai_base_url(),
        &f.sim.base_url(),
        "THINKERS_SIM_KEY",
    )
    .replace("model = \"m-o0\"", "model = \"not-served\"")
    .replace("model = \"m-a0\"", "model = \"not-served\"");
    let rt = runtime(&toml, &Timeouts::default(), None).await;
    for anthropic in [false, true] {
        let e = entry(anthropic, 0);
        let err = rt
            .run(call(&e))
            .await
            .expect_err("the sim serves no such model");
        let msg = assert_named(&err, anthropic, &e);
        let want = format!(
            "model `not-served` not found at provider `{}`",
            provider(anthropic)
        );
        assert!(msg.contains(&want), "{e}: {msg}");
    }
}

#[tokio::test]
async fn an_anthropic_base_url_ending_in_v1_is_named() {
    let f = faulty(&Timeouts::default(), "THINKERS_SIM_KEY", None).await;
    let toml = fault_catalog_toml(
        &f.sim.openai_base_url(),
        &f.sim.openai_base_url(),
        "THINKERS_SIM_KEY",
    );
    let rt = runtime(&toml, &Timeouts::default(), None).await;
    let err = rt
        .run(call("a0"))
        .await
        .expect_err("/v1/v1/messages is not served");
    assert_eq!(err.kind(), ErrorKind::ExternalService, "{err}");
    let msg = err.to_string();
    assert!(msg.contains("ends in `/v1`"), "{msg}");
    assert!(msg.contains(crate::support::ANTHROPIC_PROVIDER), "{msg}");
}

#[tokio::test]
async fn a_body_that_is_not_json_names_the_content_type() {
    let f = faulty(&Timeouts::default(), "THINKERS_SIM_KEY", None).await;
    for anthropic in [false, true] {
        let (m, e) = (model(anthropic, 0), entry(anthropic, 0));
        f.sim
            .inject(FaultRule::new(FaultKind::HtmlBody).for_model(&m).times(20));
        let err =
            f.rt.run(call(&e))
                .await
                .expect_err("an HTML page is no answer");
        let msg = assert_named(&err, anthropic, &e);
        assert!(msg.contains("content-type `text/html"), "{e}: {msg}");
    }
}

const VAR_EMPTY: &str = "THINKERS_TEST_EMPTY_KEY";

#[tokio::test]
async fn an_empty_key_variable_is_refused_before_anything_is_sent() {
    let test = "naming::an_empty_key_variable_is_refused_before_anything_is_sent";
    let Some(key) = in_child(test, VAR_EMPTY, "") else {
        return;
    };
    assert_eq!(key, "", "the child's variable is set and empty");
    assert!(std::env::var(VAR_EMPTY).is_ok(), "set, not unset");
    let (addr, connections) = counting_listener().await;
    let base = format!("http://{addr}");
    let toml = fault_catalog_toml(&format!("{base}/v1"), &base, VAR_EMPTY);
    let rt = runtime(&toml, &Timeouts::default(), None).await;
    for anthropic in [false, true] {
        let e = entry(anthropic, 0);
        let err = rt.run(call(&e)).await.expect_err("an empty key is refused");
        let msg = err.to_string();
        assert!(
            msg.contains(VAR_EMPTY),
            "{e}: the variable is not named: {msg}"
        );
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "nothing was sent with an empty key"
    );
}
