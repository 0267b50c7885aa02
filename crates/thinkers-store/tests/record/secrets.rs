//! Issue 28, point 3: an API key never leaves in any text. A canary key (in a variable of each
//! test's own, set in a child process: see `support::in_child`) meets every path by which a
//! provider echoes it — an HTTP error body of each status, an error event inside a 200 stream
//! (both dialects), an Anthropic 200 body that is an error, a redirect's `Location` — and must
//! appear in no error (`Display`, `Debug`, sources), no debug-level log line, no stored row, no
//! conversation message and no later request except in its authentication header.

use thinkers::model::{Depth, Grade, ModelDependent, OutputSize};
use thinkers::thinker::Delivery;
use thinkers::thinker::{ChatThinker, ThinkerDeclaration};
use thinkers_sim::{FaultKind, FaultRule, Sim};

use thinkers_store::RuntimeBuilderExt as _;

use crate::support::{
    Faulty, LogBuffer, Timeouts, call, entry, error_texts, faulty, in_child, model, streamed,
};

fn canary(test: &str) -> String {
    format!("sk-canary-{test}-{}", uuid::Uuid::new_v4().simple())
}

/// Everything that must not hold the key, gathered after the calls.
struct Leaks<'a> {
    key: &'a str,
    found: Vec<String>,
}

impl<'a> Leaks<'a> {
    fn new(key: &'a str) -> Self {
        assert!(key.starts_with("sk-canary-"), "the child holds the canary");
        Self {
            key,
            found: Vec::new(),
        }
    }

    fn text(&mut self, what: &str, text: &str) {
        if text.contains(self.key) {
            self.found.push(format!("{what}: {text}"));
        }
    }

    fn error(&mut self, what: &str, err: &thinkers::Error) {
        for t in error_texts(err) {
            self.text(what, &t);
        }
    }

    /// Every request the sim logged: the key only in `authorization` / `x-api-key`.
    fn requests(&mut self, sim: &Sim) {
        for r in sim.requests() {
            self.text("a request body", &r.raw_body);
            for (name, value) in &r.headers {
                if name != "authorization" && name != "x-api-key" {
                    self.text(&format!("request header {name}"), value);
                }
            }
        }
    }

    /// The SQLite files of the store, byte for byte.
    fn store(&mut self, db: &std::path::Path) {
        let dir = db.parent().unwrap();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            if text.contains(self.key) {
                self.found
                    .push(format!("stored in {}", path.file_name().unwrap().display()));
            }
        }
    }

    fn assert_none(self) {
        assert!(
            self.found.is_empty(),
            "the API key leaked:\n{}",
            self.found.join("\n---\n")
        );
    }
}

async fn store_setup(var: &str) -> (Faulty, tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let path = db.to_str().unwrap().to_owned();
    let f = faulty(
        &Timeouts::default(),
        var,
        Some(Box::new(move |b| b.database(path))),
    )
    .await;
    (f, dir, db)
}

const VAR_STATUS: &str = "THINKERS_CANARY_HTTP_STATUS";

#[tokio::test]
async fn a_key_echoed_in_an_http_error_body_of_any_status_goes_nowhere() {
    let test = "secrets::a_key_echoed_in_an_http_error_body_of_any_status_goes_nowhere";
    let Some(key) = in_child(test, VAR_STATUS, &canary("status")) else {
        return;
    };
    let log = LogBuffer::default();
    let _guard = log.install();
    let (f, _dir, db) = store_setup(VAR_STATUS).await;
    let mut leaks = Leaks::new(&key);
    for (i, status) in [400u16, 401, 403, 404, 429, 500, 503]
        .into_iter()
        .enumerate()
    {
        for anthropic in [false, true] {
            let m = model(anthropic, i);
            f.sim.inject(
                FaultRule::new(FaultKind::EchoKey)
                    .status(status)
                    .for_model(&m)
                    .times(50),
            );
            let r = f.rt.run(call(&entry(anthropic, i))).await;
            let err = r.expect_err("every attempt is refused");
            leaks.error(&format!("the error of HTTP {status} ({m})"), &err);
        }
    }
    f.rt.flush().await.unwrap();
    leaks.requests(&f.sim);
    leaks.text("the debug log", &log.text());
    leaks.store(&db);
    assert!(!log.text().is_empty(), "the subscriber captured the calls");
    leaks.assert_none();
}

const VAR_STREAM: &str = "THINKERS_CANARY_STREAM_EVENT";

#[tokio::test]
async fn a_key_echoed_in_a_stream_error_event_goes_nowhere() {
    let test = "secrets::a_key_echoed_in_a_stream_error_event_goes_nowhere";
    let Some(key) = in_child(test, VAR_STREAM, &canary("stream")) else {
        return;
    };
    let log = LogBuffer::default();
    let _guard = log.install();
    let (f, _dir, db) = store_setup(VAR_STREAM).await;
    let mut leaks = Leaks::new(&key);
    for anthropic in [false, true] {
        // Before any content (a final authentication error) and after some content.
        for (i, events) in [(0usize, 0u32), (1, 2)] {
            let m = model(anthropic, i);
            f.sim.inject(
                FaultRule::new(FaultKind::StreamErrorEchoKey)
                    .events(events)
                    .for_model(&m)
                    .times(50),
            );
            let (job, _) = streamed(&entry(anthropic, i));
            let err = f.rt.run(job).await.expect_err("the stream fails");
            leaks.error(&format!("the error of a stream event ({m})"), &err);
        }
    }
    f.rt.flush().await.unwrap();
    leaks.requests(&f.sim);
    leaks.text("the debug log", &log.text());
    leaks.store(&db);
    leaks.assert_none();
}

