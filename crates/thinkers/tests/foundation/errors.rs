//! The error contract of one external-service step: the three outcomes of `ServiceStep::wrap`,
//! and retry signals passing through `wrap` and `unwrap_error` untouched.

use thinkers::error::{ServiceStep, StatusFailure, unwrap_error};
use thinkers::{Error, ErrorKind, RetrySignal};

const STEP: ServiceStep<'static> = ServiceStep {
    service: "pubmed",
    step: "efetch",
    parameter: "pmids",
    value: "12345,abc",
};

#[test]
fn correctable_client_failure_names_the_parameter_and_value() {
    let r: Result<(), _> = Err(StatusFailure {
        status: 400,
        message: "invalid id".into(),
    });
    let err = STEP.wrap(r).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    match &err {
        Error::InvalidInput {
            parameter, value, ..
        } => {
            assert_eq!(parameter, "pmids");
            assert_eq!(value.as_deref(), Some("12345,abc"));
        }
        other => panic!("unexpected {other:?}"),
    }
    let r404: Result<(), _> = Err(StatusFailure {
        status: 404,
        message: "no such page".into(),
    });
    assert_eq!(STEP.wrap(r404).unwrap_err().kind(), ErrorKind::InvalidInput);
}

#[test]
fn uncorrectable_failure_names_the_service_and_step() {
    for status in [500, 502, 401, 403] {
        let r: Result<(), _> = Err(StatusFailure {
            status,
            message: "server trouble".into(),
        });
        let err = STEP.wrap(r).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ExternalService, "status {status}");
        let text = err.to_string();
        assert!(text.contains("pubmed") && text.contains("efetch"), "{text}");
    }
}

#[test]
fn io_failure_is_an_external_failure_never_a_system_failure() {
    let r: Result<(), _> = Err(std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "reset",
    ));
    let err = STEP.wrap(r).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ExternalService);
    assert!(err.to_string().contains("transport failure"), "{err}");
    assert_ne!(err.kind(), ErrorKind::System);
}

#[test]
fn retry_signals_pass_through_wrap_and_unwrap() {
    let signals = [
        Error::throttled(Some("service:pubmed".into()), None),
        Error::correction("again"),
        Error::Retry(RetrySignal::TruncationEscalation),
    ];
    for s in signals {
        let expected = format!("{s:?}");
        let r: Result<(), Error> = Err(s);
        let through = STEP.wrap(r).unwrap_err();
        assert_eq!(format!("{through:?}"), expected);
        assert_eq!(format!("{:?}", unwrap_error(through)), expected);
    }
}

#[test]
fn the_model_reads_the_kind_lead() {
    let e = Error::invalid_input("query", Some("".into()), "must not be empty");
    let text = e.for_model();
    assert!(text.starts_with("Your input was invalid"), "{text}");
    assert!(text.contains("`query`"), "{text}");
}
