//! Nothing a model made up is written back: a text-protocol model (sim-small-text) that calls a
//! tool name it invented reads a refusal that names neither the tool nor its arguments, in a
//! `<tool_result>` block paired by the runtime's id, and its own call comes back without them.

use thinkers::model::{Depth, Grade, ModelDependent, OutputSize};
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule, ScriptToolCall};

use crate::support::{Lookup, setup_with};

const MADE_UP: &str = "made_up_tool_x7q";
const MADE_UP_KEY: &str = "made_up_key_x7q";

#[tokio::test]
async fn a_text_protocol_model_never_reads_a_tool_name_it_made_up() {
    let script = Script::new(vec![
        ScriptRule::when_contains(
            "",
            ScriptAnswer::ToolCalls(vec![ScriptToolCall {
                name: MADE_UP.to_owned(),
                arguments: serde_json::json!({ MADE_UP_KEY: "v" }),
            }]),
        )
        .for_model("sim-small-text")
        .times(1),
    ]);
    let s = setup_with(|c| thinkers_sim::SimConfig {
        script: Some(script),
        ..c
    })
    .await;
    let mut t = Thinker::<String>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "Answer from the glossary.",
    )
    .tool(Lookup::default());
    t.pin_model("sim-small-text".to_owned());
    let obs = t.observer();
    // Quick: no sub_thinker, so the palette is the lookup alone.
    s.rt.run(t.ask(ThinkerInput::query("What is a seat?").with_depth(Depth::Quick)))
        .await
        .unwrap();
    let requests = s.sim.requests();
    assert!(requests.len() >= 2, "the call, then its refusal read");
    let first = requests[0].body.to_string();
    assert!(!first.contains(MADE_UP), "not offered: {first}");
    for r in &requests[1..] {
        let body = r.body.to_string();
        assert!(!body.contains(MADE_UP), "the name came back: {body}");
        assert!(
            !body.contains(MADE_UP_KEY),
            "the argument came back: {body}"
        );
    }
    // The refusal reached the model, paired with the call by the runtime's id, listing the
    // offered tool.
    let second = requests[1].body.to_string();
    assert!(second.contains(r#"<tool_result id=\"call_"#), "{second}");
    assert!(
        second.contains("no such tool; the tools are: lookup"),
        "{second}"
    );
    // The record keeps what the model wrote: only the wire leaves it out.
    assert_eq!(obs.refused().len(), 1);
    assert_eq!(obs.refused()[0].tool, MADE_UP);
}
