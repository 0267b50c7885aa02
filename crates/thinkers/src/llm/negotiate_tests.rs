//! The ladders of forms, what a refusal and an answer do to them, and which refusals the client
//! recognises.

use serde_json::{Value, json};

use super::*;
use crate::llm::errors::{ProviderError, refuses_form};
use crate::llm::tests::fixtures;
use crate::llm::{ChatRequest, encode};
use crate::model::Catalog;

/// A provider from a catalog whose provider table adds `extra`.
fn provider(extra: &str) -> Provider {
    let toml = format!(
        "[providers.local]\ndialect = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:1/v1\"\n\
         {extra}\n\n[[entries]]\nid = \"m\"\nprovider = \"local\"\nmodel = \"m\"\n\
         grade = \"small\"\ncontext_window = 4096\noutput_ceiling = 256\n"
    );
    let catalog = Catalog::from_toml_str(&toml, "forms.toml").unwrap();
    catalog.provider("local").unwrap().clone()
}

fn target(p: &Provider) -> WireTarget {
    fixtures::target(Dialect::OpenAiCompatible)
        .with_structured_output(p.structured_output)
        .with_stream_tools(p.stream_tools)
}

fn asked(p: &Provider, t: &WireTarget, req: &ChatRequest) -> Asked {
    Asked::of(p, t, req, &encode(t, req).unwrap())
}

fn refusal(form: StructuredOutput) -> Error {
    Error::external(
        "local",
        ANSWER_FORM_STEP,
        format!("provider `local` refused a structured answer asked as `{form}`"),
    )
}

fn is_form_refused(e: &Error) -> bool {
    matches!(e, Error::Retry(RetrySignal::FormRefused { .. }))
}

#[test]
fn the_catalog_records_which_forms_it_set() {
    let p = provider("");
    assert!(!p.structured_output_set && !p.stream_tools_set);
    assert_eq!(p.structured_output, StructuredOutput::JsonSchema);
    let p = provider("structured_output = \"json_schema\"\nstream_tools = true");
    assert!(p.structured_output_set && p.stream_tools_set);
}

#[test]
fn what_a_request_asks_is_what_its_body_carries() {
    let p = provider("");
    for form in [
        StructuredOutput::JsonSchema,
        StructuredOutput::JsonObject,
        StructuredOutput::Prompt,
    ] {
        let t = target(&p).with_structured_output(form);
        for req in [
            fixtures::structured(),
            fixtures::plain(),
            fixtures::with_tools(),
        ] {
            let body: Value = serde_json::from_slice(&encode(&t, &req).unwrap().body).unwrap();
            let sent = body["response_format"]["type"].as_str().map(str::to_owned);
            let a = asked(&p, &t, &req);
            assert_eq!(
                a.native_form().map(|f| f.as_str().to_owned()),
                sent,
                "{form}: {body}"
            );
        }
    }
    // A schema beside tools goes into the prompt whatever the form: nothing to negotiate.
    let mut req = fixtures::structured();
    req.tools = vec![fixtures::weather_tool()];
    assert_eq!(asked(&p, &target(&p), &req).answer, None);
    // Other dialects ask nothing of this.
    let openai = fixtures::target(Dialect::OpenAi);
    let req = fixtures::structured();
    assert_eq!(asked(&p, &openai, &req), Asked::default());
}

#[test]
fn a_refused_form_steps_down_once_and_the_answer_settles_it() {
    let p = provider("");
    let forms = Forms::default();
    let t = target(&p);
    let a = asked(&p, &t, &fixtures::structured());
    assert_eq!(a.answer, Some(StructuredOutput::JsonSchema));
    assert!(forms.apply(&p, &t).is_none(), "nothing learned yet");

    let e = forms.after_failure("local", a, refusal(StructuredOutput::JsonSchema));
    assert!(is_form_refused(&e), "{e:?}");
    assert!(e.to_string().contains("asked next as `json_object`"), "{e}");
    // A call still in flight in the old form is asked again in the new one, no further down.
    let e = forms.after_failure("local", a, refusal(StructuredOutput::JsonSchema));
    assert!(e.to_string().contains("asked next as `json_object`"), "{e}");
    let learned = forms.apply(&p, &t).unwrap();
    assert_eq!(learned.structured_output, StructuredOutput::JsonObject);
    assert!(forms.apply(&p, &learned).is_none());

    let b = asked(&p, &learned, &fixtures::structured());
    forms.accepted("local", b, false);
    // Accepted: a later refusal of the same form is about that request, an error.
    let e = forms.after_failure("local", b, refusal(StructuredOutput::JsonObject));
    assert!(!is_form_refused(&e), "{e:?}");
}

#[test]
fn the_ladder_ends_with_the_prompt() {
    let p = provider("");
    let forms = Forms::default();
    let t = target(&p);
    let a = asked(&p, &t, &fixtures::structured());
    forms.after_failure("local", a, refusal(StructuredOutput::JsonSchema));
    let t = forms.apply(&p, &t).unwrap();
    let b = asked(&p, &t, &fixtures::structured());
    let e = forms.after_failure("local", b, refusal(StructuredOutput::JsonObject));
    assert!(e.to_string().contains("asked next as `prompt`"), "{e}");
    let t = forms.apply(&p, &t).unwrap();
    assert_eq!(t.structured_output, StructuredOutput::Prompt);
    let c = asked(&p, &t, &fixtures::structured());
    assert_eq!(
        c.native_form(),
        None,
        "the prompt carries no response_format"
    );
    forms.accepted("local", c, false);
    assert_eq!(
        forms.apply(&p, &target(&p)).unwrap().structured_output,
        StructuredOutput::Prompt
    );
}

