//! `DecisionThinker` over the sim: a choice among five options with an invalid id corrected,
//! confidences from OpenAI log-probabilities (and their absence on the Anthropic dialect), a
//! ranking, and the checks made at construction.

use serde_json::json;
use thinkers::Error;
use thinkers::record::JobStatus;
use thinkers::thinker::{
    Confidence, DecisionOption, DecisionThinker, ScriptedTurns, SystemPrompt, ThinkerInput,
};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule};

use crate::support::{decl, dispatcher_of_tickets, five_options, jobs_of, scripted, setup};

const IDS: [&str; 5] = ["billing", "technical", "account", "sales", "other"];

fn question() -> ThinkerInput {
    ThinkerInput::query("Which team handles: 'I was charged twice this month'?")
}

#[tokio::test]
async fn a_choice_among_five_options_corrects_an_invalid_id_without_echoing_it() {
    const INVALID: &str = "billing_dept_canary";
    let script = Script::new(vec![
        ScriptRule::when_contains(
            "charged twice",
            ScriptAnswer::Json(json!({"choice": INVALID})),
        )
        .times(1),
    ]);
    let s = scripted(script).await;
    let t = dispatcher_of_tickets("sim-small-a");
    let choice = s.rt.run(t.choose(question())).await.unwrap();
    assert!(IDS.contains(&choice.chosen.option.id.as_str()));

    let bodies = s.sim.requests();
    assert_eq!(bodies.len(), 2, "the invalid id was corrected once");
    for b in &bodies {
        assert!(b.body.get("tools").is_none());
        assert_eq!(b.body["logprobs"], true);
        assert_eq!(b.body["top_logprobs"], 10);
        let choice_schema =
            &b.body["response_format"]["json_schema"]["schema"]["properties"]["choice"];
        assert_eq!(choice_schema["enum"], json!(IDS), "{choice_schema}");
    }
    let second = bodies[1].body.to_string();
    assert!(
        !second.contains(INVALID),
        "the model's value never goes back: {second}"
    );
    assert!(second.contains("must be one of the option ids"), "{second}");
    for id in IDS {
        assert!(
            second.contains(&format!("\\\"{id}\\\"")),
            "lists {id}: {second}"
        );
    }

    // OpenAI log-probabilities: the chosen option and every other option have a probability
    // (the sim lists the enum's other values as the alternatives of the id's token).
    let p = choice.chosen.confidence.probability().expect("measured");
    assert!(p > 0.0 && p <= 1.0, "{p}");
    assert_eq!(choice.options.len(), 5);
    let ids: Vec<&str> = choice
        .options
        .iter()
        .map(|o| o.option.id.as_str())
        .collect();
    assert_eq!(ids, IDS, "every option, in the order given");
    let total: f64 = choice
        .options
        .iter()
        .map(|o| o.confidence.probability().expect("all five are listed"))
        .sum();
    assert!(total <= 1.0 + 1e-9, "{total}");
    let best = choice
        .options
        .iter()
        .max_by(|a, b| {
            let pa = a.confidence.probability().unwrap_or(0.0);
            let pb = b.confidence.probability().unwrap_or(0.0);
            pa.total_cmp(&pb)
        })
        .unwrap();
    assert_eq!(
        best.option.id, choice.chosen.option.id,
        "the chosen option is the likeliest"
    );

    let calls = jobs_of(&s, 0, "ticket_decision.call");
    assert_eq!(calls.len(), 2);
    assert_eq!(
        jobs_of(&s, 0, "ticket_decision")[0].status(),
        JobStatus::Succeeded
    );
}

#[tokio::test]
async fn on_the_anthropic_dialect_the_confidence_says_it_is_unavailable() {
    let s = setup().await;
    let t = dispatcher_of_tickets("sim-small-b");
    let choice = s.rt.run(t.choose(question())).await.unwrap();
    assert!(IDS.contains(&choice.chosen.option.id.as_str()));
    for scored in std::iter::once(&choice.chosen).chain(&choice.options) {
        match &scored.confidence {
            Confidence::Unavailable { reason } => {
                assert!(reason.contains("log-probabilities"), "{reason}");
            }
            other => panic!("expected unavailable, got {other:?}"),
        }
    }
    let body = s.sim.requests()[0].body.clone();
    assert!(body.get("tools").is_none());
    let schema = &body["output_config"]["format"]["schema"];
    assert_eq!(
        schema["properties"]["choice"]["enum"],
        json!(IDS),
        "{schema}"
    );
}

