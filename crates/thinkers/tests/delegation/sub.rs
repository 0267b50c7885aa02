//! `sub_thinker`: the delegation threshold at every depth for a thinker and for a sub-thinker,
//! what the delegate inherits (palette instances, catalogs, grade, depth), artifacts conveyed
//! only by listed refs, and the delegate's artifacts flowing back under the parent's refs.

use std::sync::Arc;

use serde_json::json;
use thinkers::ErrorKind;
use thinkers::job::doer;
use thinkers::model::{Depth, Grade, OutputSize};
use thinkers::thinker::{
    SUB_THINKER, ScriptedTurns, SubThinkerOutput, Thinker, ThinkerDeclaration, ThinkerHooks,
    ThinkerInput,
};
use thinkers::tool::{ToolCallContext, ToolRegistry, TypedToolProvider};

use crate::support::{
    Definition, Lookup, ScopeProbe, Summary, decl, dispatcher, hub, offered, offered_by, results,
    sub_answer, summary,
};

#[tokio::test]
async fn a_thinker_not_built_delegating_is_never_offered_sub_thinker() {
    let (d, _) = dispatcher();
    for depth in Depth::ALL {
        for with_hub in [false, true] {
            let turns = ScriptedTurns::new().then_answer(summary("ok", &[]));
            let mut t = Thinker::<Summary>::declared(decl(), "x")
                .tool(Lookup::default())
                .turns(turns.clone());
            if with_hub {
                t = t.hub(hub());
            }
            d.run(t.ask(ThinkerInput::query("q").with_depth(depth)))
                .await
                .unwrap();
            let names = offered(&turns, 0);
            assert!(names.contains(&"lookup".to_owned()), "{depth:?}: {names:?}");
            assert!(
                !names.contains(&SUB_THINKER.to_owned()),
                "{depth:?}, hub {with_hub}: {names:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_delegating_thinker_delegates_at_standard_and_above_only() {
    let (d, _) = dispatcher();
    for depth in Depth::ALL {
        let turns = ScriptedTurns::new().then_answer(summary("ok", &[]));
        let t = Thinker::<Summary>::declared(decl(), "x")
            .hub(hub())
            .delegating()
            .turns(turns.clone());
        d.run(t.ask(ThinkerInput::query("q").with_depth(depth)))
            .await
            .unwrap();
        let names = offered(&turns, 0);
        assert_eq!(
            names.contains(&SUB_THINKER.to_owned()),
            depth >= Depth::Standard,
            "{depth:?}: {names:?}"
        );
    }
}

#[tokio::test]
async fn without_a_hub_a_delegating_thinker_offers_sub_thinker_from_standard_and_no_doors() {
    let (d, _) = dispatcher();
    for depth in Depth::ALL {
        let turns = ScriptedTurns::new().then_answer(summary("ok", &[]));
        let t = Thinker::<Summary>::declared(decl(), "x")
            .tool(Lookup::default())
            .delegating()
            .turns(turns.clone());
        d.run(t.ask(ThinkerInput::query("q").with_depth(depth)))
            .await
            .unwrap();
        let want: &[&str] = if depth >= Depth::Standard {
            &["lookup", SUB_THINKER]
        } else {
            &["lookup"]
        };
        assert_eq!(offered(&turns, 0), want, "{depth:?}");
    }
}

#[tokio::test]
async fn without_a_hub_or_tools_a_delegating_thinker_at_standard_still_offers_sub_thinker() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new().then_answer(summary("ok", &[]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .delegating()
        .turns(turns.clone());
    d.run(t.ask(ThinkerInput::query("q"))).await.unwrap();
    assert_eq!(offered(&turns, 0), [SUB_THINKER]);
    let turns = ScriptedTurns::new().then_answer(summary("ok", &[]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .delegating()
        .turns(turns.clone());
    d.run(t.ask(ThinkerInput::query("q").with_depth(Depth::Quick)))
        .await
        .unwrap();
    assert!(offered(&turns, 0).is_empty(), "{:?}", offered(&turns, 0));
}

#[tokio::test]
async fn without_a_hub_a_sub_thinker_inherits_the_palette_and_delegates_only_at_thorough() {
    let (d, _) = dispatcher();
    for depth in Depth::ALL {
        let turns = ScriptedTurns::new().then_answer(sub_answer("ok", &[]));
        let t = Thinker::<Summary>::declared(decl(), "x")
            .tool(Lookup::default())
            .turns(turns.clone());
        let door = t.sub_thinker(depth);
        let out = d
            .run(doer("launcher", move |cx| {
                let job = door
                    .instantiate(&json!({"objective": "look"}), &ToolCallContext::default())
                    .unwrap();
                async move { cx.submit(job).await }
            }))
            .await
            .unwrap();
        assert_eq!(out.downcast::<SubThinkerOutput>().unwrap().summary, "ok");
        let seen = &turns.seen()[0];
        assert_eq!(seen.class, "sub_thinker.turn");
        assert_eq!(seen.depth, depth);
        let want: &[&str] = if depth == Depth::Thorough {
            &["lookup", SUB_THINKER]
        } else {
            &["lookup"]
        };
        assert_eq!(offered(&turns, 0), want, "{depth:?}");
    }
}

#[tokio::test]
async fn without_a_hub_a_delegate_called_by_the_model_runs_with_the_parents_tools() {
    let (d, rec) = dispatcher();
    let lookup = Lookup::default();
    let turns = ScriptedTurns::new()
        .then_calls(&[("p1", SUB_THINKER, json!({"objective": "define seat"}))])
        .then_calls(&[("s1", "lookup", json!({"term": "seat"}))])
        .then_answer(sub_answer("seat defined", &["@a1"]))
        .then_answer(summary("a seat is what @a1 says", &["@a1"]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .tool(lookup.clone())
        .delegating()
        .turns(turns.clone())
        .class("top");
    let obs = t.observer();
    let answer = d.run(t.ask(ThinkerInput::query("q"))).await.unwrap();
    assert_eq!(turns.remaining(), 0);
    assert_eq!(lookup.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    // The delegate was offered the parent's tool and nothing else at standard depth.
    assert_eq!(offered_by(&turns, "sub_thinker.turn")[0], ["lookup"]);
    // Its artifact came back to the parent, which cites it.
    let arts = obs.artifacts();
    let seat: &Definition = arts.resolve(&answer.artifacts[0]).unwrap();
    assert_eq!(seat.term, "seat");
    let jobs = rec.jobs();
    let top = jobs.iter().find(|j| j.start.class == "top").unwrap();
    let sub = jobs.iter().find(|j| j.start.class == SUB_THINKER).unwrap();
    assert_eq!(sub.start.parent, Some(top.start.id));
}

#[tokio::test]
async fn a_sub_thinker_delegates_further_only_at_thorough() {
    let (d, _) = dispatcher();
    for depth in Depth::ALL {
        let turns = ScriptedTurns::new().then_answer(sub_answer("ok", &[]));
        let t = Thinker::<Summary>::declared(decl(), "x")
            .hub(hub())
            .turns(turns.clone());
        let door = t.sub_thinker(depth);
        let out = d
            .run(doer("launcher", move |cx| {
                let job = door
                    .instantiate(&json!({"objective": "look"}), &ToolCallContext::default())
                    .unwrap();
                async move { cx.submit(job).await }
            }))
            .await
            .unwrap();
        assert_eq!(out.downcast::<SubThinkerOutput>().unwrap().summary, "ok");
        let seen = &turns.seen()[0];
        assert_eq!(seen.class, "sub_thinker.turn");
        assert_eq!(seen.depth, depth);
        assert_eq!(
            offered(&turns, 0).contains(&SUB_THINKER.to_owned()),
            depth == Depth::Thorough,
            "{depth:?}: {:?}",
            offered(&turns, 0)
        );
    }
}

#[tokio::test]
async fn delegation_nests_three_levels_at_thorough_with_depth_clamped() {
    let (d, rec) = dispatcher();
    let turns = ScriptedTurns::new()
        .then_calls(&[("p1", SUB_THINKER, json!({"objective": "level two"}))])
        .then_calls(&[("s1", SUB_THINKER, json!({"objective": "level three"}))])
        .then_answer(sub_answer("three done", &[]))
        .then_answer(sub_answer("two done", &[]))
        .then_answer(summary("all done", &[]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .hub(hub())
        .delegating()
        .turns(turns.clone())
        .class("top");
    let answer = d
        .run(t.ask(ThinkerInput::query("q").with_depth(Depth::Thorough)))
        .await
        .unwrap();
    assert_eq!(answer.summary, "all done");
    assert_eq!(turns.remaining(), 0);
    let depths: Vec<_> = turns
        .seen()
        .iter()
        .map(|t| (t.class.clone(), t.depth))
        .collect();
    assert!(
        depths.iter().all(|(_, d)| *d == Depth::Thorough),
        "{depths:?}"
    );
    // top → sub_thinker → sub_thinker, each a child of the one above.
    let jobs = rec.jobs();
    let top = jobs.iter().find(|j| j.start.class == "top").unwrap();
    let subs: Vec<_> = jobs
        .iter()
        .filter(|j| j.start.class == SUB_THINKER)
        .collect();
    assert_eq!(subs.len(), 2);
    let first = subs
        .iter()
        .find(|j| j.start.parent == Some(top.start.id))
        .unwrap();
    assert!(subs.iter().any(|j| j.start.parent == Some(first.start.id)));
}

/// A reconcile hook wiring a tool in at every turn (a dynamically wired tool).
struct WireProbe(ScopeProbe);
impl ThinkerHooks for WireProbe {
    fn reconcile_tools(&self, registry: &mut ToolRegistry, _: Depth) {
        registry.register(Arc::new(TypedToolProvider::new(self.0.clone())));
    }
}

#[tokio::test]
async fn the_delegate_inherits_instances_catalogs_and_grade_but_not_the_output_size() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new()
        .then_calls(&[("p1", "request_tools", json!({"tool_names": ["lookup"]}))])
        .then_calls(&[("p2", SUB_THINKER, json!({"objective": "use your tools"}))])
        .then_calls(&[("s1", "scope_probe", json!({}))])
        .then_answer(sub_answer("probed", &[]))
        .then_answer(summary("done", &[]));
    let probe = ScopeProbe::default();
    let t = Thinker::<Summary>::declared(
        ThinkerDeclaration::new(Grade::Medium, OutputSize::Verdict),
        "x",
    )
    .hub(hub())
    .hooks(WireProbe(probe.clone()))
    .delegating()
    .turns(turns.clone());
    d.run(t.ask(ThinkerInput::query("q"))).await.unwrap();
    // The probe instance wired by the parent's hook ran inside the delegate.
    assert_eq!(probe.seen.lock().unwrap().len(), 1);
    let parent_second = turns.seen()[1].clone();
    let sub_first = turns.seen()[2].clone();
    assert_eq!(sub_first.class, "sub_thinker.turn");
    assert_eq!(sub_first.grade, Grade::Medium);
    assert_eq!(sub_first.output, OutputSize::Standard);
    let mut sub_tools = offered_by(&turns, "sub_thinker.turn")[0].clone();
    sub_tools.sort();
    // Granted lookup and the wired probe, the rebuilt doors, no sub_thinker at standard depth.
    assert_eq!(
        sub_tools,
        ["lookup", "request_skill", "request_tools", "scope_probe"]
    );
    // The delegate's doors offer exactly what the parent's offered at launch.
    for door in ["request_tools", "request_skill"] {
        let schema_of = |req: &thinkers::thinker::TurnRequest| {
            req.request
                .tools
                .iter()
                .find(|t| t.name == door)
                .unwrap()
                .parameters
                .clone()
        };
        assert_eq!(schema_of(&parent_second), schema_of(&sub_first), "{door}");
    }
    let catalog = parent_second
        .request
        .tools
        .iter()
        .find(|t| t.name == "request_tools")
        .unwrap()
        .parameters["properties"]["tool_names"]["items"]["oneOf"]
        .clone();
    assert_eq!(
        catalog,
        json!([{"const": "delete_record", "description": "Delete a record."}])
    );
}

#[tokio::test]
async fn only_listed_refs_are_conveyed_and_new_artifacts_come_back_with_parent_refs() {
    let (d, _) = dispatcher();
    let lookup = Lookup::default();
    let turns = ScriptedTurns::new()
        .then_calls(&[
            ("p1", "lookup", json!({"term": "alpha"})),
            ("p2", "lookup", json!({"term": "beta"})),
        ])
        // An unknown ref is refused before anything runs.
        .then_calls(&[(
            "p3",
            SUB_THINKER,
            json!({"objective": "x", "artifact_refs": ["@a9"]}),
        )])
        // The objective names @a1 too, but only @a2 is listed.
        .then_calls(&[(
            "p4",
            SUB_THINKER,
            json!({"objective": "Compare @a1 with @a2.", "artifact_refs": ["@a2"]}),
        )])
        // The delegate cites @a1: it was not handed over, so the answer is corrected.
        .then_answer(sub_answer("compared", &["@a1"]))
        .then_calls(&[("s1", "lookup", json!({"term": "gamma"}))])
        .then_answer(sub_answer("compared", &["@a2", "@a3"]))
        .then_answer(summary("final", &["@a2", "@a3"]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .tool(lookup.clone())
        .hub(hub())
        .delegating()
        .turns(turns.clone());
    let obs = t.observer();
    let answer = d.run(t.ask(ThinkerInput::query("q"))).await.unwrap();
    assert_eq!(turns.remaining(), 0);

    let refused = results(&obs, 4);
    assert!(refused[0].1, "{refused:?}");
    assert!(refused[0].2.contains("artifact_refs"), "{}", refused[0].2);
    assert!(refused[0].2.contains("@a1, @a2"), "{}", refused[0].2);

    // The delegate's first request carries @a2's summary and nothing of @a1.
    let sub_first = &turns.seen()[3];
    assert_eq!(sub_first.class, "sub_thinker.turn");
    let first_user = format!("{:?}", sub_first.request.messages[0]);
    assert!(first_user.contains("the meaning of beta"), "{first_user}");
    assert!(!first_user.contains("the meaning of alpha"), "{first_user}");
    // Its citation of @a1 was refused as naming no artifact it holds.
    let correction = format!("{:?}", turns.seen()[4].request.messages);
    assert!(correction.contains("answer.artifacts"), "{correction}");

    // The delegate's own artifact comes back under a new parent ref, the handed one under its own.
    let out = results(&obs, 6);
    let out: serde_json::Value =
        serde_json::from_str(out[0].2.split_once("] ").unwrap().1).unwrap();
    assert_eq!(out["artifacts"], json!(["@a2", "@a3"]));
    let summaries = out["artifact_summaries"].to_string();
    assert!(summaries.contains("[artifact @a3]"), "{summaries}");
    assert!(summaries.contains("the meaning of gamma"), "{summaries}");
    let arts = obs.artifacts();
    let gamma: &Definition = arts.resolve(&answer.artifacts[1]).unwrap();
    assert_eq!(gamma.term, "gamma");
    let beta: &Definition = arts.resolve(&answer.artifacts[0]).unwrap();
    assert_eq!(beta.term, "beta");
    assert_eq!(lookup.calls.load(std::sync::atomic::Ordering::SeqCst), 3);
    let typed = arts
        .iter()
        .find(|a| a.tool == SUB_THINKER)
        .unwrap()
        .downcast::<SubThinkerOutput>()
        .unwrap()
        .clone();
    assert_eq!(typed.summary, "compared");
    let _ = ErrorKind::InvalidInput;
}

#[tokio::test]
async fn the_parents_model_may_lower_a_delegates_depth_never_raise_it() {
    let (d, _) = dispatcher();
    // (what the model asks for, the depth the delegate works at) under a standard parent.
    let cases = [
        (Some("quick"), Depth::Quick),
        (Some("immediate"), Depth::Immediate),
        (Some("thorough"), Depth::Standard),
        (None, Depth::Standard),
    ];
    for (asked, want) in cases {
        let mut args = json!({"objective": "define seat"});
        if let Some(depth) = asked {
            args["depth"] = json!(depth);
        }
        let turns = ScriptedTurns::new()
            .then_calls(&[("p1", SUB_THINKER, args)])
            .then_answer(sub_answer("seat defined", &[]))
            .then_answer(summary("done", &[]));
        let t = Thinker::<Summary>::declared(decl(), "x")
            .delegating()
            .turns(turns.clone());
        d.run(t.ask(ThinkerInput::query("q"))).await.unwrap();
        let seen = turns.seen();
        assert_eq!(seen[0].depth, Depth::Standard);
        let sub = seen.iter().find(|t| t.class == "sub_thinker.turn").unwrap();
        assert_eq!(sub.depth, want, "asked {asked:?}");
        // The parent's model, offered `sub_thinker`, reads its own depth (the most it may give);
        // the delegate, with no tool and below thorough, has nothing to act on it with.
        assert!(seen[0].request.system.contains(Depth::Standard.hint()));
        assert!(
            !Depth::ALL
                .iter()
                .any(|d| sub.request.system.contains(d.hint())),
            "asked {asked:?}: {}",
            sub.request.system
        );

        // The field tells the model it may lower the depth and never raise it.
        let spec = seen[0]
            .request
            .tools
            .iter()
            .find(|t| t.name == SUB_THINKER)
            .unwrap();
        let field = &spec.parameters["properties"]["depth"];
        let description = field["description"].as_str().unwrap();
        assert!(description.contains("never raise"), "{description}");
        assert!(description.contains("lower"), "{description}");
        assert!(
            spec.parameters["required"]
                .as_array()
                .is_none_or(|r| !r.contains(&json!("depth"))),
            "{}",
            spec.parameters
        );
    }
}
