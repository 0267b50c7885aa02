//! The mapping of provider failures (`super`): statuses, stream errors, one-line bodies.

use super::*;
use crate::ErrorKind;
use crate::llm::redact::{Redactor, chain};

fn err(body: &str) -> ProviderError {
    ProviderError::from_body(body.as_bytes())
}

fn origin(dialect: Dialect) -> Origin {
    let path = if dialect == Dialect::Anthropic {
        "/v1/messages"
    } else {
        "/v1/chat/completions"
    };
    Origin {
        service: "prov".into(),
        dialect,
        entry: Some("ent".into()),
        endpoint: format!("POST http://h{path}"),
        path: path.into(),
    }
}

fn from_status(
    dialect: Dialect,
    status: u16,
    err: &ProviderError,
    retry_after: Option<Duration>,
) -> Error {
    origin(dialect).refusal(status, err, retry_after, None, Some("m"))
}

#[test]
fn rate_limits_throttle_but_quota_and_size_do_not() {
    let rl = err(
        r#"{"error":{"message":"Rate limit reached","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#,
    );
    let e = from_status(Dialect::OpenAi, 429, &rl, Some(Duration::from_secs(3)));
    match e.retry_signal() {
        Some(RetrySignal::Throttled {
            budget: None,
            retry_after: Some(wait),
            detail: Some(detail),
        }) => {
            assert_eq!(*wait, Duration::from_secs(3));
            for part in [
                "`prov`",
                "HTTP 429",
                "Rate limit reached",
                "entry `ent`",
                "POST http://h",
            ] {
                assert!(detail.contains(part), "`{part}` is not named: {detail}");
            }
        }
        other => panic!("{other:?}"),
    }
    let quota = err(
        r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
    );
    let e = from_status(Dialect::OpenAi, 429, &quota, None);
    assert_eq!(e.kind(), ErrorKind::ExternalService);
    assert!(e.to_string().contains("quota"));
    let big = err(
        r#"{"error":{"message":"Request too large for gpt-4o in organization org-x on tokens per min (TPM)","type":"tokens","code":"rate_limit_exceeded"}}"#,
    );
    assert_eq!(
        from_status(Dialect::OpenAi, 429, &big, None).kind(),
        ErrorKind::ExternalService
    );
}

#[test]
fn outages_and_overloads_are_transient_in_every_dialect() {
    let o = err(
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}"#,
    );
    assert_eq!(o.kind.as_deref(), Some("overloaded_error"));
    let unavailable = err(
        r#"{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#,
    );
    for dialect in [
        Dialect::OpenAi,
        Dialect::Anthropic,
        Dialect::Gemini,
        Dialect::BedrockConverse,
    ] {
        for said in [&o, &unavailable] {
            for status in [502, 503, 504, 529] {
                let e = from_status(dialect, status, said, Some(Duration::from_secs(2)));
                match e {
                    Error::Retry(RetrySignal::Transient {
                        service,
                        detail,
                        retry_after,
                    }) => {
                        assert_eq!(service, "prov");
                        assert_eq!(
                            retry_after,
                            Some(Duration::from_secs(2)),
                            "the server's wait"
                        );
                        assert!(detail.contains(&format!("HTTP {status}")), "{detail}");
                        assert!(detail.contains("entry `ent`"), "{detail}");
                    }
                    other => panic!("{dialect:?} {status}: {other:?}"),
                }
            }
        }
    }
}

#[test]
fn bodies_reach_errors_on_one_bounded_line() {
    let page = "<!DOCTYPE html>\n<html><head><meta charset=utf-8>\n<title>502 Bad Gateway</title>\
                <style>body{color:red}</style></head><body><h1>502 Bad Gateway</h1><hr>\
                <center>nginx</center></body></html>";
    assert_eq!(
        ProviderError::from_body(page.as_bytes()).message,
        "502 Bad Gateway"
    );
    let untitled = "<html><body>\n<script>var x = 1;</script><h1>Gateway &amp; proxy</h1>\n<p>down</p></body></html>";
    assert_eq!(
        ProviderError::from_body(untitled.as_bytes()).message,
        "Gateway & proxy"
    );
    let long = format!("\n\n  first   line {}\nsecond line", "x".repeat(500));
    let m = ProviderError::from_body(long.as_bytes()).message;
    assert!(m.starts_with("first line xx"), "{m}");
    assert!(m.ends_with('…'), "{m}");
    assert_eq!(m.chars().count(), MAX_MESSAGE_CHARS + 1, "{m}");
    assert!(!m.contains('\n'));
    let json = r#"{"error":{"message":"line one\nline two","type":"server_error"}}"#;
    assert_eq!(
        ProviderError::from_body(json.as_bytes()).message,
        "line one"
    );
    // Multi-byte characters are cut on a boundary.
    let wide = "é".repeat(400);
    let m = one_line(&wide);
    assert_eq!(m.chars().count(), MAX_MESSAGE_CHARS + 1);
}

