//! A thinker raced across its grade: the calls of its tools' model calls land on its row.

use std::collections::HashSet;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::benchmark::{Benchmark, OneCallSubject};
use thinkers::job::JobId;
use thinkers::model::{Depth, Grade, OutputSize};
use thinkers::onecall::ModelToolProvider;
use thinkers::onecall::tools::{QuickQuestion, QuickQuestionInput};
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};

use crate::support::{assert_row_matches_records, runs_under, setup};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// A justification a reader can check.
    pub reasoning: String,
    /// The answer.
    pub answer: String,
}

fn researcher() -> Thinker<Finding> {
    Thinker::<Finding>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "Answer the question; ask a quick question when a fact is needed.",
    )
    .provider(Arc::new(ModelToolProvider::new(QuickQuestion)))
    .class("researcher")
}

#[tokio::test]
async fn a_thinkers_children_land_on_its_row() {
    let s = setup(|mut c| {
        for m in &mut c.models {
            if let Some(p) = &mut m.profile {
                p.tool_rounds = 1;
                p.parallel_tool_calls = 1;
            }
        }
        c
    })
    .await;
    let bench = Benchmark::new(
        researcher,
        // Quick: the palette is the quick question alone (no `sub_thinker`), so the round is it.
        ThinkerInput::query("What is the boiling point of water at sea level?")
            .with_depth(Depth::Quick),
        1,
    )
    .candidates(["sim-small-a", "sim-small-b"]);
    let slot = bench.report();
    s.rt.dispatcher().run(bench).await.unwrap();
    let report = slot.get().unwrap();
    assert_eq!(report.rows.len(), 3);

    for row in &report.rows {
        assert!(row.succeeded, "{row:?}");
        let runs = runs_under(&s.rec, JobId::parse(&row.job).unwrap());
        let classes: HashSet<&str> = runs.iter().map(|r| r.class.as_str()).collect();
        // The thinker's own turns and the quick question its tool round asked.
        assert!(classes.contains("researcher.turn"), "{classes:?}");
        assert!(classes.contains("quick_llm_question"), "{classes:?}");
        assert!(row.calls > row.iterations, "{row:?}");
        assert_eq!(
            row.iterations, 2,
            "one tool round, then the answer: {row:?}"
        );
        if row.model != "-" && row.role == thinkers::benchmark::RunRole::Candidate {
            // A pinned thinker pins its tools' calls too.
            assert!(runs.iter().all(|r| r.entry == row.model), "{runs:?}");
        }
        assert!(row.judge_score.is_some() || row.role == thinkers::benchmark::RunRole::Reference);
    }
    assert_row_matches_records(&report, &s.rec);
}

#[tokio::test]
async fn a_one_call_tool_can_be_raced_too() {
    let s = setup(|c| c).await;
    let bench = Benchmark::new(
        || OneCallSubject::new(Arc::new(QuickQuestion), Grade::Medium),
        QuickQuestionInput {
            question: "Name a prime number above ten.".into(),
            grade: Grade::Small,
            context: None,
        },
        1,
    );
    let slot = bench.report();
    let answer = s.rt.dispatcher().run(bench).await.unwrap();
    assert!(!answer.answer.is_empty());
    let report = slot.get().unwrap();
    // The subject's grade wins over the one the input states: the medium entries are raced.
    let models: Vec<&str> = report.candidates().map(|r| r.model.as_str()).collect();
    assert_eq!(models, ["sim-medium-a", "sim-medium-b"]);
    assert!(report.reference().unwrap().model.starts_with("sim-medium"));
    for row in report.candidates() {
        assert_eq!((row.calls, row.iterations), (1, 1), "{row:?}");
        assert!(row.judge_score.is_some(), "{row:?}");
    }
    assert_row_matches_records(&report, &s.rec);
}
