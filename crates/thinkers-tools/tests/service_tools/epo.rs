//! `epo_claims`: numbered claims, language choice, the token cache and its renewal on 401.

use serde_json::json;
use thinkers::Dispatcher;
use thinkers::tool::{ToolCallContext, ToolProvider, TypedToolProvider};
use thinkers_tools::{Claim, EpoClaims, EpoClaimsConfig, EpoCredentials, PatentClaims};

use crate::fakes::{EPO_KEY, EPO_SECRET, EpoFake};
use crate::support::{assert_invalid, call};

fn tool(fake: &EpoFake) -> EpoClaims {
    EpoClaims::new(EpoClaimsConfig {
        base_url: fake.base_url(),
        credentials: EpoCredentials::new(EPO_KEY, EPO_SECRET),
    })
    .unwrap()
}

#[tokio::test]
async fn claims_are_numbered_in_the_language_asked_for() {
    let d = Dispatcher::builder().build();
    let fake = EpoFake::start().await;
    let out = call(
        &d,
        tool(&fake),
        json!({"publication_number": "ep 1000000 a1"}),
    )
    .await
    .unwrap();
    let got = out.downcast::<PatentClaims>().unwrap();
    assert_eq!(got.publication_number, "EP1000000.A1");
    assert_eq!(got.language.as_deref(), Some("EN"), "English by default");
    assert_eq!(got.languages, ["DE", "EN"]);
    assert_eq!(got.claims.len(), 3);
    assert_eq!(
        got.claims[0],
        Claim {
            number: 1,
            text: "An apparatus for admitting jobs, comprising a budget store and a queue in \
                   which each job waits until its whole reservation fits."
                .into()
        }
    );
    assert_eq!(got.claims[2].number, 3);
    assert!(
        got.claims[2]
            .text
            .ends_with("the wait the service asked for.")
    );
    assert_eq!(
        fake.numbers.lock().unwrap().as_slice(),
        ["EP1000000.A1"],
        "the number reached OPS normalised to epodoc"
    );

    let out = call(
        &d,
        tool(&fake),
        json!({"publication_number": "EP1000000", "language": "de"}),
    )
    .await
    .unwrap();
    let got = out.downcast::<PatentClaims>().unwrap();
    assert_eq!(got.publication_number, "EP1000000");
    assert_eq!(got.language.as_deref(), Some("DE"));
    assert_eq!(got.claims[1].number, 2);
    assert!(
        got.claims[1]
            .text
            .starts_with("Vorrichtung nach Anspruch 1")
    );

    let err = call(
        &d,
        tool(&fake),
        json!({"publication_number": "EP1000000A1", "language": "ja"}),
    )
    .await
    .unwrap_err();
    assert_invalid(&err, "language", "JA");
    assert!(err.to_string().contains("DE, EN"), "{err}");
}

#[tokio::test]
async fn one_token_serves_many_calls() {
    let d = Dispatcher::builder().build();
    let fake = EpoFake::start().await;
    // One provider: every job it builds shares the one tool, and so its token cache.
    let provider = TypedToolProvider::new(tool(&fake));
    let jobs: Vec<_> = (0..4)
        .map(|_| {
            let args = json!({"publication_number": "EP1000000A1"});
            d.submit(
                provider
                    .instantiate(&args, &ToolCallContext::default())
                    .unwrap(),
            )
        })
        .collect();
    for j in jobs {
        j.await.unwrap();
    }
    assert_eq!(fake.claims_hits.get(), 4);
    assert_eq!(
        fake.auth_hits.get(),
        1,
        "concurrent calls waited for one token request"
    );
}

#[tokio::test]
async fn a_rejected_token_is_renewed_once() {
    let d = Dispatcher::builder().build();
    let fake = EpoFake::start().await;
    // The service rejects the first token it issued for this number: the tool fetches a second
    // and asks again.
    let out = call(
        &d,
        tool(&fake),
        json!({"publication_number": "EP4010000A1"}),
    )
    .await
    .unwrap();
    assert_eq!(out.json["claims"][0]["number"], 1);
    assert_eq!(fake.auth_hits.get(), 2);
    assert_eq!(fake.claims_hits.get(), 2);
}
