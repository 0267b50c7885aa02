//! Scope across delegation: a ticket-bound parent's delegates (and their children) carry the
//! ticket; under a read-only scope `request_tools` and `sub_thinker` are withheld and refused
//! while `request_skill` stays and works; a delegate started in a read-only ticket-bound flow
//! is read-only and ticket-bound itself, and so are its children.

use std::sync::atomic::Ordering;

use serde_json::json;
use thinkers::job::{ScopeGuard, doer};
use thinkers::model::Depth;
use thinkers::thinker::{
    REQUEST_SKILL, REQUEST_TOOLS, SUB_THINKER, ScriptedTurns, Thinker, ThinkerInput,
};
use thinkers::tool::ToolCallContext;

use crate::support::{
    Delete, ScopeProbe, Seen, Summary, decl, dispatcher, hub, offered, results, sub_answer, summary,
};

fn ticket() -> ScopeGuard {
    ScopeGuard::unbound().with_axis("ticket", "T-7")
}

#[tokio::test]
async fn a_ticket_bound_parent_s_delegates_and_their_children_carry_the_ticket() {
    let (d, _) = dispatcher();
    let probe = ScopeProbe::default();
    let turns = ScriptedTurns::new()
        .then_calls(&[
            ("p1", "scope_probe", json!({})),
            ("p2", SUB_THINKER, json!({"objective": "level two"})),
        ])
        .then_calls(&[
            ("s1", "scope_probe", json!({})),
            ("s2", SUB_THINKER, json!({"objective": "level three"})),
        ])
        .then_calls(&[("t1", "scope_probe", json!({}))])
        .then_answer(sub_answer("three", &[]))
        .then_answer(sub_answer("two", &[]))
        .then_answer(summary("one", &[]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .tool(probe.clone())
        .hub(hub())
        .delegating()
        .turns(turns.clone());
    d.submit_scoped(
        t.ask(ThinkerInput::query("q").with_depth(Depth::Thorough)),
        ticket(),
    )
    .await
    .unwrap();
    assert_eq!(turns.remaining(), 0);
    let seen = probe.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "one probe per level");
    for s in seen {
        assert_eq!(
            s,
            Seen {
                read_only: false,
                ticket: Some("T-7".into())
            }
        );
    }
}

#[tokio::test]
async fn read_only_withholds_and_refuses_request_tools_and_sub_thinker_but_keeps_request_skill() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new()
        .then_calls(&[
            ("a", REQUEST_TOOLS, json!({"tool_names": ["lookup"]})),
            ("b", SUB_THINKER, json!({"objective": "escape"})),
            ("c", REQUEST_SKILL, json!({"skill_names": ["house_style"]})),
        ])
        .then_answer(summary("done", &[]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .hub(hub())
        .delegating()
        .turns(turns.clone());
    let obs = t.observer();
    d.submit_scoped(
        t.ask(ThinkerInput::query("q").with_depth(Depth::Thorough)),
        ticket().read_only(),
    )
    .await
    .unwrap();
    assert_eq!(offered(&turns, 0), [REQUEST_SKILL]);
    let withheld: Vec<_> = obs.withheld().into_iter().map(|w| w.tool).collect();
    assert!(withheld.contains(&REQUEST_TOOLS.to_owned()), "{withheld:?}");
    assert!(withheld.contains(&SUB_THINKER.to_owned()), "{withheld:?}");
    let r = results(&obs, 2);
    assert!(r[0].1 && r[0].2.contains("read-only"), "{r:?}");
    assert!(r[1].1 && r[1].2.contains("read-only"), "{r:?}");
    assert!(!r[2].1, "request_skill ran: {r:?}");
    assert!(
        turns.seen()[1].request.system.contains("HOUSE-STYLE-TEXT"),
        "the skill was attached under read-only"
    );
    // No delegate ever ran.
    assert!(turns.seen().iter().all(|t| t.class != "sub_thinker.turn"));
}

#[tokio::test]
async fn a_delegate_started_in_a_read_only_ticket_flow_is_bound_and_so_are_its_children() {
    let (d, _) = dispatcher();
    let probe = ScopeProbe::default();
    let delete = Delete::default();
    let turns = ScriptedTurns::new()
        .then_calls(&[
            ("s1", "scope_probe", json!({})),
            ("s2", "delete_record", json!({"id": "9"})),
            ("s3", SUB_THINKER, json!({"objective": "deeper"})),
        ])
        .then_answer(sub_answer("bound", &[]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .tool(probe.clone())
        .tool(delete.clone())
        .hub(hub())
        .turns(turns.clone());
    let door = t.sub_thinker(Depth::Thorough);
    let flow = doer("read_only_flow", move |cx| {
        let job = door
            .instantiate(
                &json!({"objective": "inspect"}),
                &ToolCallContext::default(),
            )
            .unwrap();
        async move { cx.submit(job).await }
    });
    d.submit_scoped(flow, ticket().read_only()).await.unwrap();
    let mut names = offered(&turns, 0);
    names.sort();
    assert_eq!(names, [REQUEST_SKILL, "scope_probe"]);
    assert_eq!(
        probe.seen.lock().unwrap().clone(),
        [Seen {
            read_only: true,
            ticket: Some("T-7".into())
        }]
    );
    assert_eq!(delete.calls.load(Ordering::SeqCst), 0);
    let second = format!("{:?}", turns.seen()[1].request.messages);
    assert_eq!(
        second.matches("current scope is read-only").count(),
        2,
        "{second}"
    );
}
