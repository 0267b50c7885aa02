//! An MCP tool end to end: a thinker over real HTTP to thinkers-sim calls a tool of the real
//! reference MCP server, and the call and its result are in the transcript and the records;
//! under a read-only scope the same tool is withheld, and a call the model makes to it anyway
//! is refused without reaching the server.

use std::time::Duration;

use serde_json::json;
use thinkers::job::ScopeGuard;
use thinkers::model::{Depth, Grade, ModelDependent, OutputSize};
use thinkers::record::JobStatus;
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers_mcp::{McpServer, McpToolset};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule, ScriptToolCall};

use crate::mcp::everything;

#[path = "../../../thinkers/tests/common/offline.rs"]
mod offline;

async fn echo_toolset() -> Option<McpToolset> {
    let (program, args) = everything()?;
    Some(
        McpToolset::connect(McpServer::stdio(program, args).named("everything"))
            .await
            .unwrap(),
    )
}

fn thinker(toolset: &McpToolset) -> Thinker<String> {
    let echo = toolset
        .providers()
        .into_iter()
        .find(|p| p.name() == "echo")
        .expect("the everything server has echo");
    let mut t = Thinker::<String>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "Repeat what the user says through the echo tool, then answer with what it returned.",
    )
    .provider(echo)
    .class("echo_thinker");
    t.pin_model("sim-small-a".to_owned());
    t
}

#[tokio::test]
async fn a_thinker_calls_an_mcp_tool_and_the_transcript_shows_it() {
    let Some(toolset) = echo_toolset().await else {
        return;
    };
    let s = offline::start(Duration::from_secs(10), |mut c| {
        for m in &mut c.models {
            if let Some(p) = &mut m.profile {
                p.tool_rounds = 1;
                p.parallel_tool_calls = 1;
            }
        }
        c
    })
    .await;
    let t = thinker(&toolset);
    let obs = t.observer();
    // Quick: below the delegation threshold, so echo is the only tool the sim can pick.
    let answer = s
        .rt
        .run(t.ask(ThinkerInput::query("Say hello through the tool.").with_depth(Depth::Quick)))
        .await
        .unwrap();
    assert!(!answer.is_empty());

    let transcript = obs.transcript();
    assert!(
        transcript.contains("[tool call echo id="),
        "the call is in the transcript:\n{transcript}"
    );
    assert!(
        transcript.contains("[tool result echo for id=") && transcript.contains("Echo: "),
        "the server's own answer is in the transcript:\n{transcript}"
    );
    // The second model request carried the server's result back.
    let requests = s.sim.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].raw_body.contains("Echo: "));
    assert_eq!(requests[0].body["tools"][0]["function"]["name"], "echo");
    // The MCP call was a recorded child job of the thinker, in the first turn's step.
    let jobs = s.rec.jobs();
    let root = jobs
        .iter()
        .find(|j| j.start.class == "echo_thinker")
        .unwrap();
    let call = jobs
        .iter()
        .find(|j| j.start.parent == Some(root.start.id) && j.start.class.contains("echo"))
        .unwrap_or_else(|| panic!("a job for the MCP call among {jobs:#?}"));
    assert_eq!(call.status(), JobStatus::Succeeded);
    assert_eq!(call.start.ordinal, Some(1));
}

#[tokio::test]
async fn under_a_read_only_scope_the_mcp_tool_is_withheld_and_a_call_to_it_refused() {
    let Some(toolset) = echo_toolset().await else {
        return;
    };
    // The model calls echo by name although it is not offered, then answers.
    let script = Script::new(vec![
        ScriptRule::when_contains(
            "through the tool",
            ScriptAnswer::ToolCalls(vec![ScriptToolCall {
                name: "echo".into(),
                arguments: json!({"message": "SHOULD-NOT-ECHO"}),
            }]),
        )
        .times(1),
        ScriptRule::when_contains("", ScriptAnswer::Text("could not echo".into())),
    ]);
    let s = offline::start(Duration::from_secs(10), move |mut c| {
        c.script = Some(script);
        c
    })
    .await;
    let t = thinker(&toolset);
    let obs = t.observer();
    let answer =
        s.rt.dispatcher()
            .submit_scoped(
                t.ask(ThinkerInput::query("Say hello through the tool.")),
                ScopeGuard::unbound().read_only(),
            )
            .await
            .unwrap();
    assert_eq!(answer, "could not echo");

    let requests = s.sim.requests();
    assert!(
        requests[0].body.get("tools").is_none()
            || requests[0].body["tools"]
                .as_array()
                .is_some_and(Vec::is_empty),
        "echo is not offered: {}",
        requests[0].body
    );
    let withheld: Vec<String> = obs.withheld().into_iter().map(|w| w.tool).collect();
    // echo (MCP tools are never read-only), in both turns; the thinker is not delegating, so
    // there is no `sub_thinker` to withhold.
    assert_eq!(withheld, ["echo", "echo"], "withheld in both turns");
    let refused = obs.refused();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].tool, "echo");
    assert!(
        refused[0].reason.contains("read-only"),
        "{}",
        refused[0].reason
    );
    let transcript = obs.transcript();
    assert!(
        !transcript.contains("Echo: SHOULD-NOT-ECHO"),
        "the server was never called:\n{transcript}"
    );
    assert!(
        !s.rec
            .jobs()
            .iter()
            .any(|j| j.start.class.contains("echo") && !j.start.class.starts_with("echo_thinker")),
        "no MCP call job ran"
    );
}
