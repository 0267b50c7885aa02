//! The error table and `unwrap_error`.

use super::*;

#[test]
fn table_is_in_kind_order() {
    assert_eq!(ErrorKind::InvalidInput.as_str(), "invalid_input");
    assert_eq!(ErrorKind::Retry.as_str(), "retry");
    assert!(ErrorKind::Retry.is_retry_signal());
    assert!(ErrorKind::InvalidInput.is_correctable());
    assert!(!ErrorKind::System.is_correctable());
}

#[test]
fn unwrap_passes_retry_signals_through() {
    let sig = Error::correction("bad json");
    let back = unwrap_error(sig);
    assert!(matches!(back, Error::Retry(RetrySignal::Correction { .. })));
    let io = std::io::Error::other("boom");
    assert_eq!(unwrap_error(io).kind(), ErrorKind::ExternalService);
    let other: BoxError = "plain".into();
    assert_eq!(unwrap_error(other).kind(), ErrorKind::System);
}
