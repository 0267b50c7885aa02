//! `as_tool`: a thinker or a doer on another thinker's palette by name. Its schema is the job's
//! input type's (a thinker's without artifact refs) and a misfit argument is a correctable
//! refusal naming the field; the read-only declaration decides whether it is offered (and
//! admitted) under a read-only scope; each call runs as the calling thinker's child under its
//! sealed scope; a thinker's call is a fresh run answering its JSON, a doer's its output's.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use thinkers::Error;
use thinkers::job::{ScopeGuard, doer};
use thinkers::model::Depth;
use thinkers::thinker::{
    ArtifactRef, DoerToolExt, JobTool, ScriptedTurns, Thinker, ThinkerInput, ThinkerObserver,
};
use thinkers::tool::{ToolCallContext, ToolJob, ToolProvider};

use crate::support::{
    Empty, ScopeProbe, Seen, Summary, decl, dispatcher, offered, results, summary,
};

/// What the doer's tool takes.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
struct Topic {
    /// The topic to research.
    topic: String,
    /// How many years back to look.
    #[serde(default)]
    years: Option<u32>,
}

/// What the doer's tool answers.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
struct Found {
    topic: String,
    years: u32,
    probe: String,
}

/// A doer's tool: each call runs a doer that calls `probe` once and answers what it saw.
fn gather(probe: &ScopeProbe, runs: &Arc<AtomicUsize>) -> JobTool {
    let (probe, runs) = (probe.clone(), runs.clone());
    (move |t: Topic| {
        let (probe, runs) = (probe.clone(), runs.clone());
        doer("gather_flow", move |cx| {
            let (probe, runs, t) = (probe.clone(), runs.clone(), t.clone());
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let seen = cx.submit(ToolJob::new(Arc::new(probe), Empty {})).await?;
                Ok(Found {
                    topic: t.topic,
                    years: t.years.unwrap_or(1),
                    probe: seen,
                })
            }
        })
    })
    .as_tool("gather", "Gather what is known about a topic.")
    .unwrap()
}

/// A thinker's tool over a thinker of class `researcher` answering from `turns`, with `probe`.
fn research(turns: &ScriptedTurns, probe: &ScopeProbe) -> JobTool {
    Thinker::<Summary>::declared(decl(), "Research what you are asked.")
        .tool(probe.clone())
        .turns(turns.clone())
        .class("researcher")
        .as_tool("research", "Research a question and answer with a summary.")
        .unwrap()
}

fn refused_parameter(tool: &JobTool, arguments: &Value) -> String {
    let Err(err) = tool.instantiate(arguments, &ToolCallContext::default()) else {
        panic!("{arguments}: accepted");
    };
    assert!(err.is_correctable(), "{err}");
    match err {
        Error::InvalidInput { parameter, .. } => parameter,
        other => panic!("{arguments}: not an invalid input: {other}"),
    }
}

