//! The transport under the client: HTTPS against a local TLS server, the proxy path, and the
//! requests it refuses to send.
//!
//! `tls/` holds a test certificate authority (`ca.pem`, its key thrown away) and a server
//! certificate it signed for `localhost` and `127.0.0.1` (`server.pem`, `server.key`), made with
//! openssl and valid for a hundred years. They exist only for these tests.

use std::net::SocketAddr;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use super::client::{OK_BODY, Script, openai, serve};
use super::fixtures::{self, CANARY_KEY};
use crate::llm::{ApiKey, Dialect, ModelClient, WireTarget};
use crate::{Error, RetrySignal};

const CA: &str = include_str!("tls/ca.pem");
const SERVER_CERT: &str = include_str!("tls/server.pem");
const SERVER_KEY: &str = include_str!("tls/server.key");

/// A TLS front on 127.0.0.1:0 that passes each connection's plain bytes on to `backend`.
async fn tls_front(backend: &str) -> anyhow::Result<SocketAddr> {
    let backend = backend.trim_start_matches("http://").to_owned();
    let certs = CertificateDer::pem_slice_iter(SERVER_CERT.as_bytes()).collect::<Result<_, _>>()?;
    let key = PrivateKeyDer::from_pem_slice(SERVER_KEY.as_bytes())?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(certs, key)?;
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let backend = backend.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                if let Ok(mut plain) = tokio::net::TcpStream::connect(&backend).await {
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                }
            });
        }
    });
    Ok(addr)
}

#[tokio::test]
async fn https_endpoints_are_reached_when_their_root_is_trusted() -> anyhow::Result<()> {
    let (base, seen) = serve(Script::new(200, OK_BODY)).await?;
    let front = tls_front(&base).await?;
    let client = ModelClient::builder().add_root_certificates(CA).build()?;
    for host in [
        format!("https://localhost:{}", front.port()),
        format!("https://{front}"),
    ] {
        let out = client.send(&openai(&host), &fixtures::plain()).await?;
        assert_eq!(out.response.text(), "Sunny.");
    }
    let seen = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    assert_eq!(seen.bodies.len(), 2);
    assert_eq!(
        seen.header(0, "host"),
        Some(format!("localhost:{}", front.port()).as_str())
    );
    assert_eq!(seen.header(1, "host"), Some(front.to_string().as_str()));
    assert_eq!(
        seen.header(0, "authorization"),
        Some(format!("Bearer {CANARY_KEY}").as_str())
    );
    Ok(())
}

#[tokio::test]
async fn an_untrusted_certificate_is_a_final_tls_error() -> anyhow::Result<()> {
    let (base, seen) = serve(Script::new(200, OK_BODY)).await?;
    let front = tls_front(&base).await?;
    let target = openai(&format!("https://localhost:{}", front.port()));
    let err = ModelClient::new()?
        .send(&target, &fixtures::plain())
        .await
        .err();
    match &err {
        Some(Error::ExternalService { step, detail, .. }) => {
            assert_eq!(step, "tls");
            assert!(detail.contains("certificate"), "{detail}");
        }
        other => anyhow::bail!("expected a TLS failure, got {other:?}"),
    }
    let seen = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    assert!(seen.bodies.is_empty(), "nothing reached the server");
    Ok(())
}

#[tokio::test]
async fn a_configured_proxy_carries_every_request() -> anyhow::Result<()> {
    // The "proxy" is the script server: a proxied request names its whole target URL, and the
    // target's host does not resolve, so an answer can only have come through the proxy.
    let (proxy, seen) = serve(Script::new(200, OK_BODY)).await?;
    let client = ModelClient::builder().proxy(proxy).build()?;
    let out = client
        .send(&openai("http://model.invalid"), &fixtures::plain())
        .await?;
    assert_eq!(out.response.text(), "Sunny.");
    let seen = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    assert_eq!(seen.header(0, "host"), Some("model.invalid"));
    Ok(())
}

