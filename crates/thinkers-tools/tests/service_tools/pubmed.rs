//! `pubmed_fetch`: typed articles from efetch XML, the request it sends, and the rate budget.

use std::time::Duration;

use serde_json::json;
use thinkers::Dispatcher;
use thinkers::tool::{ToolCallContext, ToolProvider, TypedToolProvider};
use thinkers_tools::{PUBMED_BUDGET, PubmedArticle, PubmedArticles, PubmedConfig, PubmedFetch};

use crate::fakes::PubmedFake;
use crate::support::call;

fn tool(fake: &PubmedFake, api_key: Option<&str>) -> PubmedFetch {
    PubmedFetch::new(PubmedConfig {
        base_url: fake.base_url(),
        api_key: api_key.map(str::to_owned),
        email: Some("dev@example.invalid".to_owned()),
        ..PubmedConfig::default()
    })
    .unwrap()
}

#[tokio::test]
async fn articles_are_typed_from_the_xml() {
    let d = Dispatcher::builder().build();
    let fake = PubmedFake::start().await;
    let out = call(
        &d,
        tool(&fake, Some("secret-key")),
        json!({"pmids": ["31000002", " 31000001 ", "31000003"]}),
    )
    .await
    .unwrap();
    let got = out.downcast::<PubmedArticles>().unwrap();
    assert_eq!(got.not_found, vec!["31000003"]);
    assert_eq!(
        got.articles
            .iter()
            .map(|a| a.pmid.as_str())
            .collect::<Vec<_>>(),
        ["31000002", "31000001"],
        "in the order asked for"
    );
    let first = &got.articles[1];
    assert_eq!(
        first,
        &PubmedArticle {
            pmid: "31000001".into(),
            title: "Admission control in Escherichia coli colonies: a rate & budget study.".into(),
            abstract_text: Some(
                "BACKGROUND: Colonies compete for a shared nutrient budget of 103 units.\n\n\
                 RESULTS: Growth stayed below the limit in every window (α = 0.05)."
                    .into()
            ),
            authors: vec![
                "Quill Ada M".into(),
                "Borrow T".into(),
                "Fixture Study Group".into()
            ],
            journal: Some("Journal of Invented Microbiology".into()),
            year: Some(2019),
            doi: Some("10.5555/jim.2019.0001".into()),
        }
    );
    let second = &got.articles[0];
    assert_eq!(second.abstract_text, None);
    assert_eq!(second.year, Some(1998), "from a MedlineDate");
    assert_eq!(
        second.doi.as_deref(),
        Some("10.5555/apr.1998.7"),
        "from the id list"
    );
    // What the model reads.
    assert_eq!(
        out.json["articles"][1]["abstract"],
        json!(first.abstract_text)
    );

    let q = fake.queries.lock().unwrap()[0].clone();
    assert_eq!(q["db"], "pubmed");
    assert_eq!(q["retmode"], "xml");
    assert_eq!(q["id"], "31000002,31000001,31000003");
    assert_eq!(q["tool"], "thinkers");
    assert_eq!(q["email"], "dev@example.invalid");
    assert_eq!(q["api_key"], "secret-key");
}

#[test]
fn the_tool_is_read_only_and_asks_for_the_pubmed_budget() {
    let p = TypedToolProvider::new(PubmedFetch::new(PubmedConfig::default()).unwrap());
    assert!(p.read_only());
    assert_eq!(p.name(), "pubmed_fetch");
    assert_eq!(p.input_schema()["properties"]["pmids"]["type"], "array");
    assert!(
        p.instantiate(&json!({"pmids": "1"}), &ToolCallContext::default())
            .is_err()
    );
    assert_eq!(PUBMED_BUDGET, "service:pubmed");
}

/// Twenty concurrent calls through one dispatcher: the fake's arrival times never hold more than
/// three requests in any one-second window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_concurrent_calls_stay_within_three_per_second() {
    let d = Dispatcher::builder().build();
    let fake = PubmedFake::start().await;
    let t = std::sync::Arc::new(TypedToolProvider::new(tool(&fake, None)));
    let handles: Vec<_> = (0..20)
        .map(|_| {
            let job = t
                .instantiate(&json!({"pmids": ["31000001"]}), &ToolCallContext::default())
                .unwrap();
            d.submit(job)
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    let mut at = fake.arrivals.lock().unwrap().clone();
    assert_eq!(at.len(), 20);
    at.sort();
    for w in at.windows(4) {
        let spread = w[3] - w[0];
        assert!(
            spread >= Duration::from_secs(1),
            "four requests within {spread:?}: the budget let a burst through"
        );
    }
    // And the budget did not throttle harder than it must: 20 requests at 3 per window take
    // six windows after the first three.
    let total = at[19] - at[0];
    assert!(total < Duration::from_secs(9), "took {total:?}");
}
