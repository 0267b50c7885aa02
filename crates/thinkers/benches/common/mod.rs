//! What the model-call benches share: the simulated provider in a child process (this bench
//! binary re-executed), so the CPU and memory a bench measures are the client's alone, and the
//! bare reqwest loop the runtime is compared with.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use cpu_time::ProcessTime;
use futures::StreamExt;

/// Set in the child's environment: the binary serves the sim instead of benchmarking.
const CHILD_ENV: &str = "THINKERS_BENCH_SIM_CHILD";

/// In the child process (this returns `true` after serving until killed), start the sim `config`
/// builds and print its base URL; in the parent, return `false` at once.
pub(crate) fn serve_sim_if_child(config: impl FnOnce() -> thinkers_sim::SimConfig) -> bool {
    if std::env::var_os(CHILD_ENV).is_none() {
        return false;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let sim = thinkers_sim::Sim::start(config()).await.unwrap();
        println!("{}", sim.base_url());
        // Serve until the parent kills us.
        std::future::pending::<()>().await;
    });
    true
}

/// A number from the environment, or `default`.
pub(crate) fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The sim in a child process: the process and its base URL.
pub(crate) fn spawn_sim() -> (Child, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line.trim().to_owned())
}

/// The client's runtime: two worker threads, like the machine's two cores (or as many as
/// `THINKERS_BENCH_WORKERS` says, to see what spreading the work over threads costs).
pub(crate) fn client_runtime() -> tokio::runtime::Runtime {
    let workers = std::env::var("THINKERS_BENCH_WORKERS")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(2);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

/// The client of the sim's control endpoints (its request log, its reset): one for the process.
pub(crate) fn control() -> &'static reqwest::Client {
    static CLIENT: std::sync::LazyLock<reqwest::Client> =
        std::sync::LazyLock::new(reqwest::Client::new);
    &CLIENT
}

/// The sim's counts for `model` (its `/sim/stats`).
pub(crate) async fn sim_stats(base: &str, model: &str) -> thinkers_sim::ModelStats {
    let snapshot: thinkers_sim::StatsSnapshot = control()
        .get(format!("{base}/sim/stats"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    snapshot.model(model)
}

/// Send `bodies` to the sim's chat completions endpoint with a bare reqwest client, at most
/// `concurrency` in flight, driven from the bench's `block_on` as a `#[tokio::main]` program
/// drives its main future; the process CPU µs per call. The client lives across calls (and
/// rounds), as the runtime keeps its connection pool.
pub(crate) async fn bare_loop(base: &str, bodies: Vec<bytes::Bytes>, concurrency: usize) -> f64 {
    static CLIENT: std::sync::LazyLock<reqwest::Client> =
        std::sync::LazyLock::new(reqwest::Client::new);
    let client = &*CLIENT;
    let url = format!("{base}/v1/chat/completions");
    replay(bodies, concurrency, move |body| {
        let request = client
            .post(&url)
            .header("authorization", "Bearer bench")
            .header("content-type", "application/json")
            .body(body);
        async move { request.send().await.unwrap().bytes().await.unwrap() }
    })
    .await
}

/// Send each body with `send` (which answers with the response body), at most `concurrency` in
/// flight; every answer is parsed and checked to be a chat completion. The process CPU µs per
/// call.
async fn replay<Fut>(
    bodies: Vec<bytes::Bytes>,
    concurrency: usize,
    send: impl Fn(bytes::Bytes) -> Fut + Send + 'static,
) -> f64
where
    Fut: Future<Output = bytes::Bytes> + Send + 'static,
{
    let n = bodies.len();
    let cpu = ProcessTime::now();
    let work = futures::stream::iter(bodies)
        .map(move |body| {
            let answer = send(body);
            async move {
                let bytes = answer.await;
                let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                assert!(v["choices"][0]["message"].is_object());
            }
        })
        .buffer_unordered(concurrency)
        .collect::<Vec<()>>();
    work.await;
    cpu.elapsed().as_secs_f64() * 1e6 / n as f64
}
