//! Every block kind, the objective, the stamps and the state survive both stores byte for byte,
//! through each kind of write (create, append, rollback, in-place edit, head change), and the
//! version contract holds.

use std::sync::Arc;

use anyhow::Result;
use serde_json::json;
use thinkers::Error;
use thinkers::conversation::{
    ContentBlock, Conversation, ConversationId, ConversationService, ConversationStore, Message,
    Objective, VersionConflict,
};
use thinkers::model::{Depth, Grade, OutputSize};

use crate::support::{SIGNATURE, both_stores, every_block, service, stamps};

fn full_conversation(svc: &ConversationService) -> Result<Conversation> {
    let mut c = svc.obtain_new(
        stamps()
            .with_comfort_window(64_000)?
            .with_compaction_trigger(0.8)?,
        true,
    );
    c.objective_mut()
        .put(Objective::TASK, "Report the weather.");
    c.objective_mut().put("house_rules", "Cite the tool.");
    c.objective_mut().put(Objective::SKILLS, "Skill: charts.");
    c.set_state("discovered_tools", json!(["get_weather", "plot"]));
    c.set_state("skills", json!({"charts": {"loaded_at": 3}}));
    c.extend(every_block());
    Ok(c)
}

/// Stored JSON of each message, to compare bytes rather than values.
fn json_bytes(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect()
}

async fn reload(store: &Arc<dyn ConversationStore>, c: &Conversation) -> Result<Conversation> {
    Ok(store
        .load(c.id())
        .await?
        .expect("the conversation is stored"))
}

#[tokio::test]
async fn every_block_kind_round_trips_through_both_stores() -> Result<()> {
    let dir = tempfile::tempdir()?;
    for (name, store) in both_stores(dir.path()).await? {
        let svc = service(Arc::clone(&store));
        let mut c = full_conversation(&svc)?;
        svc.save(&mut c).await?;
        assert_eq!(c.version(), 1, "{name}");
        let back = reload(&store, &c).await?;
        assert_eq!(back, c, "{name}");
        assert_eq!(
            json_bytes(back.messages()),
            json_bytes(c.messages()),
            "{name}"
        );
        assert_eq!(back.objective().render(), c.objective().render(), "{name}");
        assert_eq!(back.stamps().comfort_window, 64_000, "{name}");
        assert!(back.is_durable(), "{name}");
        // The thinking signature and the redacted data come back byte for byte.
        let ContentBlock::Thinking { signature, .. } = &back.messages()[1].content[0] else {
            panic!("{name}: not a thinking block");
        };
        assert_eq!(signature.as_bytes(), SIGNATURE.as_bytes(), "{name}");
        assert_eq!(
            back.messages()[1].content[1],
            every_block()[1].content[1],
            "{name}"
        );
        // The images and files too.
        assert_eq!(back.messages()[3], every_block()[3], "{name}");
        // The service resumes what the store holds.
        assert_eq!(svc.resume(c.id()).await?, c, "{name}");
    }
    Ok(())
}

#[tokio::test]
async fn each_kind_of_write_keeps_the_stored_copy_exact() -> Result<()> {
    let dir = tempfile::tempdir()?;
    for (name, store) in both_stores(dir.path()).await? {
        let svc = service(Arc::clone(&store));
        let mut c = full_conversation(&svc)?;
        svc.save(&mut c).await?;

        // Append only.
        c.push(Message::user_text("Next week?"));
        c.push(Message::assistant_text("Sunny."));
        svc.save(&mut c).await?;
        assert_eq!(c.version(), 2, "{name}");
        assert_eq!(reload(&store, &c).await?, c, "{name}");

        // Rollback then a different continuation: the stored tail is replaced.
        c.truncate(3);
        c.push(Message::assistant_text("A different answer."));
        svc.save(&mut c).await?;
        let back = reload(&store, &c).await?;
        assert_eq!(back.messages().len(), 4, "{name}");
        assert_eq!(back, c, "{name}");

        // An in-place edit rewrites every message.
        c.messages_mut()[0] = Message::user_text("Edited question");
        svc.save(&mut c).await?;
        assert_eq!(reload(&store, &c).await?, c, "{name}");

        // A head change alone (state, stamps, objective).
        c.set_state("discovered_tools", json!(["get_weather"]));
        c.set_stamps(stamps().with_compaction_trigger(0.5)?);
        c.objective_mut().put(Objective::GUIDANCE, "Be brief.");
        svc.save(&mut c).await?;
        let back = reload(&store, &c).await?;
        assert_eq!(back, c, "{name}");
        assert_eq!(back.stamps().compaction_trigger, 0.5, "{name}");
        assert_eq!(c.version(), 5, "{name}");

        // Saving with nothing changed writes nothing.
        svc.save(&mut c).await?;
        assert_eq!(c.version(), 5, "{name}");
    }
    Ok(())
}

