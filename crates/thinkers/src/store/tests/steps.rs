//! The journal of durable steps and the approvals ([`crate::durable::StepStore`]) on both
//! backends.

use anyhow::Result;

use super::Backend;
use crate::durable::{
    ApprovalRequest, ApprovalStatus, Decision, JournalEntry, StepKey, StepOutcome,
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
        tool: "send_note".to_owned(),
        arguments: serde_json::json!({"to": "ops"}),
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