#[test]
fn a_form_the_catalog_set_is_never_changed() {
    let p = provider("structured_output = \"json_schema\"");
    let forms = Forms::default();
    let t = target(&p);
    let a = asked(&p, &t, &fixtures::structured());
    assert_eq!(a.native_form(), Some(StructuredOutput::JsonSchema));
    let e = forms.after_failure("local", a, refusal(StructuredOutput::JsonSchema));
    assert_eq!(e.kind(), crate::ErrorKind::ExternalService, "{e:?}");
    assert!(e.to_string().contains("asked as `json_schema`"), "{e}");
    assert!(forms.apply(&p, &t).is_none());
    // Even what another provider of the same name learned does not move it.
    let unset = provider("");
    let b = asked(&unset, &target(&unset), &fixtures::structured());
    forms.after_failure("local", b, refusal(StructuredOutput::JsonSchema));
    assert!(forms.apply(&p, &t).is_none());
}

#[test]
fn an_empty_tool_stream_asks_for_such_answers_whole() {
    let p = provider("");
    let forms = Forms::default();
    let t = target(&p);
    let mut req = fixtures::with_tools();
    req.stream = true;
    let a = asked(&p, &t, &req);
    assert!(a.streams_tools);
    let empty = || Error::external("local", TOOL_STREAM_STEP, "ended before any content");
    let e = forms.after_failure("local", a, empty());
    assert!(is_form_refused(&e), "{e:?}");
    let learned = forms.apply(&p, &t).unwrap();
    assert!(!learned.stream_tools);
    let whole = asked(&p, &learned, &req);
    assert!(!whole.streams_tools, "asked whole");
    let body: Value = serde_json::from_slice(&encode(&learned, &req).unwrap().body).unwrap();
    assert_eq!(body.get("stream"), None, "{body}");

    // A streamed answer without a tool call proves nothing (llama-cpp-python streams text).
    let forms = Forms::default();
    forms.accepted("local", a, false);
    let e = forms.after_failure("local", a, empty());
    assert!(is_form_refused(&e), "{e:?}");
    // A provider whose streams of tool calls were answered keeps streaming: an empty stream is
    // then the transient fault it always was.
    let forms = Forms::default();
    forms.accepted("local", a, true);
    let e = forms.after_failure("local", a, empty());
    assert!(
        matches!(e, Error::Retry(RetrySignal::Transient { .. })),
        "{e:?}"
    );
    // `stream_tools` set in the catalog: never probed.
    let set = provider("stream_tools = true");
    assert!(!asked(&set, &target(&set), &req).streams_tools);
}

fn said(body: &Value) -> (ProviderError, Vec<u8>) {
    let bytes = serde_json::to_vec(body).unwrap();
    (ProviderError::from_body(&bytes), bytes)
}

#[test]
fn refusals_of_the_form_are_told_from_other_failures() {
    // llama-cpp-python's answer to `json_schema`: the field is on the message's second line.
    let llama = json!({"error": {
        "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', \
            'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", \
            'input': 'json_schema'}\n\n  File \"app.py\", line 376",
        "type": "internal_server_error", "param": null, "code": null}});
    let (err, body) = said(&llama);
    let line = refuses_form(500, &err, &body).unwrap();
    assert!(
        line.starts_with("internal_server_error: {'type': 'literal_error'")
            && line.contains("response_format"),
        "{line}"
    );
    // An outage is an outage, whatever its body says.
    assert_eq!(refuses_form(503, &err, &body), None);
    // A 400 naming the field as its parameter, or in its message.
    let (err, body) = said(&json!({"error": {"message": "bad", "param": "response_format.type"}}));
    assert!(refuses_form(400, &err, &body).is_some());
    let (err, body) = said(&json!({"error": {
        "message": "'response_format.type' must be 'json_schema' or 'text'"}}));
    assert!(refuses_form(400, &err, &body).is_some());
    // A 400 about something else: another parameter, or nothing about the form.
    let (err, body) = said(&json!({"error": {
        "message": "'messages' must contain the word 'json' to use 'response_format' of type \
            'json_object'.", "param": "messages"}}));
    assert_eq!(refuses_form(400, &err, &body), None);
    let (err, body) = said(&json!({"error": {
        "message": "This model's maximum context length is 4096 tokens."}}));
    assert_eq!(refuses_form(400, &err, &body), None);
    assert_eq!(refuses_form(500, &err, &body), None);
    // Authentication and throttling are never a refusal of the form.
    let (err, body) = said(&json!({"error": {"message": "no response_format for you"}}));
    assert_eq!(refuses_form(401, &err, &body), None);
    assert_eq!(refuses_form(429, &err, &body), None);
}