const VAR_200: &str = "THINKERS_CANARY_ERROR_200";

#[tokio::test]
async fn a_key_echoed_in_a_200_error_body_goes_nowhere() {
    let test = "secrets::a_key_echoed_in_a_200_error_body_goes_nowhere";
    let Some(key) = in_child(test, VAR_200, &canary("ok200")) else {
        return;
    };
    let log = LogBuffer::default();
    let _guard = log.install();
    let (f, _dir, db) = store_setup(VAR_200).await;
    let mut leaks = Leaks::new(&key);
    for anthropic in [true, false] {
        let m = model(anthropic, 0);
        f.sim
            .inject(FaultRule::new(FaultKind::Error200).for_model(&m).times(50));
        let err = f.rt.run(call(&entry(anthropic, 0))).await.unwrap_err();
        leaks.error(&format!("the error of a 200 error body ({m})"), &err);
    }
    f.rt.flush().await.unwrap();
    leaks.requests(&f.sim);
    leaks.text("the debug log", &log.text());
    leaks.store(&db);
    leaks.assert_none();
}

const VAR_REDIRECT: &str = "THINKERS_CANARY_REDIRECT";

#[tokio::test]
async fn a_key_in_a_redirect_location_goes_nowhere() {
    let test = "secrets::a_key_in_a_redirect_location_goes_nowhere";
    let Some(key) = in_child(test, VAR_REDIRECT, &canary("redirect")) else {
        return;
    };
    let log = LogBuffer::default();
    let _guard = log.install();
    let (f, _dir, db) = store_setup(VAR_REDIRECT).await;
    let mut leaks = Leaks::new(&key);
    for anthropic in [false, true] {
        let m = model(anthropic, 0);
        f.sim.inject(
            FaultRule::new(FaultKind::RedirectKey)
                .for_model(&m)
                .times(50),
        );
        let err = f.rt.run(call(&entry(anthropic, 0))).await.unwrap_err();
        leaks.error(&format!("the error of a redirect ({m})"), &err);
        assert_eq!(
            f.sim.stats().model(&m).requests,
            1,
            "a redirect is not followed"
        );
    }
    f.rt.flush().await.unwrap();
    leaks.requests(&f.sim);
    leaks.text("the debug log", &log.text());
    leaks.store(&db);
    leaks.assert_none();
}

const VAR_CHAT: &str = "THINKERS_CANARY_CONVERSATION";

#[tokio::test]
async fn a_key_echoed_in_a_failed_turn_stays_out_of_the_conversation_and_the_next_request() {
    let test =
        "secrets::a_key_echoed_in_a_failed_turn_stays_out_of_the_conversation_and_the_next_request";
    let Some(key) = in_child(test, VAR_CHAT, &canary("chat")) else {
        return;
    };
    let log = LogBuffer::default();
    let _guard = log.install();
    let (f, _dir, db) = store_setup(VAR_CHAT).await;
    let mut leaks = Leaks::new(&key);
    for (anthropic, kind) in [
        (false, FaultKind::EchoKey),
        (true, FaultKind::EchoKey),
        (true, FaultKind::StreamErrorEchoKey),
        (false, FaultKind::StreamErrorEchoKey),
        (true, FaultKind::Error200),
    ] {
        let i = usize::from(kind == FaultKind::StreamErrorEchoKey)
            + 2 * usize::from(kind == FaultKind::Error200);
        let m = model(anthropic, i);
        let mut chat = ChatThinker::new(
            ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
            "You are a helpful assistant.",
        )
        .depth(Depth::Quick);
        chat.pin_model(entry(anthropic, i));
        f.sim.inject(FaultRule::new(kind).for_model(&m).times(50));
        let turn = chat.turn();
        assert_eq!(chat.add_message("Hello?"), Delivery::Joined);
        let err = f.rt.run(turn).await.expect_err("the turn fails");
        leaks.error(&format!("the turn's error ({kind}, {m})"), &err);
        let messages = chat.observer().messages();
        let marker = messages.last().unwrap().text();
        assert!(marker.starts_with("[no answer:"), "{marker}");
        for message in &messages {
            leaks.text(
                &format!("a conversation message ({kind}, {m})"),
                &message.text(),
            );
        }
        // The next turn tells the provider the last one failed (never why).
        f.sim.reset();
        let turn = chat.turn();
        assert_eq!(chat.add_message("Are you there now?"), Delivery::Joined);
        f.rt.run(turn).await.unwrap();
        leaks.requests(&f.sim);
    }
    f.rt.flush().await.unwrap();
    leaks.text("the debug log", &log.text());
    leaks.store(&db);
    leaks.assert_none();
}
