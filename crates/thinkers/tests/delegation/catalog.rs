//! `request_tools` and the hub: the door's schema (snapshot), the catalog reconciled every turn
//! (compatible ∩ hub − palette), never in the system content; an unknown name refused without
//! echoing it; admission rules applied in the caller's scope; granted tools joining the palette
//! from the next turn, kept in the conversation's state and swept under a read-only scope.

use std::sync::atomic::Ordering;

use serde_json::json;
use thinkers::hub::{ToolHub, rules};
use thinkers::job::ScopeGuard;
use thinkers::thinker::{REQUEST_SKILL, REQUEST_TOOLS, ScriptedTurns, Thinker, ThinkerInput};

use crate::support::{Delete, Lookup, Summary, decl, dispatcher, hub, offered, results, summary};

fn door_schema(turns: &ScriptedTurns, i: usize, door: &str) -> Option<serde_json::Value> {
    turns.seen()[i]
        .request
        .tools
        .iter()
        .find(|t| t.name == door)
        .map(|t| (*t.parameters).clone())
}

#[tokio::test]
async fn the_request_tools_schema_enumerates_the_catalog_as_one_of_const_entries() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new().then_answer(summary("ok", &[]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .hub(hub())
        .turns(turns.clone());
    d.run(t.ask(ThinkerInput::query("q"))).await.unwrap();
    insta::assert_json_snapshot!(
        "request_tools_schema",
        door_schema(&turns, 0, REQUEST_TOOLS).unwrap()
    );
    insta::assert_json_snapshot!(
        "request_skill_schema",
        door_schema(&turns, 0, REQUEST_SKILL).unwrap()
    );
    let system = &turns.seen()[0].request.system;
    for text in ["delete_record", "Delete a record.", "house_style"] {
        assert!(
            !system.contains(text),
            "the catalog stays out of the system content"
        );
    }
}

#[tokio::test]
async fn the_catalog_is_reconciled_each_turn_and_granted_tools_join_the_next_turn() {
    let (d, _) = dispatcher();
    let hub = hub();
    let turns = ScriptedTurns::new()
        .then_calls(&[("a", REQUEST_TOOLS, json!({"tool_names": ["lookup"]}))])
        .then_calls(&[("b", "lookup", json!({"term": "seat"}))])
        .then_answer(summary("ok", &["@a2"]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .hub(hub.clone())
        .compatible_tools(["lookup", "not_in_the_hub"])
        .compatible_skills(["citations"])
        .turns(turns.clone());
    let obs = t.observer();
    d.run(t.ask(ThinkerInput::query("q"))).await.unwrap();
    let catalog = door_schema(&turns, 0, REQUEST_TOOLS).unwrap()["properties"]["tool_names"]
        ["items"]["oneOf"]
        .clone();
    assert_eq!(
        catalog,
        json!([{"const": "lookup", "description": "Look a term up in the glossary."}])
    );
    let skills = door_schema(&turns, 0, REQUEST_SKILL).unwrap()["properties"]["skill_names"]
        ["items"]["oneOf"]
        .clone();
    assert_eq!(
        skills,
        json!([{"const": "citations", "description": "How to cite sources."}])
    );
    assert!(!offered(&turns, 0).contains(&"lookup".to_owned()));
    // Granted: in the palette from the next turn; its catalog is empty, so the door is gone.
    let second = offered(&turns, 1);
    assert!(second.contains(&"lookup".to_owned()), "{second:?}");
    assert!(!second.contains(&REQUEST_TOOLS.to_owned()), "{second:?}");
    assert!(!results(&obs, 4)[0].1, "the granted tool ran");
    let granted = obs
        .conversation()
        .unwrap()
        .state_value(thinkers::thinker::STATE_GRANTED_TOOLS)
        .cloned();
    assert_eq!(granted, Some(json!(["lookup"])));
}

#[tokio::test]
async fn an_unknown_name_is_refused_naming_the_field_and_never_echoed() {
    const CANARY: &str = "canary_tool_7f3a";
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new()
        .then_calls(&[
            ("a", REQUEST_TOOLS, json!({"tool_names": [CANARY]})),
            ("b", REQUEST_TOOLS, json!({"tool_names": "lookup"})),
            ("c", REQUEST_SKILL, json!({"skill_names": [CANARY]})),
        ])
        .then_answer(summary("ok", &[]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .hub(hub())
        .turns(turns.clone());
    let obs = t.observer();
    d.run(t.ask(ThinkerInput::query("q"))).await.unwrap();
    let r = results(&obs, 2);
    for (i, field) in [(0, "tool_names"), (1, "tool_names"), (2, "skill_names")] {
        assert!(r[i].1, "{r:?}");
        assert!(r[i].2.contains(field), "{}", r[i].2);
        assert!(!r[i].2.contains(CANARY), "{}", r[i].2);
    }
    assert!(r[0].2.contains("delete_record, lookup"), "{}", r[0].2);
    assert!(r[2].2.contains("citations, house_style"), "{}", r[2].2);
    assert_eq!(obs.refused().len(), 3);
}

#[tokio::test]
async fn admission_rules_apply_in_the_caller_s_scope() {
    for (scope, delete_granted) in [
        (ScopeGuard::unbound(), false),
        (ScopeGuard::unbound().with_axis("ticket", "T-1"), true),
    ] {
        let (d, _) = dispatcher();
        let hub = ToolHub::new();
        let delete = Delete::default();
        hub.register_tool(Lookup::default()).unwrap();
        hub.register_tool(delete.clone()).unwrap();
        hub.tool_admission(rules::side_effects_need_axis("ticket"));
        let turns = ScriptedTurns::new()
            .then_calls(&[(
                "a",
                REQUEST_TOOLS,
                json!({"tool_names": ["delete_record", "lookup"]}),
            )])
            .then_calls(&[("b", "delete_record", json!({"id": "1"}))])
            .then_answer(summary("ok", &[]));
        let t = Thinker::<Summary>::declared(decl(), "x")
            .hub(std::sync::Arc::new(hub))
            .turns(turns.clone());
        let obs = t.observer();
        d.submit_scoped(t.ask(ThinkerInput::query("q")), scope.clone())
            .await
            .unwrap();
        let outcome = &results(&obs, 2)[0].2;
        assert!(outcome.contains(r#""granted":["#), "{outcome}");
        let second = offered(&turns, 1);
        assert!(second.contains(&"lookup".to_owned()));
        assert_eq!(
            second.contains(&"delete_record".to_owned()),
            delete_granted,
            "{scope:?}: {second:?}"
        );
        if delete_granted {
            assert_eq!(delete.calls.load(Ordering::SeqCst), 1);
        } else {
            assert!(
                outcome.contains("`delete_record` has side effects"),
                "{outcome}"
            );
            assert!(outcome.contains("ticket"), "{outcome}");
            assert_eq!(delete.calls.load(Ordering::SeqCst), 0);
            // The call to the refused tool names no tool of the palette.
            assert!(results(&obs, 4)[0].1);
        }
    }
}

#[tokio::test]
async fn granted_tools_live_in_the_conversation_and_the_sweep_applies_to_them() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new()
        .then_calls(&[("a", REQUEST_TOOLS, json!({"tool_names": ["delete_record"]}))])
        .then_answer(summary("first run", &[]))
        .then_answer(summary("second run", &[]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .hub(hub())
        .turns(turns.clone());
    let obs = t.observer();
    d.run(t.ask(ThinkerInput::query("q1"))).await.unwrap();
    assert!(offered(&turns, 1).contains(&"delete_record".to_owned()));
    // A later run of the same conversation in a read-only scope: the granted tool comes back
    // from the conversation's state and is withheld by the sweep.
    d.submit_scoped(
        t.follow_up(ThinkerInput::query("q2")),
        ScopeGuard::unbound().read_only(),
    )
    .await
    .unwrap();
    assert!(!offered(&turns, 2).contains(&"delete_record".to_owned()));
    assert!(
        obs.withheld()
            .iter()
            .any(|w| w.tool == "delete_record" && w.turn == 1)
    );
}

/// A tool that wires a new tool into the hub while the thinker runs.
struct Wire(std::sync::Arc<ToolHub>);

impl thinkers::tool::Tool for Wire {
    const NAME: &'static str = "wire_delete";
    type Input = crate::support::Empty;
    type Output = String;
    fn description(&self) -> std::borrow::Cow<'static, str> {
        "Install the delete tool in the hub.".into()
    }
    async fn call(
        &self,
        _: &crate::support::Empty,
        _: &thinkers::tool::ToolContext<'_>,
    ) -> thinkers::Result<String> {
        self.0.register_tool(Delete::default())?;
        Ok("installed".into())
    }
}

#[tokio::test]
async fn a_tool_registered_in_the_hub_mid_run_is_offered_from_the_next_turn() {
    let (d, _) = dispatcher();
    let hub = std::sync::Arc::new(ToolHub::new());
    hub.register_tool(Lookup::default()).unwrap();
    let turns = ScriptedTurns::new()
        .then_calls(&[("a", "wire_delete", json!({}))])
        .then_answer(summary("ok", &[]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .tool(Wire(hub.clone()))
        .hub(hub.clone())
        .turns(turns.clone());
    d.run(t.ask(ThinkerInput::query("q"))).await.unwrap();
    let names = |i: usize| {
        door_schema(&turns, i, REQUEST_TOOLS).unwrap()["properties"]["tool_names"]["items"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["const"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(0), ["lookup"]);
    assert_eq!(names(1), ["delete_record", "lookup"]);
}

#[tokio::test]
async fn discoveries_survive_a_save_and_a_resume_by_another_thinker_object() {
    use thinkers::conversation::{ConversationService, MemoryConversationStore};
    let (d, _) = dispatcher();
    let service = ConversationService::new(std::sync::Arc::new(MemoryConversationStore::new()));
    let turns = ScriptedTurns::new()
        .then_calls(&[
            ("a", REQUEST_TOOLS, json!({"tool_names": ["lookup"]})),
            ("b", REQUEST_SKILL, json!({"skill_names": ["house_style"]})),
        ])
        .then_answer(summary("first", &[]))
        .then_answer(summary("second", &[]));
    let first = Thinker::<Summary>::declared(decl(), "x")
        .hub(hub())
        .conversations(service.clone())
        .durable()
        .turns(turns.clone());
    d.run(first.ask(ThinkerInput::query("q1"))).await.unwrap();
    let id = first.observer().conversation_id().unwrap();
    let second = Thinker::<Summary>::declared(decl(), "x")
        .hub(hub())
        .conversations(service)
        .turns(turns.clone());
    d.run(second.resume(id, ThinkerInput::query("q2")))
        .await
        .unwrap();
    let resumed = &turns.seen()[2];
    let names: Vec<&str> = resumed
        .request
        .tools
        .iter()
        .map(|t| t.name.as_ref())
        .collect();
    assert!(names.contains(&"lookup"), "{names:?}");
    assert!(resumed.request.system.contains("HOUSE-STYLE-TEXT"));
    let skills = door_schema(&turns, 2, REQUEST_SKILL).unwrap();
    assert_eq!(
        skills["properties"]["skill_names"]["items"]["oneOf"],
        json!([{"const": "citations", "description": "How to cite sources."}])
    );
}

/// Hooks that narrow the tool catalog and veto delegation.
struct Narrow;
impl thinkers::thinker::ThinkerHooks for Narrow {
    fn reconcile_tool_catalog(
        &self,
        catalog: &mut Vec<thinkers::hub::CatalogEntry>,
        _: thinkers::model::Depth,
    ) {
        catalog.retain(|e| e.name != "delete_record");
    }
    fn reconcile_delegation(
        &self,
        registry: &mut thinkers::tool::ToolRegistry,
        _: thinkers::model::Depth,
        sub_thinker: std::sync::Arc<dyn thinkers::tool::ToolProvider>,
    ) {
        registry.unregister(sub_thinker.name());
    }
}

#[tokio::test]
async fn catalog_and_delegation_hooks_override_the_defaults() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new().then_answer(summary("ok", &[]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .hub(hub())
        .hooks(Narrow)
        .turns(turns.clone());
    d.run(t.ask(ThinkerInput::query("q").with_depth(thinkers::model::Depth::Thorough)))
        .await
        .unwrap();
    let mut names = offered(&turns, 0);
    names.sort();
    assert_eq!(names, [REQUEST_SKILL, REQUEST_TOOLS]);
    assert_eq!(
        door_schema(&turns, 0, REQUEST_TOOLS).unwrap()["properties"]["tool_names"]["items"]["oneOf"],
        json!([{"const": "lookup", "description": "Look a term up in the glossary."}])
    );
}
