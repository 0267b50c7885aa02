//! Skills: loading a folder of markdown files with front matter (errors naming the file and the
//! field), `request_skill` attaching a skill whose text then rides the system content of every
//! later call (and not before), and skill admission rules.

use std::sync::Arc;

use serde_json::json;
use thinkers::hub::{Grant, Skill, ToolHub};
use thinkers::thinker::{REQUEST_SKILL, ScriptedTurns, Thinker, ThinkerInput};

use crate::support::{Summary, decl, dispatcher, hub, offered, results, summary};

#[test]
fn a_skills_folder_loads_and_a_malformed_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("b_tables.md"),
        "---\nname: tables\ndescription: 'How to lay out tables.'\n---\nUse pipes.\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("a_tone.md"),
        "---\nname: tone\ndescription: Tone of voice.\n---\nBe plain.\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a skill").unwrap();
    let hub = ToolHub::new();
    assert_eq!(hub.load_skills(dir.path()).unwrap(), 2);
    let tables = hub.skill("tables").unwrap();
    assert_eq!(tables.description(), "How to lay out tables.");
    assert_eq!(tables.text(), "Use pipes.");
    assert_eq!(
        Skill::load_dir(dir.path())
            .unwrap()
            .iter()
            .map(|s| s.name().to_owned())
            .collect::<Vec<_>>(),
        ["tone", "tables"]
    );

    std::fs::write(
        dir.path().join("c_broken.md"),
        "---\nname: broken\n---\nNo description.\n",
    )
    .unwrap();
    let err = ToolHub::new()
        .load_skills(dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("c_broken.md"), "{err}");
    assert!(err.contains("description"), "{err}");
    let err = ToolHub::new()
        .load_skills(dir.path().join("missing"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("skills.dir") && err.contains("missing"),
        "{err}"
    );
}

#[tokio::test]
async fn a_skill_rides_every_later_call_and_is_absent_before() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new()
        .then_calls(&[("a", "lookup_nothing_yet", json!({}))])
        .then_calls(&[("b", REQUEST_SKILL, json!({"skill_names": ["house_style"]}))])
        .then_calls(&[("c", REQUEST_SKILL, json!({"skill_names": ["citations"]}))])
        .then_answer(summary("ok", &[]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .hub(hub())
        .turns(turns.clone());
    let obs = t.observer();
    d.run(t.ask(ThinkerInput::query("q"))).await.unwrap();
    let systems: Vec<String> = turns
        .seen()
        .iter()
        .map(|t| t.request.system.clone())
        .collect();
    assert!(!systems[0].contains("HOUSE-STYLE-TEXT"));
    assert!(!systems[1].contains("HOUSE-STYLE-TEXT"));
    assert!(systems[2].contains("HOUSE-STYLE-TEXT"), "{}", systems[2]);
    assert!(systems[3].contains("HOUSE-STYLE-TEXT"));
    assert!(!systems[2].contains("CITATIONS-TEXT"));
    assert!(systems[3].contains("CITATIONS-TEXT"));
    // The task leads; the skills follow it.
    assert!(systems[3].starts_with('x'), "{}", systems[3]);
    // An attached skill leaves the catalog; with both attached the door is withdrawn.
    let skills_at = |i: usize| {
        turns.seen()[i]
            .request
            .tools
            .iter()
            .find(|t| t.name == REQUEST_SKILL)
            .map(|t| t.parameters["properties"]["skill_names"]["items"]["oneOf"].clone())
    };
    assert_eq!(
        skills_at(2),
        Some(json!([{"const": "citations", "description": "How to cite sources."}]))
    );
    assert!(!offered(&turns, 3).contains(&REQUEST_SKILL.to_owned()));
    assert!(
        results(&obs, 4)[0]
            .2
            .contains(r#""granted":["house_style"]"#)
    );
    let conv = obs.conversation().unwrap();
    let state = conv.state_value(thinkers::thinker::STATE_SKILLS).unwrap();
    assert_eq!(state.as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn skill_admission_rules_refuse_with_a_reason() {
    let (d, _) = dispatcher();
    let hub = hub();
    hub.skill_admission(|skill, scope| {
        if skill.name() == "citations" && scope.axis("ticket").is_none() {
            Grant::refuse("citations are for ticketed work")
        } else {
            Grant::Admit
        }
    });
    let turns = ScriptedTurns::new()
        .then_calls(&[(
            "a",
            REQUEST_SKILL,
            json!({"skill_names": ["citations", "house_style"]}),
        )])
        .then_answer(summary("ok", &[]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .hub(Arc::clone(&hub))
        .turns(turns.clone());
    let obs = t.observer();
    d.run(t.ask(ThinkerInput::query("q"))).await.unwrap();
    let out = &results(&obs, 2)[0].2;
    assert!(out.contains("citations are for ticketed work"), "{out}");
    let system = &turns.seen()[1].request.system;
    assert!(system.contains("HOUSE-STYLE-TEXT"));
    assert!(!system.contains("CITATIONS-TEXT"));
}
