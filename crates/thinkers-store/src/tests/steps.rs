//! The journal of durable steps and the approvals ([`thinkers::durable::StepStore`]) on both
//! backends.

use anyhow::Result;

use super::Backend;
use thinkers::durable::{
    ApprovalKind, ApprovalRequest, ApprovalStatus, Decision, JournalEntry, StepKey, StepOutcome,
};

/// The journal keeps a call's first entry; an approval is asked once and decided once (again
/// the same way is harmless, the other way refused); an unknown id is named.
async fn steps_journal_and_approvals(b: &Backend) -> Result<()> {
    let steps = b.store.steps();
    let key = StepKey {
        run: "run-1".to_owned(),
        place: "-:notifier".to_owned(),
        call_id: "call_1".to_owned(),
    };
    assert!(steps.journaled(&key).await?.is_none());
    let entry = JournalEntry {
        tool: "send_note".to_owned(),
        arguments_hash: "abc".to_owned(),
        outcome: StepOutcome::Output(serde_json::json!({"sent": true})),
        job: "job-1".to_owned(),
    };
    steps.journal(&key, &entry).await?;
    let later = JournalEntry {
        outcome: StepOutcome::Error("late".to_owned()),
        ..entry.clone()
    };
    steps.journal(&key, &later).await?;
    assert_eq!(
        steps.journaled(&key).await?,
        Some(entry),
        "the first entry wins"
    );

    let request = ApprovalRequest {
        key: key.clone(),
        kind: ApprovalKind::Approval,
        tool: "send_note".to_owned(),
        arguments: serde_json::json!({"to": "ops"}),
        arguments_hash: "hash-ops".to_owned(),
        job: "job-2".to_owned(),
        workflow: "wf-1".to_owned(),
        read_only_scope: false,
    };
    let asked = steps.ask(&request).await?;
    assert_eq!(asked.status, ApprovalStatus::Pending);
    assert_eq!(asked.arguments, request.arguments);
    assert_eq!(steps.ask(&request).await?.id, asked.id, "asked once");
    assert_eq!(steps.approvals(true).await?.len(), 1);
    let deny = Decision::Deny {
        reason: "not today".to_owned(),
    };
    let denied = steps.decide(&asked.id, &deny).await?;
    assert_eq!(denied.status, ApprovalStatus::Denied);
    assert_eq!(denied.reason.as_deref(), Some("not today"));
    assert!(denied.decided_at_ms.is_some());
    assert!(steps.approvals(true).await?.is_empty());
    assert_eq!(steps.approvals(false).await?.len(), 1);
    assert_eq!(steps.ask(&request).await?.status, ApprovalStatus::Denied);
    steps.decide(&asked.id, &deny).await?;
    let Err(refused) = steps.decide(&asked.id, &Decision::Approve).await else {
        anyhow::bail!("a call denied was approved");
    };
    assert!(refused.to_string().contains(&asked.id), "{refused}");
    let Err(unknown) = steps.decide("no-such-id", &Decision::Approve).await else {
        anyhow::bail!("an unknown id was decided");
    };
    assert!(unknown.to_string().contains("no-such-id"), "{unknown}");
    Ok(())
}
both!(steps_journal_and_approvals);

/// A started entry is written only where the key has none, and the call's finished entry
/// replaces it (a finished entry never is); a started entry of another call at the same place
/// is left for that call to finish.
async fn a_started_call_is_finished_in_place(b: &Backend) -> Result<()> {
    let steps = b.store.steps();
    let key = StepKey {
        run: "run-2".to_owned(),
        place: "-:payer#2".to_owned(),
        call_id: "call_7".to_owned(),
    };
    let started = JournalEntry {
        tool: "charge_card".to_owned(),
        arguments_hash: "h1".to_owned(),
        outcome: StepOutcome::Started,
        job: "job-1".to_owned(),
    };
    steps.start(&key, &started).await?;
    assert_eq!(steps.journaled(&key).await?, Some(started.clone()));
    // Another call sharing the place (a fan-out sibling) neither starts over it nor finishes it.
    let sibling = JournalEntry {
        arguments_hash: "h2".to_owned(),
        outcome: StepOutcome::Output(serde_json::json!("other")),
        ..started.clone()
    };
    steps.start(&key, &sibling).await?;
    steps.journal(&key, &sibling).await?;
    assert_eq!(steps.journaled(&key).await?, Some(started.clone()));
    // The call itself finishes it; a replay's second start changes nothing after that.
    let finished = JournalEntry {
        outcome: StepOutcome::Output(serde_json::json!({"charged": 5})),
        job: "job-9".to_owned(),
        ..started.clone()
    };
    steps.journal(&key, &finished).await?;
    steps.start(&key, &started).await?;
    let late = JournalEntry {
        outcome: StepOutcome::Error("late".to_owned()),
        ..finished.clone()
    };
    steps.journal(&key, &late).await?;
    assert_eq!(steps.journaled(&key).await?, Some(finished));
    Ok(())
}
both!(a_started_call_is_finished_in_place);

/// A decision covers the call with the arguments it was asked for: the same place with other
/// arguments is a new pending call, and an outcome-unknown pause at the place is apart from its
/// approval. Every way of deciding is stored with its text.
async fn a_decision_covers_only_the_arguments_it_was_asked_for(b: &Backend) -> Result<()> {
    let steps = b.store.steps();
    let key = StepKey {
        run: "run-3".to_owned(),
        place: "-:payer#2".to_owned(),
        call_id: "call_1".to_owned(),
    };
    let ask = |kind, to: &str| ApprovalRequest {
        key: key.clone(),
        kind,
        tool: "wire_money".to_owned(),
        arguments: serde_json::json!({"to": to}),
        arguments_hash: format!("hash-{to}"),
        job: "job-1".to_owned(),
        workflow: "wf-1".to_owned(),
        read_only_scope: false,
    };
    let alice = steps.ask(&ask(ApprovalKind::Approval, "alice")).await?;
    steps.decide(&alice.id, &Decision::Approve).await?;
    assert_eq!(alice.arguments_hash, "hash-alice");
    let mallory = steps.ask(&ask(ApprovalKind::Approval, "mallory")).await?;
    assert_ne!(mallory.id, alice.id);
    assert_eq!(
        mallory.status,
        ApprovalStatus::Pending,
        "another call is not covered"
    );
    let again = steps.ask(&ask(ApprovalKind::Approval, "alice")).await?;
    assert_eq!(
        (again.id.as_str(), again.status),
        (alice.id.as_str(), ApprovalStatus::Approved)
    );
    let unknown = steps
        .ask(&ask(ApprovalKind::OutcomeUnknown, "alice"))
        .await?;
    assert_eq!(unknown.kind, ApprovalKind::OutcomeUnknown);
    assert_eq!(unknown.status, ApprovalStatus::Pending);
    let skip = Decision::Skip {
        result: "paid: ref 42".to_owned(),
    };
    let skipped = steps.decide(&unknown.id, &skip).await?;
    assert_eq!(skipped.status, ApprovalStatus::Skipped);
    assert_eq!(skipped.reason.as_deref(), Some("paid: ref 42"));
    let fail = Decision::Fail {
        reason: "wrong payee".to_owned(),
    };
    let failed = steps.decide(&mallory.id, &fail).await?;
    assert_eq!(failed.status, ApprovalStatus::Failed);
    let Err(refused) = steps.decide(&mallory.id, &Decision::Approve).await else {
        anyhow::bail!("a failed call was approved");
    };
    assert!(refused.to_string().contains("failed"), "{refused}");
    Ok(())
}
both!(a_decision_covers_only_the_arguments_it_was_asked_for);
