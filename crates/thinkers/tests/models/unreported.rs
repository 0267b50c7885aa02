//! An answer without usage counts costs an unknown amount, never 0: the record keeps its cost
//! unknown (unless the entry is free), and the reports count it apart.

use std::sync::Arc;

use thinkers::Runtime;
use thinkers::record::MemoryRecorder;

use crate::support::{Timeouts, call, canned_server, client, quick_retries};

/// Whole answers without a `usage` object, per dialect (the path suffix its base URL takes).
const ANSWERS: [(&str, &str, &str); 2] = [
    (
        "openai",
        "/v1",
        r#"{"id":"c1","object":"chat.completion","created":1,"model":"m",
            "choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}"#,
    ),
    (
        "anthropic",
        "",
        r#"{"id":"msg_1","type":"message","role":"assistant","model":"m",
            "content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn"}"#,
    ),
];

async fn recorded_cost(dialect: &str, base: &str, prices: &str) -> (Option<f64>, String) {
    let toml = format!(
        "[providers.p]\ndialect = \"{dialect}\"\nbase_url = \"{base}\"\n\
         api_key_env = \"THINKERS_SIM_KEY\"\n\n[[entries]]\nid = \"e\"\nprovider = \"p\"\n\
         model = \"m\"\ngrade = \"small\"\ncontext_window = 100000\noutput_ceiling = 4096\n\
         {prices}currency = \"USD\"\n"
    );
    let recorder = Arc::new(MemoryRecorder::new());
    let rt = Runtime::builder(thinkers::model::Catalog::from_toml_str(&toml, "u.toml").unwrap())
        .client(client(&Timeouts::default()))
        .config(quick_retries())
        .recorder(recorder.clone())
        .build()
        .await
        .unwrap();
    let outcome = rt.run(call("e")).await.unwrap();
    assert_eq!(outcome.cost, recorder.llm_runs()[0].cost, "{dialect}");
    rt.shutdown().await.unwrap();
    let row = recorder.llm_runs()[0].clone();
    (row.cost, row.currency)
}

#[tokio::test]
async fn an_answer_without_usage_costs_an_unknown_amount_unless_the_entry_is_free() {
    for (dialect, suffix, body) in ANSWERS {
        let (base, count) = canned_server("200 OK", "application/json", body.to_owned()).await;
        let base = format!("{base}{suffix}");
        let (cost, currency) = recorded_cost(dialect, &base, "price_in = 1\nprice_out = 2\n").await;
        assert_eq!(cost, None, "{dialect}: no usage, no known cost");
        assert_eq!(currency, "", "{dialect}: an unknown cost has no currency");
        let (cost, _) = recorded_cost(dialect, &base, "price_in = 0\nprice_out = 0\n").await;
        assert_eq!(
            cost,
            Some(0.0),
            "{dialect}: a free entry costs nothing either way"
        );
        assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
