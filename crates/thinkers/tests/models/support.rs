//! A simulated provider and a runtime bound to it (see `tests/common/offline.rs`), and for the
//! fault tests of issue 28: a catalog of one provider per dialect over a fresh sim, a client with
//! the timeouts a test names, a child process holding a canary API key, a captured debug log.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use thinkers::conversation::Message;
use thinkers::dispatch::DispatchConfig;
use thinkers::llm::{ChatRequest, LlmCall, ModelClient};
use thinkers::model::{Catalog, Grade, OutputSize};
use thinkers::{Runtime, RuntimeBuilder};
use thinkers_sim::{Sim, SimConfig, SimModel};

#[path = "../common/offline.rs"]
mod offline;

pub use offline::Setup;

/// A calm sim (no random faults, no latency) serving the bundled catalog, and a runtime bound to
/// it with a short client timeout, so a hanging request is given up quickly.
pub async fn setup() -> Setup {
    offline::start(Duration::from_secs(2), |c| c).await
}

/// [`setup`], the sim's configuration adjusted by `tune` first.
pub async fn setup_with(tune: impl FnOnce(SimConfig) -> SimConfig) -> Setup {
    offline::start(Duration::from_secs(2), tune).await
}

/// The provider keys of the fault catalog.
pub const OPENAI_PROVIDER: &str = "fault-openai";
pub const ANTHROPIC_PROVIDER: &str = "fault-anthropic";

/// The URL paths each dialect posts to.
pub const OPENAI_PATH: &str = "/v1/chat/completions";
pub const ANTHROPIC_PATH: &str = "/v1/messages";

/// How many entries per dialect the fault catalog holds (`o0`… and `a0`…), so concurrent calls
/// of one test each have a model, and so a fault rule of their own.
pub const ENTRIES: usize = 8;

/// The entry `i` of a dialect in the fault catalog, and the model it names.
pub fn entry(anthropic: bool, i: usize) -> String {
    format!("{}{i}", if anthropic { "a" } else { "o" })
}

pub fn model(anthropic: bool, i: usize) -> String {
    format!("m-{}", entry(anthropic, i))
}

pub fn path(anthropic: bool) -> &'static str {
    if anthropic {
        ANTHROPIC_PATH
    } else {
        OPENAI_PATH
    }
}

pub fn provider(anthropic: bool) -> &'static str {
    if anthropic {
        ANTHROPIC_PROVIDER
    } else {
        OPENAI_PROVIDER
    }
}

/// The client settings of one test. `None` keeps the client's default.
#[derive(Debug, Clone, Default)]
pub struct Timeouts {
    pub request: Option<Duration>,
    pub stream_idle: Option<Duration>,
    pub call: Option<Duration>,
    pub max_retry_wait: Option<Duration>,
}

/// The client of the fault tests: every setting of issue 28's client in one place.
pub fn client(t: &Timeouts) -> ModelClient {
    let mut b = ModelClient::builder();
    if let Some(d) = t.request {
        b = b.request_timeout(d);
    }
    if let Some(d) = t.stream_idle {
        b = b.stream_idle_timeout(d);
    }
    if let Some(d) = t.call {
        b = b.call_timeout(d);
    }
    if let Some(d) = t.max_retry_wait {
        b = b.max_retry_wait(d);
    }
    b.build().unwrap()
}

/// The catalog TOML of the fault tests: one provider per dialect at `openai_base` /
/// `anthropic_base`, their key in `key_env`, [`ENTRIES`] entries each.
pub fn fault_catalog_toml(openai_base: &str, anthropic_base: &str, key_env: &str) -> String {
    let mut toml = format!(
        "[providers.{OPENAI_PROVIDER}]\ndialect = \"openai\"\nbase_url = \"{openai_base}\"\n\
         api_key_env = \"{key_env}\"\n\n[providers.{ANTHROPIC_PROVIDER}]\ndialect = \"anthropic\"\n\
         base_url = \"{anthropic_base}\"\napi_key_env = \"{key_env}\"\n"
    );
    for anthropic in [false, true] {
        for i in 0..ENTRIES {
            toml.push_str(&format!(
                "\n[[entries]]\nid = \"{}\"\nprovider = \"{}\"\nmodel = \"{}\"\ngrade = \"small\"\n\
                 context_window = 100000\noutput_ceiling = 4096\nprice_in = 1.0\nprice_out = 2.0\n\
                 currency = \"USD\"\nnative_tools = true\n",
                entry(anthropic, i),
                provider(anthropic),
                model(anthropic, i),
            ));
        }
    }
    toml
}

/// A sim serving the fault catalog's models (and only those: another model is a 404), with the
/// request log on and `hang_ms` of 30 s (faults that stall are cut short by the client).
pub async fn fault_sim() -> Sim {
    let mut b = SimConfig::builder()
        .log_bodies(true)
        .hang_ms(30_000)
        .seed(28);
    for anthropic in [false, true] {
        for i in 0..ENTRIES {
            b = b.model(SimModel::new(model(anthropic, i)));
        }
    }
    Sim::start(b.build().unwrap()).await.unwrap()
}

/// What a fault test runs against.
pub struct Faulty {
    pub sim: Sim,
    pub rt: Runtime,
}

