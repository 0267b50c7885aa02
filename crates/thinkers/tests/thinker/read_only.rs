//! The read-only binding at runtime: the sweep withholds (and logs) every tool that is not
//! read-only, the admission check refuses such a call whatever the palette said, a wrapping
//! provider must forward the flag, and children inherit the scope.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use thinkers::conversation::ContentBlock;
use thinkers::job::ScopeGuard;
use thinkers::model::{Grade, OutputSize};
use thinkers::thinker::{ScriptedTurns, Thinker, ThinkerDeclaration, ThinkerHooks, ThinkerInput};
use thinkers::tool::{Tool, ToolContext, ToolRegistry, TypedToolProvider};

use crate::support::{Delete, LogCapture, Lookup, Wrapper, delete_provider, dispatcher};

fn decl() -> ThinkerDeclaration {
    ThinkerDeclaration::new(Grade::Small, OutputSize::Compact)
}

fn offered(turns: &ScriptedTurns, i: usize) -> Vec<String> {
    turns.seen()[i]
        .request
        .tools
        .iter()
        .map(|t| t.name.to_string())
        .collect()
}

fn results(obs: &thinkers::thinker::ThinkerObserver, at: usize) -> Vec<(String, bool, String)> {
    obs.messages()[at]
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                call_id,
                is_error,
                content,
                ..
            } => Some((call_id.clone(), *is_error, content.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn every_bypass_attempt_is_withheld_refused_and_logged() {
    let logs = LogCapture::default();
    let _guard = tracing::subscriber::set_default(logs.clone());
    let (d, _) = dispatcher();
    let deletes = Arc::new(AtomicUsize::new(0));
    let honest = Wrapper {
        inner: Arc::new(TypedToolProvider::new(Lookup::default())),
        lying: false,
    };
    let turns = ScriptedTurns::new()
        .then_calls(&[
            ("c1", "delete_record", json!({"id": "42"})),
            ("c2", "lookup", json!({"term": "seat"})),
        ])
        .then_answer(json!("done"));
    // The thinker declares the side-effecting tool itself.
    let thinker = Thinker::<String>::declared(decl(), "Tidy up.")
        .provider(delete_provider(deletes.clone()))
        .provider(Arc::new(honest))
        .delegating()
        .turns(turns.clone());
    let obs = thinker.observer();
    let scope = ScopeGuard::unbound().read_only();
    let answer = d
        .submit_scoped(thinker.ask(ThinkerInput::query("q")), scope)
        .await
        .unwrap();
    assert_eq!(answer, "done");
    assert_eq!(
        offered(&turns, 0),
        ["lookup"],
        "the declared delete tool was withheld"
    );
    assert_eq!(offered(&turns, 1), ["lookup"]);
    // The declared delete tool and the built-in sub_thinker (not read-only) at every turn.
    let withheld: Vec<(u32, String)> = obs
        .withheld()
        .into_iter()
        .map(|w| (w.turn, w.tool))
        .collect();
    assert_eq!(
        withheld,
        [
            (1, "delete_record".to_owned()),
            (1, "sub_thinker".to_owned()),
            (2, "delete_record".to_owned()),
            (2, "sub_thinker".to_owned()),
        ],
        "withheld at every turn"
    );
    // Called by name anyway: refused on its own id, never run.
    let r = results(&obs, 2);
    assert_eq!(r[0].0, "c1");
    assert!(r[0].1);
    assert!(r[0].2.contains("read-only"), "{}", r[0].2);
    assert!(!r[1].1, "the read-only lookup ran");
    assert_eq!(deletes.load(Ordering::SeqCst), 0);
    let logged = logs.text();
    assert!(
        logged.contains("withheld a tool") && logged.contains("delete_record"),
        "{logged}"
    );
    assert!(logged.contains("refused a non-read-only tool"), "{logged}");
}

#[tokio::test]
async fn a_wrapper_must_forward_the_flag() {
    let (d, _) = dispatcher();
    let deletes = Arc::new(AtomicUsize::new(0));
    // A correct wrapper forwards `read_only = false`: withheld and refused.
    let forwarding = Wrapper {
        inner: delete_provider(deletes.clone()),
        lying: false,
    };
    let turns = ScriptedTurns::new()
        .then_calls(&[("c1", "delete_record", json!({"id": "1"}))])
        .then_answer(json!("ok"));
    let thinker = Thinker::<String>::declared(decl(), "x")
        .provider(Arc::new(forwarding))
        .turns(turns.clone());
    let obs = thinker.observer();
    d.submit_scoped(
        thinker.ask(ThinkerInput::query("q")),
        ScopeGuard::unbound().read_only(),
    )
    .await
    .unwrap();
    assert!(offered(&turns, 0).is_empty());
    assert!(results(&obs, 2)[0].1, "refused");
    assert_eq!(deletes.load(Ordering::SeqCst), 0);

    // A wrapper that does not forward makes the palette and admission read a flag the wrapped
    // tool never declared: exactly the drift the forwarding rule exists to prevent.
    let lying = Wrapper {
        inner: delete_provider(deletes.clone()),
        lying: true,
    };
    let turns = ScriptedTurns::new().then_answer(json!("ok"));
    let thinker = Thinker::<String>::declared(decl(), "x")
        .provider(Arc::new(lying))
        .turns(turns.clone());
    d.submit_scoped(
        thinker.ask(ThinkerInput::query("q")),
        ScopeGuard::unbound().read_only(),
    )
    .await
    .unwrap();
    assert_eq!(offered(&turns, 0), ["delete_record"]);
}

/// Reports whether the scope it runs in is read-only.
struct ScopeProbe;

#[derive(Debug, Deserialize, JsonSchema)]
struct Empty {}

impl Tool for ScopeProbe {
    const NAME: &'static str = "scope_probe";
    type Input = Empty;
    type Output = bool;
    fn description(&self) -> Cow<'static, str> {
        "Report the scope.".into()
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn call(&self, _: &Empty, cx: &ToolContext<'_>) -> thinkers::Result<bool> {
        Ok(cx.job.scope().is_read_only())
    }
}

/// A read-only tool whose body runs a thinker that declares a side-effecting tool.
struct Delegate {
    inner: Thinker<String>,
}

impl Tool for Delegate {
    const NAME: &'static str = "delegate";
    type Input = Empty;
    type Output = String;
    fn description(&self) -> Cow<'static, str> {
        "Delegate.".into()
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn call(&self, _: &Empty, cx: &ToolContext<'_>) -> thinkers::Result<String> {
        cx.job
            .submit(self.inner.ask(ThinkerInput::query("sub")))
            .await
    }
}

/// A reconcile hook that keeps re-adding the side-effecting tool every turn.
struct Readd(Arc<AtomicUsize>);
impl ThinkerHooks for Readd {
    fn reconcile_tools(&self, registry: &mut ToolRegistry, _: thinkers::model::Depth) {
        registry.register(Arc::new(TypedToolProvider::new(Delete {
            calls: self.0.clone(),
        })));
    }
}

#[tokio::test]
async fn children_inherit_the_scope_and_hooks_cannot_undo_the_sweep() {
    let (d, _) = dispatcher();
    let deletes = Arc::new(AtomicUsize::new(0));
    let sub_turns = ScriptedTurns::new()
        .then_calls(&[("s1", "delete_record", json!({"id": "9"}))])
        .then_answer(json!("sub done"));
    let sub = Thinker::<String>::declared(decl(), "sub")
        .hooks(Readd(deletes.clone()))
        .delegating()
        .turns(sub_turns.clone());
    let sub_obs = sub.observer();
    let turns = ScriptedTurns::new()
        .then_calls(&[
            ("p", "scope_probe", json!({})),
            ("d", "delegate", json!({})),
        ])
        .then_answer(json!("top done"));
    let top = Thinker::<String>::declared(decl(), "top")
        .tool(ScopeProbe)
        .tool(Delegate { inner: sub })
        .turns(turns);
    let obs = top.observer();
    d.submit_scoped(
        top.ask(ThinkerInput::query("q")),
        ScopeGuard::unbound().read_only(),
    )
    .await
    .unwrap();
    let r = results(&obs, 2);
    assert!(
        r[0].2.contains("true"),
        "the tool ran read-only: {}",
        r[0].2
    );
    assert!(r[1].2.contains("sub done"));
    // The sub-thinker ran in the inherited read-only scope: its re-added tool (and its own
    // sub_thinker) was withheld at both turns and the call refused.
    assert!(offered(&sub_turns, 0).is_empty());
    let withheld: Vec<String> = sub_obs.withheld().into_iter().map(|w| w.tool).collect();
    assert_eq!(
        withheld,
        [
            "delete_record",
            "sub_thinker",
            "delete_record",
            "sub_thinker"
        ]
    );
    assert_eq!(sub_obs.refused().len(), 1);
    assert_eq!(deletes.load(Ordering::SeqCst), 0);
}

/// A refusal lists the tools the model may call in its scope, never one the sweep withheld: a
/// made-up name and a withheld tool called anyway are both answered with the read-only palette
/// only, and neither refusal repeats the name the model wrote.
#[tokio::test]
async fn refusals_list_only_the_tools_the_palette_offered() {
    let (d, _) = dispatcher();
    let deletes = Arc::new(AtomicUsize::new(0));
    let turns = ScriptedTurns::new()
        .then_calls(&[
            ("c1", "delete_record", json!({"id": "42"})),
            ("c2", "made_up_tool_r0", json!({})),
        ])
        .then_answer(json!("done"));
    // Standard depth: `sub_thinker` (not read-only) is in the registry and withheld too.
    let thinker = Thinker::<String>::declared(decl(), "Tidy up.")
        .provider(delete_provider(deletes.clone()))
        .tool(Lookup::default())
        .turns(turns.clone());
    let obs = thinker.observer();
    d.submit_scoped(
        thinker.ask(ThinkerInput::query("q")),
        ScopeGuard::unbound().read_only(),
    )
    .await
    .unwrap();
    assert_eq!(offered(&turns, 0), ["lookup"]);
    let r = results(&obs, 2);
    assert_eq!(r.len(), 2);
    for (id, is_error, text) in &r {
        assert!(is_error, "{id} refused");
        assert!(
            text.contains("lookup"),
            "{id} lists the offered tool: {text}"
        );
        for withheld in ["delete_record", "sub_thinker", "made_up_tool_r0"] {
            assert!(!text.contains(withheld), "{id} names {withheld}: {text}");
        }
    }
    assert!(r[0].2.contains("read-only"), "{}", r[0].2);
    assert!(r[1].2.contains("no such tool"), "{}", r[1].2);
    // The model's next turn reads exactly these refusals.
    let sent: String = turns.seen()[1]
        .request
        .messages
        .iter()
        .map(|m| format!("{m:?}"))
        .collect();
    assert!(!sent.contains("sub_thinker"), "{sent}");
    assert_eq!(deletes.load(Ordering::SeqCst), 0);
}
