//! The exact request bodies of the loopless families, pinned with insta: no tool definitions, no
//! tool choice, no loop envelope; the answer type itself (toolless) or the option ids as an enum
//! with log-probabilities asked for (decision).

use serde_json::Value;
use thinkers::thinker::ThinkerInput;

use crate::support::{Ticket, dispatcher_of_tickets, router, setup};

/// The bodies the sim logged, checked for tool definitions anywhere in them.
fn bodies(s: &crate::support::Setup) -> Vec<Value> {
    let bodies: Vec<Value> = s.sim.requests().into_iter().map(|r| r.body).collect();
    for b in &bodies {
        let text = b.to_string();
        assert!(b.get("tools").is_none(), "{text}");
        assert!(b.get("tool_choice").is_none(), "{text}");
        assert!(!text.contains("\"function\""), "{text}");
        assert!(
            !text.contains("<tools>"),
            "no text-protocol tools either: {text}"
        );
    }
    bodies
}

#[tokio::test]
async fn toolless_request_bodies_carry_no_tool_definitions() {
    let s = setup().await;
    for entry in ["sim-small-a", "sim-small-b"] {
        s.rt.run(router(entry).ask(Ticket {
            text: "The export button does nothing.".into(),
        }))
        .await
        .unwrap();
    }
    let bodies = bodies(&s);
    assert_eq!(bodies.len(), 2);
    insta::assert_json_snapshot!("toolless_openai", bodies[0]);
    insta::assert_json_snapshot!("toolless_anthropic", bodies[1]);
}

#[tokio::test]
async fn decision_request_bodies_carry_no_tool_definitions() {
    let s = setup().await;
    let t = dispatcher_of_tickets("sim-small-a");
    s.rt.run(t.choose(ThinkerInput::query("Which team handles a refund?")))
        .await
        .unwrap();
    let t = dispatcher_of_tickets("sim-small-b");
    s.rt.run(
        t.rank(ThinkerInput::query("Which teams handle a refund?"), 2)
            .unwrap(),
    )
    .await
    .unwrap();
    let bodies = bodies(&s);
    assert_eq!(bodies.len(), 2);
    insta::assert_json_snapshot!("decision_choose_openai", bodies[0]);
    insta::assert_json_snapshot!("decision_rank_anthropic", bodies[1]);
}