#[test]
fn bad_requests_name_the_parameter() {
    let e = from_status(
        Dialect::OpenAi,
        400,
        &err(
            r#"{"error":{"message":"Invalid value: 'sometimes'","type":"invalid_request_error","param":"tool_choice","code":null}}"#,
        ),
        None,
    );
    assert!(
        matches!(&e, Error::InvalidInput { parameter, reason, .. }
            if parameter == "tool_choice" && reason.contains("Invalid value")),
        "{e:?}"
    );
    let e = from_status(Dialect::Anthropic, 422, &err("not json at all"), None);
    assert!(matches!(e, Error::InvalidInput { ref parameter, .. } if parameter == "request"));
}

#[test]
fn echoed_keys_are_redacted_from_every_text() {
    let e = err(r#"{"error":{"message":"Incorrect API key provided: sk-CANARY-1."}}"#);
    let redactor = Redactor {
        secrets: vec!["sk-CANARY-1".into()],
    };
    let mapped = redactor.error(from_status(Dialect::OpenAi, 401, &e, None));
    assert!(!mapped.to_string().contains("CANARY"), "{mapped}");
    assert!(mapped.to_string().contains("authentication"));
    // A throttle's detail quotes the provider too: cleaned the same way.
    let throttled = redactor.error(from_status(Dialect::OpenAi, 429, &e, None));
    let shown = format!("{throttled} {throttled:?}");
    assert!(!shown.contains("CANARY"), "{shown}");
    assert!(
        shown.contains("Incorrect API key provided: <redacted>"),
        "{shown}"
    );
    let with_source =
        Error::external("p", "s", "d").with_source(std::io::Error::other("inner sk-CANARY-1 text"));
    let clean = redactor.error(with_source);
    let shown = format!("{clean:?} {}", chain(&clean));
    assert!(!shown.contains("CANARY"), "{shown}");
    assert!(shown.contains("inner <redacted> text"), "{shown}");
}

#[test]
fn not_found_names_the_model_the_provider_or_the_doubled_version() {
    let e = err(
        r#"{"error":{"message":"model 'm' not found","type":"invalid_request_error","code":"model_not_found"}}"#,
    );
    let shown = from_status(Dialect::OpenAi, 404, &e, None).to_string();
    assert!(
        shown.contains("model `m` not found at provider `prov`"),
        "{shown}"
    );
    assert!(shown.contains("entry `ent`"), "{shown}");
    let mut doubled = origin(Dialect::Anthropic);
    doubled.path = "/v1/v1/messages".into();
    let shown = doubled
        .refusal(404, &err("Not Found"), None, None, Some("m"))
        .to_string();
    assert!(shown.contains("already ends in `/v1`"), "{shown}");
    let shown = from_status(Dialect::OpenAi, 404, &err("404 page not found"), None).to_string();
    assert!(
        shown.contains("was not found at provider `prov`"),
        "{shown}"
    );
}

#[test]
fn stream_errors_are_final_once_the_answer_started() {
    let o = ProviderError {
        kind: Some("overloaded_error".into()),
        ..ProviderError::default()
    };
    assert!(matches!(
        in_stream(Dialect::Anthropic, false, &o),
        Error::Retry(RetrySignal::Transient { .. })
    ));
    assert_eq!(
        in_stream(Dialect::Anthropic, true, &o).kind(),
        ErrorKind::ExternalService
    );
    assert!(transport(Dialect::OpenAi, false, "reset").is_retry_signal());
    assert_eq!(
        transport(Dialect::OpenAi, true, "reset").kind(),
        ErrorKind::ExternalService
    );
}