/// Short dispatcher backoffs: a retry the server did not ask to wait for comes at once.
pub fn quick_retries() -> DispatchConfig {
    DispatchConfig {
        transient_backoff: Duration::from_millis(10),
        throttle_backoff: Duration::from_millis(10),
        ..DispatchConfig::default()
    }
}

/// A last change to a test runtime's builder: the store crate's tests give it a store.
pub type Tweak = Box<dyn FnOnce(RuntimeBuilder) -> RuntimeBuilder>;

/// A fault sim and a runtime over the fault catalog whose key is read from `key_env`
/// (`THINKERS_SIM_KEY`, which needs no setting, unless a test holds a canary), changed by
/// `tweak` when one is given.
pub async fn faulty(t: &Timeouts, key_env: &str, tweak: Option<Tweak>) -> Faulty {
    let sim = fault_sim().await;
    let toml = fault_catalog_toml(&sim.openai_base_url(), &sim.base_url(), key_env);
    let rt = runtime(&toml, t, tweak).await;
    Faulty { sim, rt }
}

pub async fn runtime(toml: &str, t: &Timeouts, tweak: Option<Tweak>) -> Runtime {
    let catalog = Catalog::from_toml_str(toml, "faults.toml").unwrap();
    let mut b = Runtime::builder(catalog)
        .client(client(t))
        .config(quick_retries());
    if let Some(tweak) = tweak {
        b = tweak(b);
    }
    b.build().await.unwrap()
}

/// A one-shot call pinned to `entry`.
pub fn call(entry: &str) -> LlmCall {
    let req = ChatRequest::new("Be brief.", vec![Message::user_text("Say something.")]);
    LlmCall::new(Grade::Small, OutputSize::Compact, req).pinned(entry.to_owned())
}

/// A streamed one-shot call pinned to `entry`; the text deltas land in the returned buffer.
pub fn streamed(entry: &str) -> (LlmCall, Arc<Mutex<String>>) {
    let text = Arc::new(Mutex::new(String::new()));
    let sink = text.clone();
    let job = call(entry).streaming(Box::new(move |d| {
        if let thinkers::llm::StreamDelta::Text(t) = d {
            sink.lock().unwrap().push_str(&t);
        }
    }));
    (job, text)
}

/// Requests the sim received for `model`.
pub fn requests(sim: &Sim, model: &str) -> u64 {
    sim.stats().model(model).requests
}

/// The times the sim logged requests for `model` arrived, in order.
pub fn arrivals(sim: &Sim, model: &str) -> Vec<chrono::DateTime<chrono::FixedOffset>> {
    sim.requests()
        .iter()
        .filter(|r| r.model == model)
        .map(|r| chrono::DateTime::parse_from_rfc3339(&r.timestamp).unwrap())
        .collect()
}

/// The error, its `Debug` form and every source below it, as text.
pub fn error_texts(err: &thinkers::Error) -> Vec<String> {
    let mut out = vec![err.to_string(), format!("{err:?}")];
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        out.push(s.to_string());
        out.push(format!("{s:?}"));
        source = s.source();
    }
    out
}

/// A loopback port nothing listens on.
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    l.local_addr().unwrap().port()
}

/// A loopback listener that counts the connections it accepts and closes them at once.
pub async fn counting_listener() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(conn);
        }
    });
    (addr, count)
}

/// A loopback HTTP server answering every request with `status` (`"502 Bad Gateway"`), a body of
/// `content_type` and `body`, then closing the connection; it counts the requests it read whole.
/// Returns its base URL (`http://127.0.0.1:port`) and the count.
pub async fn canned_server(
    status: &'static str,
    content_type: &'static str,
    body: String,
) -> (String, Arc<AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let body = body.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let mut got = Vec::new();
                // The head, then the body its content-length announces.
                loop {
                    let Ok(n) = conn.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    got.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&got).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if got.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                seen.fetch_add(1, Ordering::SeqCst);
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(answer.as_bytes()).await;
                let _ = conn.shutdown().await;
            });
        }
    });
    (format!("http://{addr}"), count)
}

/// The environment variable that marks a child process run by [`in_child`].
const CHILD_MARK: &str = "THINKERS_TEST_CHILD";

/// Runs the test `name` (its path in this binary, e.g. `secrets::a_test`) again in a child
/// process with `var=value` in its environment, and fails if the child fails, showing its
/// output. Returns `Some(value)` in the child (where the test's body runs) and `None` in the
/// parent. A key must come from the environment and Rust 2024 makes setting a variable of a
/// running process `unsafe` (which this workspace forbids), hence the child; a variable of its
/// own per test keeps tests from seeing each other's keys.
pub fn in_child(name: &str, var: &str, value: &str) -> Option<String> {
    if std::env::var(CHILD_MARK).as_deref() == Ok(name) {
        return Some(std::env::var(var).unwrap_or_default());
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_MARK, name)
        .env(var, value)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the child running `{name}` failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("1 passed"),
        "the child ran no test `{name}`:\n{stdout}\n{stderr}"
    );
    None
}

/// A log buffer for a scoped `tracing` subscriber at debug level.
#[derive(Clone, Default)]
pub struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogBuffer {
    /// Installs a debug-level subscriber writing here for the current thread (a
    /// `#[tokio::test]` runs every task on it) until the guard drops.
    pub fn install(&self) -> tracing::subscriber::DefaultGuard {
        let writer = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}
