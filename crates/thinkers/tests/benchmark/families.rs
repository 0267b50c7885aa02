//! Every model-dependent family races: a toolless thinker, a decision thinker (a choice and a
//! ranking) and a chat turn, each across the models of its grade against thinkers-sim.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::ErrorKind;
use thinkers::benchmark::{Benchmark, BenchmarkReport, RankingSubject, RunRole};
use thinkers::job::JobId;
use thinkers::model::{Depth, Grade, OutputSize};
use thinkers::thinker::{
    Choice, DecisionOption, DecisionThinker, ReactiveThinker, SystemPrompt, ThinkerDeclaration,
    ThinkerInput, ToollessThinker,
};

use crate::support::{assert_row_matches_records, runs_under, setup};

const SMALL: [&str; 3] = ["sim-small-a", "sim-small-b", "sim-small-text"];

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Ticket {
    /// The ticket's text.
    pub text: String,
}

/// The team a ticket goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Team {
    /// Invoices and refunds.
    Billing,
    /// Bugs.
    Technical,
}

/// Where a ticket goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Routing {
    /// The team that should handle the ticket.
    pub team: Team,
}

fn router() -> ToollessThinker<Ticket, Routing> {
    ToollessThinker::new(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Verdict),
        SystemPrompt::new("Route the support ticket to the team that should handle it.").unwrap(),
    )
    .class("ticket_router")
}

fn decider() -> DecisionThinker {
    DecisionThinker::new(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Verdict),
        SystemPrompt::new("Pick the team that should handle the request.").unwrap(),
        vec![
            DecisionOption::new("billing", "Invoices, refunds and payments."),
            DecisionOption::new("technical", "Bugs and outages."),
            DecisionOption::new("sales", "New contracts."),
        ],
    )
    .unwrap()
    .class("team_decision")
}

/// One race of the small grade: a reference and one judged run per small entry, every run's
/// model calls made by `class` on the entry it was pinned to, the numbers from the records.
fn assert_raced(report: &BenchmarkReport, s: &crate::offline::Setup, class: &str) {
    assert_eq!(report.grade, Grade::Small);
    assert_eq!(report.rows.len(), 1 + SMALL.len(), "{report:#?}");
    assert_eq!(report.reference_failure, None);
    assert_eq!(report.judge_failure, None);
    let models: Vec<&str> = report.candidates().map(|r| r.model.as_str()).collect();
    assert_eq!(models, SMALL);
    for row in &report.rows {
        assert!(row.succeeded, "{row:?}");
        assert!(row.calls >= 1 && row.iterations >= 1, "{row:?}");
        let runs = runs_under(&s.rec, JobId::parse(&row.job).unwrap());
        assert!(!runs.is_empty(), "{row:?}");
        assert!(runs.iter().all(|r| r.class == class), "{runs:?}");
        match row.role {
            RunRole::Reference => assert_eq!(row.judge_score, None),
            RunRole::Candidate => {
                assert!(runs.iter().all(|r| r.entry == row.model), "{runs:?}");
                assert!(row.judge_score.is_some(), "{row:?}");
            }
        }
    }
    assert_row_matches_records(report, &s.rec);
}

#[tokio::test]
async fn a_toolless_thinker_is_raced_across_its_grade() {
    let s = setup(|c| c).await;
    let bench = Benchmark::new(
        router,
        Ticket {
            text: "I was charged twice for one invoice.".into(),
        },
        1,
    )
    .scorer(|reference: &Routing, candidate: &Routing| {
        f64::from(u8::from(reference.team == candidate.team))
    });
    let slot = bench.report();
    let answer = s.rt.dispatcher().run(bench).await.unwrap();
    let report = slot.get().unwrap();
    assert_raced(&report, &s, "ticket_router.call");
    for row in report.candidates() {
        assert!(row.scorer_score.is_some(), "{row:?}");
    }
    // The benchmark returns the reference's answer.
    assert!(matches!(answer.team, Team::Billing | Team::Technical));
    // The judge read what the runs asked and answered.
    let judged: Vec<String> = s
        .sim
        .requests()
        .into_iter()
        .filter(|r| r.raw_body.contains("reference_attempt"))
        .map(|r| r.raw_body)
        .collect();
    assert_eq!(judged.len(), SMALL.len());
    assert!(judged.iter().all(|b| b.contains("charged twice")));
}

#[tokio::test]
async fn a_decision_thinker_is_raced_across_its_grade_choosing_and_ranking() {
    let s = setup(|c| c).await;
    let ids = ["billing", "technical", "sales"];
    let bench = Benchmark::new(
        decider,
        ThinkerInput::query("A customer asks for a refund of last month's invoice."),
        1,
    )
    .scorer(|reference: &Choice, candidate: &Choice| {
        f64::from(u8::from(
            reference.chosen.option.id == candidate.chosen.option.id,
        ))
    });
    let slot = bench.report();
    let choice = s.rt.dispatcher().run(bench).await.unwrap();
    assert!(
        ids.contains(&choice.chosen.option.id.as_str()),
        "{choice:?}"
    );
    assert_eq!(choice.options.len(), ids.len());
    assert_raced(&slot.get().unwrap(), &s, "team_decision.call");

    let s = setup(|c| c).await;
    let bench = Benchmark::new(
        || RankingSubject::new(decider(), 2),
        ThinkerInput::query("Which teams should see a refund request?"),
        1,
    );
    let slot = bench.report();
    let ranking = s.rt.dispatcher().run(bench).await.unwrap();
    assert_eq!(ranking.ranked.len(), 2);
    assert_ne!(ranking.ranked[0].option.id, ranking.ranked[1].option.id);
    assert_raced(&slot.get().unwrap(), &s, "team_decision.call");

    // A ranking the thinker refuses fails every run, the reference first.
    let s = setup(|c| c).await;
    let bench = Benchmark::new(
        || RankingSubject::new(decider(), 4),
        ThinkerInput::query("Rank the teams."),
        1,
    );
    let slot = bench.report();
    let err = s.rt.dispatcher().run(bench).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("between 1 and 3"), "{err}");
    let report = slot.get().unwrap();
    assert!(report.rows.iter().all(|r| !r.succeeded), "{report:#?}");
    assert_eq!(s.sim.stats().totals.requests, 0, "nothing reached the wire");
}

#[tokio::test]
async fn a_chat_turn_is_raced_across_its_grade() {
    let s = setup(|c| c).await;
    let bench = Benchmark::new(
        || {
            ReactiveThinker::new(
                ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
                "You answer questions about the office in one sentence.",
            )
            // Below standard no `sub_thinker` is offered, so the turn is the chat's own call.
            .depth(Depth::Quick)
            .class("office_chat")
        },
        "When does the office open?".to_owned(),
        1,
    );
    let slot = bench.report();
    let answer = s.rt.dispatcher().run(bench).await.unwrap();
    assert!(!answer.is_empty());
    let report = slot.get().unwrap();
    assert_raced(&report, &s, "office_chat.turn");
    for row in report.candidates() {
        assert_eq!(
            row.iterations, 1,
            "one model turn answers the message: {row:?}"
        );
    }
}
