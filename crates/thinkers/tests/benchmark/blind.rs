//! The judge is blind to the names a run says itself: model families, makers and assistants
//! ("as Claude", "I am GPT-4o"), and the names the user adds.

use thinkers::benchmark::{Benchmark, HIDDEN};

use crate::support::{Served, setup};

/// Runs pinned to sim-small-a end their answer with this.
const SELF_NAMING: &str = "(As Claude I checked; I am GPT-4o, made by OpenAI; Gemini 1.5 Pro \
agrees, and so does Nova Pro.)";

/// The judge prompts the sim received, lower-cased, without the field that addresses the
/// judge's own model.
fn judge_bodies(s: &crate::offline::Setup) -> Vec<String> {
    s.sim
        .requests()
        .into_iter()
        .filter(|r| r.raw_body.contains("reference_attempt"))
        .map(|r| {
            let mut body = r.body;
            body.as_object_mut().unwrap().remove("model");
            body.to_string().to_ascii_lowercase()
        })
        .collect()
}

#[tokio::test]
async fn names_a_run_writes_itself_never_reach_the_judge() {
    let s = setup(|c| c).await;
    let bench = Benchmark::new(
        || Served::marking("sim-small-a", SELF_NAMING),
        "Which model are you?".to_owned(),
        1,
    )
    .hide_names(["Nova"]);
    let slot = bench.report();
    s.rt.dispatcher().run(bench).await.unwrap();
    let report = slot.get().unwrap();
    assert!(report.rows.iter().all(|r| r.succeeded), "{report:#?}");

    let bodies = judge_bodies(&s);
    assert_eq!(bodies.len(), 3);
    // The run pinned to sim-small-a said it; its judge read the rest of its answer.
    let marked: Vec<&String> = bodies
        .iter()
        .filter(|b| b.contains("i checked; i am"))
        .collect();
    assert_eq!(marked.len(), 1, "{bodies:#?}");
    for body in &bodies {
        for name in ["claude", "gpt", "openai", "gemini", "nova"] {
            assert!(!body.contains(name), "{name} reached the judge: {body}");
        }
    }
    assert!(
        marked[0].contains(&format!("as {} i checked", HIDDEN.to_ascii_lowercase())),
        "{}",
        marked[0]
    );
}

#[tokio::test]
async fn a_name_the_user_did_not_add_is_not_hidden() {
    let s = setup(|c| c).await;
    let bench = Benchmark::new(
        || Served::marking("sim-small-a", SELF_NAMING),
        "Which model are you?".to_owned(),
        1,
    );
    s.rt.dispatcher().run(bench).await.unwrap();
    let bodies = judge_bodies(&s);
    let marked: Vec<&String> = bodies.iter().filter(|b| b.contains("nova")).collect();
    assert_eq!(
        marked.len(),
        1,
        "only the built-in names are hidden: {bodies:#?}"
    );
    assert!(!marked[0].contains("claude"), "{}", marked[0]);
}