#[tokio::test]
async fn credentials_in_an_endpoint_url_are_sent_as_basic_authentication() -> anyhow::Result<()> {
    let (base, seen) = serve(Script::new(200, OK_BODY)).await?;
    let with_user = base.replacen("http://", "http://user:secret@", 1);
    let target = WireTarget::new(
        Dialect::OpenAiCompatible,
        format!("{with_user}/v1"),
        "local",
    );
    let out = ModelClient::new()?
        .send(&target, &fixtures::plain())
        .await?;
    assert_eq!(out.response.text(), "Sunny.");
    let seen = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    // base64("user:secret")
    assert_eq!(
        seen.header(0, "authorization"),
        Some("Basic dXNlcjpzZWNyZXQ=")
    );
    Ok(())
}

#[tokio::test]
async fn a_refused_connection_is_named_and_transient() -> anyhow::Result<()> {
    let closed = {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        l.local_addr()?
    };
    let err = ModelClient::new()?
        .send(&openai(&format!("http://{closed}")), &fixtures::plain())
        .await
        .err();
    match &err {
        Some(Error::Retry(RetrySignal::Transient { detail, .. })) => {
            assert!(detail.starts_with("the connection failed"), "{detail}");
            assert!(detail.contains("refused"), "{detail}");
        }
        other => anyhow::bail!("expected a transient failure, got {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn a_key_that_cannot_be_a_header_is_refused_without_showing_it() -> anyhow::Result<()> {
    let (base, seen) = serve(Script::new(200, OK_BODY)).await?;
    let target = WireTarget::new(Dialect::OpenAi, format!("{base}/v1"), "gpt-x")
        .with_key(ApiKey::new(format!("{CANARY_KEY}\n")));
    let Err(err) = ModelClient::new()?.send(&target, &fixtures::plain()).await else {
        anyhow::bail!("a key with a line break was sent");
    };
    assert!(!err.is_retry_signal(), "{err:?}");
    let shown = format!("{err} {err:?}");
    assert!(shown.contains("`authorization` header"), "{shown}");
    assert!(!shown.contains(CANARY_KEY), "the key leaked: {shown}");
    let seen = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    assert!(seen.bodies.is_empty());
    Ok(())
}

#[tokio::test]
async fn redirects_are_not_followed() -> anyhow::Result<()> {
    let (elsewhere, elsewhere_seen) = serve(Script::new(200, OK_BODY)).await?;
    let (base, seen) = serve(
        Script::new(307, r#"{"error":{"message":"moved","type":"moved"}}"#)
            .header("location", format!("{elsewhere}/v1/chat/completions")),
    )
    .await?;
    let Err(err) = ModelClient::new()?
        .send(&openai(&base), &fixtures::plain())
        .await
    else {
        anyhow::bail!("a redirect was followed");
    };
    assert!(!err.is_retry_signal(), "{err:?}");
    let seen = seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    assert_eq!(seen.bodies.len(), 1);
    let elsewhere_seen = elsewhere_seen
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?;
    assert!(elsewhere_seen.bodies.is_empty(), "the key went elsewhere");
    Ok(())
}

#[tokio::test]
async fn bad_client_settings_are_named() -> anyhow::Result<()> {
    let Err(err) = ModelClient::builder()
        .add_root_certificates(CA)
        .add_root_certificates("not a certificate")
        .build()
    else {
        anyhow::bail!("a PEM without a certificate was accepted");
    };
    assert!(
        err.to_string().contains("root certificate PEM number 2"),
        "{err}"
    );
    let Err(err) = ModelClient::builder().proxy("not a url").build() else {
        anyhow::bail!("a malformed proxy was accepted");
    };
    assert!(err.to_string().contains("`not a url`"), "{err}");

    let Err(err) = ModelClient::new()?
        .send(
            &WireTarget::new(Dialect::OpenAi, "ftp://example.com", "gpt-x"),
            &fixtures::plain(),
        )
        .await
    else {
        anyhow::bail!("an ftp endpoint was sent to");
    };
    assert!(err.to_string().contains("not http or https"), "{err}");
    Ok(())
}
