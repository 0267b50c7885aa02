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

/// The catalog of the tests, for the server at `base_url` (an `…/v1` URL): one provider, the
/// model as `smol` (native tools) and `smol-text` (text tools), both grade small with the
/// server's 8,192-token context and a 1,024-token output ceiling.
///
/// llama-cpp-python's server constrains decoding only to a schema sent with `json_object`
/// (it refuses `json_schema`), so the provider asks for that.
pub(crate) fn catalog_toml(base_url: &str) -> String {
    let entry = |id: &str, native: bool| {
        format!(
            "[[entries]]\nid = \"{id}\"\nprovider = \"llama\"\nmodel = \"smollm2\"\n\
             grade = \"small\"\ncontext_window = 8192\noutput_ceiling = 1024\nconcurrency = 1\n\
             price_in = 0.0\nprice_out = 0.0\ncurrency = \"USD\"\nnative_tools = {native}\n\
             compliance = {{ region = \"local\", retention = \"zero\" }}\n\n"
        )
    };
    format!(
        "[providers.llama]\ndialect = \"openai-compatible\"\nbase_url = \"{base_url}\"\n\
         structured_output = \"json_object\"\n\n{}{}",
        entry(NATIVE, true),
        entry(TEXT, false)
    )
}
