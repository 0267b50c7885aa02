//! A stream event that cannot be read is retried like a stream cut off before content when no
//! content arrived yet, in every dialect that streams server-sent events; after content it is a
//! final failure and the request is never sent again. (Bedrock's binary frames: the decoder's
//! unit tests in `llm::codec`.)

use std::sync::atomic::Ordering;

use thinkers::ErrorKind;

use crate::support::{Timeouts, canned_server, runtime, streamed};

/// Each dialect's name in a catalog, the base URL's suffix, and the events of an answer that has
/// started (content delivered).
const DIALECTS: [(&str, &str, &str); 4] = [
    (
        "openai",
        "/v1",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n",
    ),
    (
        "anthropic",
        "",
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":3}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
         event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n",
    ),
    (
        "openai-responses",
        "/v1",
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hel\"}\n\n",
    ),
    (
        "gemini",
        "/v1beta",
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"},\"index\":0}]}\n\n",
    ),
];

const MALFORMED: &str = "event: content_block_delta\ndata: {\"choices\": [oops\n\n";

/// A runtime whose one entry `e` speaks `dialect` to the server at `base`.
async fn rt_for(dialect: &str, base: &str) -> thinkers::Runtime {
    let toml = format!(
        "[providers.p-{dialect}]\ndialect = \"{dialect}\"\nbase_url = \"{base}\"\n\
         api_key_env = \"THINKERS_SIM_KEY\"\n\n[[entries]]\nid = \"e\"\nprovider = \"p-{dialect}\"\n\
         model = \"m\"\ngrade = \"small\"\ncontext_window = 100000\noutput_ceiling = 4096\n\
         price_in = 1.0\nprice_out = 2.0\ncurrency = \"USD\"\n"
    );
    runtime(&toml, &Timeouts::default(), None).await
}

#[tokio::test]
async fn a_malformed_first_event_is_retried_in_every_dialect() {
    for (dialect, suffix, _) in DIALECTS {
        let (base, count) =
            canned_server("200 OK", "text/event-stream", MALFORMED.to_owned()).await;
        let rt = rt_for(dialect, &format!("{base}{suffix}")).await;
        let (job, text) = streamed("e");
        let err = rt.run(job).await.expect_err("every answer is malformed");
        let bound = rt.dispatcher().config().max_transient_retries as usize;
        assert_eq!(
            count.load(Ordering::SeqCst),
            bound + 1,
            "{dialect}: nothing was delivered, so it is retried like a cut stream: {err}"
        );
        assert!(text.lock().unwrap().is_empty(), "{dialect}");
        assert_eq!(err.kind(), ErrorKind::ExternalService, "{dialect}: {err}");
        let msg = err.to_string();
        for part in [&format!("p-{dialect}"), "entry `e`", "unreadable"] {
            assert!(
                msg.contains(part),
                "{dialect}: `{part}` is not named: {msg}"
            );
        }
    }
}

#[tokio::test]
async fn a_malformed_event_after_content_is_final_in_every_dialect() {
    for (dialect, suffix, started) in DIALECTS {
        let body = format!("{started}{MALFORMED}");
        let (base, count) = canned_server("200 OK", "text/event-stream", body).await;
        let rt = rt_for(dialect, &format!("{base}{suffix}")).await;
        let (job, text) = streamed("e");
        let err = rt.run(job).await.expect_err("the stream breaks");
        assert_eq!(
            count.load(Ordering::SeqCst),
            1,
            "{dialect}: never replayed: {err}"
        );
        assert_eq!(
            *text.lock().unwrap(),
            "Hel",
            "{dialect}: content came first"
        );
        assert!(
            matches!(&err, thinkers::Error::ExternalService { step, .. } if step == "stream"),
            "{dialect}: {err}"
        );
        assert!(
            err.to_string().contains("never replayed"),
            "{dialect}: {err}"
        );
    }
}