#[tokio::test]
async fn a_stale_save_is_refused_and_loses_nothing() -> Result<()> {
    let dir = tempfile::tempdir()?;
    for (name, store) in both_stores(dir.path()).await? {
        let svc = service(Arc::clone(&store));
        let mut c = full_conversation(&svc)?;
        svc.save(&mut c).await?;
        let mut first = svc.resume(c.id()).await?;
        let mut second = svc.resume(c.id()).await?;
        first.push(Message::user_text("from first"));
        svc.save(&mut first).await?;

        // Both write paths refuse a stale version: an append and a full save.
        second.push(Message::user_text("from second"));
        let append = svc.save(&mut second).await.unwrap_err();
        second.set_state("x", json!(1));
        let full = svc.save(&mut second).await.unwrap_err();
        for err in [&append, &full] {
            let conflict = VersionConflict::find(err).expect("a version conflict");
            assert_eq!(conflict.conversation, *c.id(), "{name}");
            assert_eq!((conflict.expected, conflict.found), (1, Some(2)), "{name}");
            assert!(err.is_correctable(), "{name}");
            let text = err.to_string();
            assert!(
                text.contains(c.id().as_str()) && text.contains("version 2"),
                "{text}"
            );
        }
        assert_eq!(
            second.version(),
            1,
            "{name}: a refused save leaves the value as it was"
        );
        assert_eq!(
            reload(&store, &c).await?,
            first,
            "{name}: the winner's write is intact"
        );

        // Creating over an existing id is a conflict too.
        let clash = Conversation::restore(
            c.id().clone(),
            Objective::new(),
            stamps(),
            Default::default(),
            vec![],
            0,
            true,
        );
        let err = store.save(&clash, 0).await.unwrap_err();
        assert_eq!(
            VersionConflict::find(&err).map(|c| c.found),
            Some(Some(2)),
            "{name}"
        );
        assert_eq!(reload(&store, &c).await?, first, "{name}");
    }
    Ok(())
}

#[tokio::test]
async fn unknown_ids_are_named_and_discard_forgets() -> Result<()> {
    let dir = tempfile::tempdir()?;
    for (name, store) in both_stores(dir.path()).await? {
        let svc = service(Arc::clone(&store));
        let missing = ConversationId::parse("no-such-conversation")?;
        match svc.resume(&missing).await {
            Err(Error::InvalidInput {
                parameter, value, ..
            }) => {
                assert_eq!(parameter, "conversation_id", "{name}");
                assert_eq!(value.as_deref(), Some("no-such-conversation"), "{name}");
            }
            other => panic!("{name}: {other:?}"),
        }
        let err = store
            .append(&missing, 1, &[Message::user_text("x")])
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidInput { parameter, .. } if parameter == "conversation_id"),
            "{name}: {err:?}"
        );

        let mut c = full_conversation(&svc)?;
        svc.save(&mut c).await?;
        assert!(svc.discard(c.id()).await?, "{name}");
        assert!(svc.resume(c.id()).await.is_err(), "{name}");
        assert!(!svc.discard(c.id()).await?, "{name}");
    }
    Ok(())
}

#[tokio::test]
async fn temporary_conversations_stay_in_memory() -> Result<()> {
    let dir = tempfile::tempdir()?;
    for (name, store) in both_stores(dir.path()).await? {
        let svc = service(Arc::clone(&store));
        let mut c = svc.obtain_new(
            thinkers::conversation::Stamps::new(Grade::Small, Depth::Quick, OutputSize::Verdict),
            false,
        );
        c.objective_mut().put(Objective::TASK, "Classify.");
        c.push(Message::user_text("spam?"));
        svc.save(&mut c).await?;
        c.push(Message::assistant_text("no"));
        svc.save(&mut c).await?;
        assert!(
            store.load(c.id()).await?.is_none(),
            "{name}: never reaches the store"
        );
        let back = svc.resume(c.id()).await?;
        assert_eq!(back, c, "{name}");
        assert_eq!(back.stamps().grade, Grade::Small, "{name}");
        assert!(!back.is_durable(), "{name}");
        assert!(svc.discard(c.id()).await?, "{name}");
        assert!(svc.resume(c.id()).await.is_err(), "{name}");
    }
    Ok(())
}

#[tokio::test]
async fn the_transcript_shows_every_message_in_order() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (_, store) = crate::support::sqlite_at(dir.path()).await?;
    let svc = service(store);
    let mut c = full_conversation(&svc)?;
    svc.save(&mut c).await?;
    let t = svc.transcript(&svc.resume(c.id()).await?);
    let order = [
        "=== objective ===\nReport the weather.\n\nSkill: charts.\n\nCite the tool.",
        "Quelle est la météo",
        "[thinking]\nThe user wants weather",
        "[redacted thinking,",
        "[tool call get_weather id=toolu_01A] {",
        "[tool call broken_json id=call_2]",
        "[tool result get_weather for id=toolu_01A]\n11°C, light rain",
        "[tool error broken_json for id=call_2]\narguments did not parse",
        "[image image/png,",
        "[image image/jpeg, at https://example.invalid/c.jpg]",
        "[file report.pdf application/pdf,",
        "[file unnamed text/plain, at https://example.invalid/a.txt]",
        "=== assistant ===\nThe chart shows rain all week.",
    ];
    let mut at = 0;
    for piece in order {
        let found = t[at..]
            .find(piece)
            .unwrap_or_else(|| panic!("{piece:?} in\n{t}"));
        at += found + piece.len();
    }
    assert!(!t.contains(crate::support::PNG_1X1), "media bytes stay out");
    Ok(())
}
