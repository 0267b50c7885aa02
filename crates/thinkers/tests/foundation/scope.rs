//! Scope travels from parent to child and can only narrow.

use thinkers::ErrorKind;
use thinkers::job::{ScopeGuard, doer};

use crate::support::dispatcher;

#[tokio::test]
async fn grandchild_of_read_only_ticket_bound_job_inherits_both() {
    let (d, _) = dispatcher();
    let scope = ScopeGuard::unbound()
        .with_axis("ticket", "T-42")
        .read_only();
    let h = d.submit_scoped(
        doer("root", |cx| async move {
            cx.submit(doer("child", |cx| async move {
                cx.submit(doer(
                    "grandchild",
                    |cx| async move { Ok(cx.scope().clone()) },
                ))
                .await
            }))
            .await
        }),
        scope.clone(),
    );
    let seen = h.await.unwrap();
    assert!(seen.is_read_only());
    assert_eq!(seen.axis("ticket"), Some("T-42"));
    assert_eq!(seen, scope);
}

#[tokio::test]
async fn a_descendant_cannot_widen_its_scope() {
    let (d, rec) = dispatcher();
    let scope = ScopeGuard::unbound()
        .with_axis("ticket", "T-42")
        .read_only();
    let h = d.submit_scoped(
        doer("root", |cx| async move {
            let grand = cx
                .submit(doer("child", |cx| async move {
                    // Dropping read-only is refused.
                    let writable = ScopeGuard::unbound().with_axis("ticket", "T-42");
                    let e1 = cx.fan_out().narrowed(writable).unwrap_err();
                    // Rebinding the ticket is refused.
                    let other = ScopeGuard::unbound().with_axis("ticket", "T-7").read_only();
                    let e2 = cx.fan_out().narrowed(other).unwrap_err();
                    // Narrowing (adding an axis) is allowed and inherited further down.
                    let narrower = cx.scope().clone().with_axis("tenant", "acme");
                    let inner = cx
                        .fan_out()
                        .narrowed(narrower)?
                        .submit(doer("narrow", |cx| async move {
                            cx.submit(doer("leaf", |cx| async move { Ok(cx.scope().clone()) }))
                                .await
                        }))
                        .await?;
                    Ok((e1, e2, inner))
                }))
                .await?;
            Ok(grand)
        }),
        scope,
    );
    let (e1, e2, leaf) = h.await.unwrap();
    assert_eq!(e1.kind(), ErrorKind::InvalidInput);
    assert!(e1.to_string().contains("read_only"), "{e1}");
    assert!(e2.to_string().contains("scope.ticket"), "{e2}");
    assert!(leaf.is_read_only());
    assert_eq!(leaf.axis("ticket"), Some("T-42"));
    assert_eq!(leaf.axis("tenant"), Some("acme"));
    // Nothing was submitted for the refused widenings.
    assert!(!rec.jobs().iter().any(|r| r.start.class == "w"));
}

/// A tool with side effects that counts its calls.
struct Charge(std::sync::Arc<std::sync::atomic::AtomicU32>);

impl thinkers::tool::Tool for Charge {
    const NAME: &'static str = "charge_card";
    type Input = serde_json::Value;
    type Output = bool;
    fn description(&self) -> std::borrow::Cow<'static, str> {
        "Charge a card.".into()
    }
    async fn call(
        &self,
        _input: &serde_json::Value,
        _cx: &thinkers::tool::ToolContext<'_>,
    ) -> thinkers::Result<bool> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(true)
    }
}

#[tokio::test]
async fn a_read_only_flow_cannot_start_a_writer_whoever_submits_it() {
    let (d, _) = dispatcher();
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let tool = std::sync::Arc::new(Charge(calls.clone()));
    let t = tool.clone();
    // A doer (not a thinker: no palette sweep) submits the writer straight to the dispatcher.
    let err = d
        .submit_scoped(
            doer("read-only flow", move |cx| {
                let t = t.clone();
                async move {
                    cx.submit(thinkers::tool::ToolJob::new(t, serde_json::json!({})))
                        .await
                }
            }),
            ScopeGuard::unbound().with_axis("ticket", "T-1").read_only(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let text = err.to_string();
    assert!(
        text.contains("charge_card") && text.contains("read-only"),
        "{text}"
    );
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    // Outside a read-only scope it runs.
    let t = tool.clone();
    d.submit(doer("writable flow", move |cx| {
        let t = t.clone();
        async move {
            cx.submit(thinkers::tool::ToolJob::new(t, serde_json::json!({})))
                .await
        }
    }))
    .await
    .unwrap();
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
}
