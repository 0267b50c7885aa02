//! The approval example (`cargo run -p thinkers-store --example approval`) against an in-process
//! thinkers-sim. The example holds its own copy of the examples' support module, so that it also
//! runs on its own.
#![allow(clippy::duplicate_mod)]

#[path = "../../../thinkers/examples/support/mod.rs"]
mod example_support;

#[allow(dead_code)]
#[path = "../../examples/approval.rs"]
mod approval;

use example_support as support;

#[tokio::test]
async fn approval_example_waits_for_a_person_and_refunds_once() {
    let env = support::offline(approval::tune).await.unwrap();
    let sim = env.sim.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let catalog = thinkers::model::Catalog::bundled().with_sim_url(&sim.base_url());
    let out = approval::run(catalog, &dir.path().join("approval.db"))
        .await
        .unwrap();
    assert_eq!(out.waited_on, "refund");
    assert_eq!(out.answer, "Refunded 250 on order 1234.");
    assert_eq!(out.refunds, 1, "the refund ran once, after the approval");
    // Two model calls in all: the turn that asked for the refund (answered from the response
    // cache when the run went on) and the answer.
    assert_eq!(sim.requests().len(), 2);
}
