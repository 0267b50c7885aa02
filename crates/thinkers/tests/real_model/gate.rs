//! What the real-model tests of both crates share (the CLI's tests include this file by path):
//! the gate and the catalog written for the server.

/// The model with native tool calls (the server's `chatml-function-calling` format).
pub(crate) const NATIVE: &str = "smol";
/// The same model through the text-tool fallback (tools described in the prompt).
pub(crate) const TEXT: &str = "smol-text";

/// The server's base URL from `THINKERS_REAL_MODEL_URL`; `None` when it is unset and the test is
/// to be skipped (it says so). With `THINKERS_REQUIRE_REAL_MODEL=1` an unset URL fails the test.
pub(crate) fn server_url(test: &str) -> Option<String> {
    match std::env::var("THINKERS_REAL_MODEL_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_owned()),
        _ => {
            assert!(
                std::env::var("THINKERS_REQUIRE_REAL_MODEL").as_deref() != Ok("1"),
                "{test}: THINKERS_REQUIRE_REAL_MODEL=1 but THINKERS_REAL_MODEL_URL is unset \
                 (scripts/real-model-server.sh start PORT prints the URL)"
            );
            eprintln!(
                "{test}: skipped, THINKERS_REAL_MODEL_URL is unset \
                 (scripts/real-model-server.sh start PORT starts a server and prints it)"
            );
            None
        }
    }
}

/// Wait until the server has nothing left to do for an earlier test: llama-cpp-python's server
/// finishes a request whose client went away (a cancelled call, a timed-out attempt) before it
/// takes the next one, so one test's abandoned calls would eat the next test's attempt
/// timeouts. A one-token completion queues behind them; when it is answered the server is idle.
/// Uses `curl` (as `scripts/real-model-server.sh` does), so both crates' tests can call it.
pub(crate) fn wait_until_idle(base_url: &str) {
    let started = std::time::Instant::now();
    let out = std::process::Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-m", "900"])
        .args(["-H", "content-type: application/json", "-d"])
        .arg(r#"{"model":"smollm2","messages":[{"role":"user","content":"Hi"}],"max_tokens":1}"#)
        .arg(format!(
            "{}/chat/completions",
            base_url.trim_end_matches('/')
        ))
        .output();
    match out {
        Ok(out) if String::from_utf8_lossy(&out.stdout) == "200" => {
            eprintln!(
                "real model server idle after {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
        Ok(out) => panic!(
            "the real model server at {base_url} did not answer a one-token request: HTTP {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!("curl could not be run to reach the real model server: {e}"),
    }
}

/// The catalog of the tests, for the server at `base_url` (an `…/v1` URL): one provider, the
/// model as `smol` (native tools) and `smol-text` (text tools), both grade small with the
/// server's 4,096-token context. Output is capped at 256 tokens: the tiny model's useful
/// answers are short, and when it rambles the cap keeps each call to seconds on two cores.
///
/// llama-cpp-python's server constrains decoding only to a schema sent with `json_object`
/// (it refuses `json_schema`), so the provider asks for that; and it cannot stream an answer
/// that may call a tool (`chatml-function-calling` ends such a stream empty), so the provider
/// says `stream_tools = false`.
pub(crate) fn catalog_toml(base_url: &str) -> String {
    let entry = |id: &str, native: bool| {
        format!(
            "[[entries]]\nid = \"{id}\"\nprovider = \"llama\"\nmodel = \"smollm2\"\n\
             grade = \"small\"\ncontext_window = 4096\noutput_ceiling = 256\nconcurrency = 1\n\
             price_in = 0.0\nprice_out = 0.0\ncurrency = \"USD\"\nnative_tools = {native}\n\
             compliance = {{ region = \"local\", retention = \"zero\" }}\n\n"
        )
    };
    format!(
        "[providers.llama]\ndialect = \"openai-compatible\"\nbase_url = \"{base_url}\"\n\
         structured_output = \"json_object\"\nstream_tools = false\n\n{}{}",
        entry(NATIVE, true),
        entry(TEXT, false)
    )
}