fn keys(schema: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

#[test]
fn a_doer_s_tool_offers_its_input_type_s_schema_and_names_a_misfit_field() {
    let tool = gather(&ScopeProbe::default(), &Arc::default());
    let want = serde_json::to_value(schemars::schema_for!(Topic)).unwrap();
    assert_eq!(tool.input_schema(), &want);
    assert_eq!(*tool.spec().parameters, want);
    assert_eq!(tool.name(), "gather");
    assert!(!tool.is_read_only() && !tool.idempotent());
    assert_eq!(refused_parameter(&tool, &json!({"topic": 7})), "topic");
    assert_eq!(
        refused_parameter(&tool, &json!({"topic": "seats", "years": "two"})),
        "years"
    );
    assert!(
        tool.instantiate(&json!({"topic": "seats"}), &ToolCallContext::default())
            .is_ok()
    );
}

#[test]
fn a_thinker_s_tool_offers_thinker_input_without_artifact_refs_and_names_a_misfit_field() {
    let tool = research(&ScriptedTurns::new(), &ScopeProbe::default());
    assert_eq!(keys(tool.input_schema()), ["depth", "query"]);
    let full = serde_json::to_value(schemars::schema_for!(ThinkerInput)).unwrap();
    assert_eq!(keys(&full), ["artifact_refs", "depth", "query"]);
    for k in ["query", "depth"] {
        assert_eq!(tool.input_schema()["properties"][k], full["properties"][k]);
    }
    assert_eq!(refused_parameter(&tool, &json!({"query": 3})), "query");
    assert_eq!(refused_parameter(&tool, &json!({"query": "  "})), "query");
    assert_eq!(
        refused_parameter(&tool, &json!({"query": "q", "depth": "deepest"})),
        "depth"
    );
    assert_eq!(
        refused_parameter(&tool, &json!({"query": "q", "artifact_refs": ["@a1"]})),
        "artifact_refs"
    );
    assert!(!tool.is_read_only() && tool.idempotent());
    assert!(ToolProvider::read_only(&tool.read_only()));
}

#[test]
fn a_name_that_is_not_snake_case_or_is_a_built_in_s_and_an_empty_description_are_refused() {
    let thinker = Thinker::<Summary>::declared(decl(), "x");
    for (name, description, field) in [
        ("Research Topic", "Research.", "tool.name"),
        ("sub_thinker", "Research.", "tool.name"),
        ("request_tools", "Research.", "tool.name"),
        ("research", " ", "tool.description"),
    ] {
        match thinker.as_tool(name, description) {
            Err(Error::InvalidInput { parameter, .. }) => assert_eq!(parameter, field, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
    }
    let doer_tool = (|t: Topic| doer("flow", move |_| std::future::ready(Ok(t.topic.clone()))))
        .as_tool("Gather!", "Gather.");
    assert!(
        matches!(&doer_tool, Err(Error::InvalidInput { parameter, .. }) if parameter == "tool.name"),
        "{doer_tool:?}"
    );
}

#[tokio::test]
async fn read_only_runs_a_declared_read_only_tool_and_withholds_and_refuses_an_undeclared_one() {
    let (d, _) = dispatcher();
    let child_turns = ScriptedTurns::new()
        .then_calls(&[("c1", "scope_probe", json!({}))])
        .then_answer(summary("looked", &[]));
    let probe = ScopeProbe::default();
    let runs = Arc::new(AtomicUsize::new(0));
    let turns = ScriptedTurns::new()
        .then_calls(&[
            ("r", "research", json!({"query": "look"})),
            ("g", "gather", json!({"topic": "seats"})),
        ])
        .then_answer(summary("done", &[]));
    let lead = Thinker::<Summary>::declared(decl(), "x")
        .provider(research(&child_turns, &probe).read_only().into())
        .provider(gather(&probe, &runs).into())
        .turns(turns.clone());
    let obs = lead.observer();
    d.submit_scoped(
        lead.ask(ThinkerInput::query("q").with_depth(Depth::Quick)),
        ScopeGuard::unbound().read_only(),
    )
    .await
    .unwrap();
    assert_eq!(offered(&turns, 0), ["research"]);
    let withheld: Vec<_> = obs.withheld().into_iter().map(|w| w.tool).collect();
    assert!(withheld.contains(&"gather".to_owned()), "{withheld:?}");
    let r = results(&obs, 2);
    assert!(!r[0].1, "research ran: {r:?}");
    assert!(r[1].1 && r[1].2.contains("read-only"), "{r:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the doer never ran");
    // The read-only research ran under the sealed read-only scope.
    assert_eq!(
        probe.seen.lock().unwrap().clone(),
        [Seen {
            read_only: true,
            ticket: None
        }]
    );
    assert_eq!(child_turns.remaining(), 0);
}

#[tokio::test]
async fn a_job_of_an_undeclared_tool_submitted_by_code_under_a_read_only_scope_is_refused() {
    let (d, _) = dispatcher();
    let runs = Arc::new(AtomicUsize::new(0));
    let tool = gather(&ScopeProbe::default(), &runs);
    let flow = doer("read_only_flow", move |cx| {
        let job = tool
            .instantiate(&json!({"topic": "seats"}), &ToolCallContext::default())
            .unwrap();
        async move { cx.submit(job).await }
    });
    let err = d
        .submit_scoped(flow, ScopeGuard::unbound().read_only())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the doer never ran");
    // Declared read-only, the same job is admitted and runs.
    let probe = ScopeProbe::default();
    let tool = gather(&probe, &runs).read_only();
    let flow = doer("read_only_flow", move |cx| {
        let job = tool
            .instantiate(&json!({"topic": "seats"}), &ToolCallContext::default())
            .unwrap();
        async move { cx.submit(job).await }
    });
    let out = d
        .submit_scoped(flow, ScopeGuard::unbound().read_only())
        .await
        .unwrap();
    assert_eq!(out.downcast::<Found>().unwrap().topic, "seats");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn each_call_runs_as_the_calling_thinker_s_child_under_its_sealed_scope() {
    let (d, rec) = dispatcher();
    let child_turns = ScriptedTurns::new()
        .then_calls(&[("c1", "scope_probe", json!({}))])
        .then_answer(summary("looked", &[]));
    let (research_probe, gather_probe) = (ScopeProbe::default(), ScopeProbe::default());
    let turns = ScriptedTurns::new()
        .then_calls(&[
            ("r", "research", json!({"query": "look"})),
            ("g", "gather", json!({"topic": "seats"})),
        ])
        .then_answer(summary("done", &[]));
    let lead = Thinker::<Summary>::declared(decl(), "x")
        .provider(research(&child_turns, &research_probe).into())
        .provider(gather(&gather_probe, &Arc::default()).into())
        .turns(turns.clone())
        .class("lead");
    d.submit_scoped(
        lead.ask(ThinkerInput::query("q").with_depth(Depth::Quick)),
        ScopeGuard::unbound().with_axis("ticket", "T-7"),
    )
    .await
    .unwrap();
    let bound = [Seen {
        read_only: false,
        ticket: Some("T-7".into()),
    }];
    assert_eq!(research_probe.seen.lock().unwrap().clone(), bound);
    assert_eq!(gather_probe.seen.lock().unwrap().clone(), bound);
    // The record: each call is a child of the lead's job; what it started, the call's.
    let jobs = rec.jobs();
    let id_of = |class: &str| {
        let found: Vec<_> = jobs.iter().filter(|j| j.start.class == class).collect();
        assert_eq!(found.len(), 1, "one {class}: {jobs:#?}");
        found[0].start.id
    };
    let lead_id = id_of("lead");
    let parent_of = |id| jobs.iter().find(|j| j.start.id == id).unwrap().start.parent;
    let (research_id, gather_id) = (id_of("research"), id_of("gather"));
    assert_eq!(parent_of(research_id), Some(lead_id));
    assert_eq!(parent_of(gather_id), Some(lead_id));
    let probes: Vec<_> = jobs
        .iter()
        .filter(|j| j.start.class == "scope_probe")
        .map(|j| j.start.parent)
        .collect();
    assert_eq!(probes.len(), 2);
    assert!(probes.contains(&Some(research_id)) && probes.contains(&Some(gather_id)));
    // The thinker's turns keep its own class.
    assert!(
        child_turns
            .seen()
            .iter()
            .all(|t| t.class == "researcher.turn")
    );
}

/// The artifact registered for call `n` (1-based) of a run: its JSON.
fn artifact_json(obs: &ThinkerObserver, n: usize) -> Value {
    let arts = obs.artifacts();
    arts.get(&ArtifactRef(format!("@a{n}")))
        .unwrap()
        .output
        .json
        .clone()
}

#[tokio::test]
async fn each_call_of_a_thinker_s_tool_is_a_fresh_run_answering_its_json() {
    let (d, _) = dispatcher();
    let child_turns = ScriptedTurns::new()
        .then_answer(summary("alpha found", &[]))
        .then_answer(summary("beta found", &[]));
    let turns = ScriptedTurns::new()
        .then_calls(&[(
            "r1",
            "research",
            json!({"query": "about alpha", "depth": "quick"}),
        )])
        .then_calls(&[(
            "r2",
            "research",
            json!({"query": "about beta", "depth": "thorough"}),
        )])
        .then_answer(summary("done", &[]));
    let lead = Thinker::<Summary>::declared(decl(), "x")
        .provider(research(&child_turns, &ScopeProbe::default()).into())
        .turns(turns.clone());
    let obs = lead.observer();
    d.run(lead.ask(ThinkerInput::query("q"))).await.unwrap();
    assert_eq!(child_turns.remaining(), 0);
    let seen = child_turns.seen();
    assert_eq!(seen.len(), 2);
    // The second call's conversation holds its own query only.
    let second = format!("{:?}", seen[1].request.messages);
    assert_eq!(seen[1].request.messages.len(), 1, "{second}");
    assert!(second.contains("about beta"), "{second}");
    assert!(!second.contains("alpha"), "the first call leaked: {second}");
    // The depth asked for, never deeper than the caller's (standard).
    assert_eq!(seen[0].depth, Depth::Quick);
    assert_eq!(seen[1].depth, Depth::Standard);
    // Each answer's JSON is the tool result; its typed value the artifact's.
    assert_eq!(artifact_json(&obs, 1), summary("alpha found", &[]));
    assert_eq!(artifact_json(&obs, 2), summary("beta found", &[]));
    let arts = obs.artifacts();
    let typed: &Summary = arts.resolve(&ArtifactRef("@a2".into())).unwrap();
    assert_eq!(typed.summary, "beta found");
}

#[tokio::test]
async fn a_call_of_a_doer_s_tool_answers_its_output_s_json() {
    let (d, _) = dispatcher();
    let runs = Arc::new(AtomicUsize::new(0));
    let turns = ScriptedTurns::new()
        .then_calls(&[("g", "gather", json!({"topic": "seats", "years": 3}))])
        .then_answer(summary("done", &[]));
    let lead = Thinker::<Summary>::declared(decl(), "x")
        .provider(gather(&ScopeProbe::default(), &runs).into())
        .turns(turns.clone());
    let obs = lead.observer();
    d.run(lead.ask(ThinkerInput::query("q"))).await.unwrap();
    let want = Found {
        topic: "seats".into(),
        years: 3,
        probe: "read_only=false ticket=None".into(),
    };
    assert_eq!(artifact_json(&obs, 1), serde_json::to_value(&want).unwrap());
    let arts = obs.artifacts();
    assert_eq!(
        arts.resolve::<Found>(&ArtifactRef("@a1".into())),
        Some(&want)
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