#[tokio::test]
async fn a_ranking_names_k_distinct_options_best_first_with_confidences() {
    // OpenAI strict mode cannot carry `uniqueItems`, so the sim draws the three ids at random
    // and may repeat one (a repeat is corrected, at most three times). Its draws are a function
    // of (seed, request): this seed draws distinct ids within the bound for this request.
    let s = crate::support::setup_with(|c| thinkers_sim::SimConfig { seed: 2, ..c }).await;
    let t = dispatcher_of_tickets("sim-small-a");
    let ranking = s.rt.run(t.rank(question(), 3).unwrap()).await.unwrap();
    assert_eq!(ranking.ranked.len(), 3);
    let mut ids: Vec<&str> = ranking
        .ranked
        .iter()
        .map(|r| r.option.id.as_str())
        .collect();
    assert!(ids.iter().all(|id| IDS.contains(id)));
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3, "distinct");
    for r in &ranking.ranked {
        let p = r.confidence.probability().expect("measured at its place");
        assert!(p > 0.0 && p <= 1.0);
    }
    let body = s.sim.requests()[0].body.clone();
    let schema = &body["response_format"]["json_schema"]["schema"]["properties"]["ranking"];
    assert_eq!(schema["items"]["enum"], json!(IDS), "{schema}");
    assert_eq!(schema["minItems"], 3);
    assert_eq!(schema["maxItems"], 3);
}

#[tokio::test]
async fn a_ranking_with_a_repeated_or_unknown_id_is_corrected() {
    const CANARY: &str = "CANARY-rank-d3c1";
    let turns = ScriptedTurns::new()
        .then_text(json!({"ranking": ["sales", CANARY]}).to_string())
        .then_text(json!({"ranking": ["sales", "sales"]}).to_string())
        .then_text(json!({"ranking": ["sales", "account"]}).to_string());
    let s = setup().await;
    let t = DecisionThinker::new(
        decl(),
        SystemPrompt::new("Rank the teams.").unwrap(),
        five_options(),
    )
    .unwrap()
    .turns(turns.clone());
    let ranking = s.rt.run(t.rank(question(), 2).unwrap()).await.unwrap();
    let ids: Vec<&str> = ranking
        .ranked
        .iter()
        .map(|r| r.option.id.as_str())
        .collect();
    assert_eq!(ids, ["sales", "account"]);
    // Scripted answers carry no log-probabilities.
    assert!(matches!(
        ranking.ranked[0].confidence,
        Confidence::Unavailable { .. }
    ));
    let seen = turns.seen();
    assert_eq!(seen.len(), 3);
    let second = serde_json::to_string(&seen[1].request.messages).unwrap();
    assert!(!second.contains(CANARY), "{second}");
    assert!(second.contains("must be one of the option ids"), "{second}");
    let third = serde_json::to_string(&seen[2].request.messages).unwrap();
    assert!(third.contains("at most once"), "{third}");
    assert!(seen.iter().all(|t| t.request.tools.is_empty()));
}

#[tokio::test]
async fn options_and_k_are_checked_at_construction() {
    let make = |options| DecisionThinker::new(decl(), SystemPrompt::new("Pick.").unwrap(), options);
    let mut twice = five_options();
    twice.push(DecisionOption::new("sales", "Again."));
    let err = make(twice).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidInput { value: Some(v), .. } if v == "sales"),
        "names the duplicate: {err}"
    );
    let err = make(vec![DecisionOption::new("", "Nothing.")]).unwrap_err();
    assert!(err.to_string().contains("options.id"), "{err}");
    let err = make(vec![DecisionOption::new("a\"b", "Quoted.")]).unwrap_err();
    assert!(err.to_string().contains("quotes"), "{err}");
    assert!(make(Vec::new()).is_err());

    let t = make(five_options()).unwrap();
    for k in [0, 6] {
        let err = t.rank(question(), k).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidInput { parameter, value: Some(v), .. }
                if parameter == "k" && *v == k.to_string()),
            "{err}"
        );
    }
}

#[tokio::test]
async fn log_probabilities_can_be_turned_off() {
    let s = setup().await;
    let t = dispatcher_of_tickets("sim-small-a").top_logprobs(0);
    let choice = s.rt.run(t.choose(question())).await.unwrap();
    match &choice.chosen.confidence {
        Confidence::Unavailable { reason } => assert!(reason.contains("not requested"), "{reason}"),
        other => panic!("expected unavailable, got {other:?}"),
    }
    let body = s.sim.requests()[0].body.clone();
    assert!(
        body.get("logprobs").is_none() && body.get("top_logprobs").is_none(),
        "{body}"
    );
}
