//! Compaction: a property test over generated conversations (tool exchanges never split, the
//! objective and state untouched, the size brought under the threshold, the recent turns kept)
//! and examples for the record sink, the entry window, failures and saving the result.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use proptest::prelude::*;
use serde_json::json;
use thinkers::Error;
use thinkers::conversation::{
    CompactionRecord, Compactor, ContentBlock, Conversation, ConversationService, Message,
    Objective, RequestSizer, SUMMARY_HEADER, Stamps, summarizer_fn,
};
use thinkers::llm::Dialect;

use crate::support::{bounded_summarizer, counter, sizer, sqlite_at, stamps};

const WORDS: [&str; 12] = [
    "river",
    "\"quoted\"",
    "ledger",
    "{brace}",
    "signal",
    "north",
    "x=1,",
    "amber",
    "line\nbreak",
    "protocol",
    "café",
    "42",
];

fn words(seed: usize, n: usize) -> String {
    (0..n)
        .map(|i| WORDS[(seed * 7 + i * 3) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

/// One generated turn.
#[derive(Debug, Clone)]
enum Turn {
    User(usize),
    Assistant(usize),
    /// An assistant message with `calls` tool calls (and maybe a thinking block), then their
    /// results, in one user message or one per result.
    Tools {
        calls: usize,
        len: usize,
        thinking: bool,
        split: bool,
    },
    /// A tool call that has no result yet.
    Pending(usize),
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        3 => (1usize..25).prop_map(Turn::User),
        3 => (1usize..25).prop_map(Turn::Assistant),
        3 => (1usize..4, 1usize..25, any::<bool>(), any::<bool>()).prop_map(
            |(calls, len, thinking, split)| Turn::Tools { calls, len, thinking, split }
        ),
        1 => (1usize..10).prop_map(Turn::Pending),
    ]
}

fn build(turns: &[Turn]) -> Vec<Message> {
    let mut messages = vec![Message::user_text("Begin.")];
    let mut next_call = 0;
    for (t, turn) in turns.iter().enumerate() {
        match turn {
            Turn::User(n) => messages.push(Message::user_text(words(t, *n))),
            Turn::Assistant(n) => messages.push(Message::assistant_text(words(t, *n))),
            Turn::Tools {
                calls,
                len,
                thinking,
                split,
            } => {
                let mut blocks = Vec::new();
                if *thinking {
                    blocks.push(ContentBlock::Thinking {
                        thinking: words(t + 1, *len),
                        signature: format!("sig-{t}+/="),
                    });
                }
                let ids: Vec<String> = (0..*calls)
                    .map(|_| {
                        next_call += 1;
                        format!("call_{next_call}")
                    })
                    .collect();
                for id in &ids {
                    blocks.push(ContentBlock::tool_call(
                        id,
                        "search",
                        json!({"q": words(t, 3)}),
                    ));
                }
                messages.push(Message::assistant(blocks));
                let results: Vec<ContentBlock> = ids
                    .iter()
                    .map(|id| ContentBlock::tool_result(id, "search", words(t + 2, *len)))
                    .collect();
                if *split {
                    messages.extend(results.into_iter().map(|r| Message::tool_results(vec![r])));
                } else {
                    messages.push(Message::tool_results(results));
                }
            }
            Turn::Pending(n) => {
                next_call += 1;
                messages.push(Message::assistant(vec![ContentBlock::tool_call(
                    format!("call_{next_call}"),
                    "search",
                    json!({"q": words(t, *n)}),
                )]));
            }
        }
    }
    messages
}

/// For each call id, the message indexes of the call and of its results.
fn exchanges(messages: &[Message]) -> HashMap<String, (Vec<usize>, Vec<usize>)> {
    let mut map: HashMap<String, (Vec<usize>, Vec<usize>)> = HashMap::new();
    for (at, m) in messages.iter().enumerate() {
        for b in &m.content {
            match b {
                ContentBlock::ToolCall { id, .. } => map.entry(id.clone()).or_default().0.push(at),
                ContentBlock::ToolResult { call_id, .. } => {
                    map.entry(call_id.clone()).or_default().1.push(at);
                }
                _ => {}
            }
        }
    }
    map
}

fn conversation(messages: Vec<Message>, window: u32, trigger: f64) -> Result<Conversation, Error> {
    let mut c = Conversation::new(
        stamps()
            .with_comfort_window(window)?
            .with_compaction_trigger(trigger)?,
        true,
    );
    c.objective_mut()
        .put(Objective::TASK, "Track the ledger and answer with sources.");
    c.objective_mut().put(Objective::GUIDANCE, words(5, 20));
    c.set_state("discovered_tools", json!(["search", "fetch"]));
    c.set_state("skills", json!({"tables": "loaded"}));
    c.extend(messages);
    Ok(c)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn compaction_keeps_pairs_objective_state_and_fits(
        turns in prop::collection::vec(turn(), 1..90),
        window in 2_000u32..6_000,
        trigger in 0.6f64..=1.0,
        keep in 1usize..7,
        anthropic in any::<bool>(),
    ) {
        let counter = counter();
        let dialect = if anthropic { Dialect::Anthropic } else { Dialect::OpenAi };
        let sizer = sizer(dialect, &counter);
        let compactor = Compactor::new(bounded_summarizer(&counter)).with_keep_recent(keep);
        let original = build(&turns);
        let mut c = conversation(original.clone(), window, trigger).unwrap();
        let objective = c.objective().clone();
        let state = c.state().clone();
        let threshold = c.stamps().compaction_threshold(None);
        let before = sizer.tokens(&c.render()).unwrap();

        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let record = runtime
            .block_on(compactor.compact_if_needed(&mut c, &sizer, None))
            .unwrap();

        prop_assert_eq!(c.objective(), &objective);
        prop_assert_eq!(c.state(), &state);
        if before <= threshold {
            prop_assert!(record.is_none());
            prop_assert_eq!(c.messages(), original.as_slice());
            return Ok(());
        }
        let record = record.expect("over the threshold with earlier turns to fold");
        let folded = record.summarized_messages;
        prop_assert_eq!(record.before_tokens, before);
        prop_assert!(record.after_tokens <= threshold,
            "after {} > threshold {}", record.after_tokens, threshold);
        prop_assert_eq!(record.after_tokens, sizer.tokens(&c.render()).unwrap());
        // One summary message, then the original tail untouched, at least `keep` long.
        prop_assert!(c.messages()[0].text().starts_with(SUMMARY_HEADER));
        prop_assert_eq!(&c.messages()[1..], &original[folded..]);
        prop_assert!(original.len() - folded >= keep);
        // No exchange is split: every call and its results are all kept or all folded.
        for (id, (calls, results)) in exchanges(&original) {
            let kept = |at: &usize| *at >= folded;
            let all: Vec<bool> = calls.iter().chain(&results).map(kept).collect();
            prop_assert!(all.iter().all(|k| *k) || all.iter().all(|k| !*k),
                "exchange {} split at {}: calls {:?} results {:?}", id, folded, calls, results);
        }
        // And in the result every kept result still follows its call.
        for (id, (calls, results)) in exchanges(c.messages()) {
            if let (Some(first_result), Some(call)) = (results.iter().min(), calls.first()) {
                prop_assert!(call < first_result, "result of {} before its call", id);
            }
            prop_assert!(results.is_empty() || !calls.is_empty(), "orphan result {}", id);
        }
    }
}

/// Over the threshold on a conversation with plenty to fold.
fn long_conversation(window: u32) -> Result<Conversation> {
    let turns: Vec<Turn> = (0..60)
        .map(|i| match i % 3 {
            0 => Turn::User(20),
            1 => Turn::Tools {
                calls: 2,
                len: 20,
                thinking: true,
                split: false,
            },
            _ => Turn::Assistant(20),
        })
        .collect();
    Ok(conversation(build(&turns), window, 0.9)?)
}

#[tokio::test]
async fn the_service_compacts_records_and_saves_the_result() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (_db, store) = sqlite_at(dir.path()).await?;
    let counter = counter();
    let records: Arc<Mutex<Vec<CompactionRecord>>> = Arc::default();
    let sink = Arc::clone(&records);
    let svc = ConversationService::new(store)
        .with_summarizer(bounded_summarizer(&counter))
        .on_compaction(move |r| sink.lock().unwrap().push(r.clone()));
    let sizer = sizer(Dialect::Anthropic, &counter);

    let mut c = long_conversation(4_000)?;
    svc.save(&mut c).await?;
    let record = svc
        .compact_if_needed(&mut c, &sizer, None)
        .await?
        .expect("compacted");
    assert_eq!(
        records.lock().unwrap().as_slice(),
        std::slice::from_ref(&record)
    );
    assert_eq!(record.conversation, *c.id());
    assert!(record.after_tokens < record.before_tokens);
    assert!(record.at_ms > 0);
    // The compacted conversation saves (a rewrite) and reloads as it is.
    svc.save(&mut c).await?;
    let back = svc.resume(c.id()).await?;
    assert_eq!(back, c);
    assert!(back.messages()[0].text().starts_with(SUMMARY_HEADER));
    assert_eq!(
        back.state_value("skills"),
        Some(&json!({"tables": "loaded"}))
    );
    // Under the threshold now: nothing more to do, nothing recorded.
    assert!(svc.compact_if_needed(&mut c, &sizer, None).await?.is_none());
    assert_eq!(records.lock().unwrap().len(), 1);
    Ok(())
}

#[tokio::test]
async fn a_smaller_entry_window_triggers_compaction() -> Result<()> {
    let counter = counter();
    let sizer = sizer(Dialect::OpenAi, &counter);
    let compactor = Compactor::new(bounded_summarizer(&counter));
    let mut c = long_conversation(1_000_000)?;
    let size = sizer.tokens(&c.render())?;
    assert!(
        compactor
            .compact_if_needed(&mut c, &sizer, None)
            .await?
            .is_none()
    );
    let entry_window = u32::try_from(size)?;
    let record = compactor
        .compact_if_needed(&mut c, &sizer, Some(entry_window))
        .await?
        .expect("0.9 × the entry window is smaller than the request");
    assert!(record.after_tokens <= Stamps::compaction_threshold(c.stamps(), Some(entry_window)));
    Ok(())
}

#[tokio::test]
async fn a_failed_summary_leaves_the_conversation_as_it_was() -> Result<()> {
    let counter = counter();
    let sizer = sizer(Dialect::OpenAi, &counter);
    let failing = Compactor::new(Arc::new(summarizer_fn(|_: String, _| async {
        Err(Error::external(
            "summarization",
            "call",
            "model unavailable",
        ))
    })));
    let mut c = long_conversation(3_000)?;
    let before = c.clone();
    let err = failing
        .compact_if_needed(&mut c, &sizer, None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("model unavailable"));
    assert_eq!(c, before);
    // A service without a summariser says so when compaction is due, and only then.
    let svc = ConversationService::new(Arc::new(
        thinkers::conversation::MemoryConversationStore::new(),
    ));
    let err = svc
        .compact_if_needed(&mut c, &sizer, None)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::System { .. }), "{err:?}");
    let mut small = conversation(build(&[Turn::User(3)]), 3_000, 0.9)?;
    assert!(
        svc.compact_if_needed(&mut small, &sizer, None)
            .await?
            .is_none()
    );
    Ok(())
}

#[tokio::test]
async fn an_overlong_summary_is_asked_again_shorter() -> Result<()> {
    let counter = counter();
    let sizer = sizer(Dialect::OpenAi, &counter);
    let targets: Arc<Mutex<Vec<u32>>> = Arc::default();
    let seen = Arc::clone(&targets);
    let trim = Arc::clone(&counter);
    // The first answer ignores its target and runs three times over; the second keeps to it.
    let summarizer = Arc::new(summarizer_fn(move |text: String, target: u32| {
        let mut seen = seen.lock().unwrap();
        seen.push(target);
        let budget = if seen.len() == 1 { target * 3 } else { target };
        let long = format!("{text} {text} {text}");
        let summary = crate::support::truncate_to_tokens(&trim, &long, budget);
        async move { Ok(summary) }
    }));
    let mut c = long_conversation(3_000)?;
    let record = Compactor::new(summarizer)
        .compact_if_needed(&mut c, &sizer, None)
        .await?
        .expect("compacted");
    let targets = targets.lock().unwrap().clone();
    assert_eq!(targets.len(), 2, "{targets:?}");
    assert!(targets[1] < targets[0], "{targets:?}");
    assert!(record.after_tokens <= c.stamps().compaction_threshold(None));
    Ok(())
}

#[tokio::test]
async fn a_summary_is_never_asked_to_outgrow_what_it_replaces() -> Result<()> {
    let counter = counter();
    let sizer = sizer(Dialect::OpenAi, &counter);
    let targets: Arc<Mutex<Vec<u32>>> = Arc::default();
    let seen = Arc::clone(&targets);
    let summarizer = Arc::new(summarizer_fn(move |_text: String, target: u32| {
        seen.lock().unwrap().push(target);
        async move { Ok("short".to_owned()) }
    }));
    let compactor = Compactor::new(summarizer).with_keep_recent(2);

    // Only one short message can be folded: compacting would gain nothing, so nothing happens.
    let long = words(7, 3_000);
    let mut c = conversation(
        vec![
            Message::user_text("hi"),
            Message::user_text(long.clone()),
            Message::user_text(long.clone()),
        ],
        2_000,
        0.5,
    )?;
    let before = c.clone();
    assert!(
        compactor
            .compact_if_needed(&mut c, &sizer, None)
            .await?
            .is_none()
    );
    assert_eq!(c, before, "left as it was");
    assert!(
        targets.lock().unwrap().is_empty(),
        "no summary was asked for"
    );

    // A fold of a few hundred tokens asks for at most half of them, not an eighth of a large
    // threshold.
    let medium = words(3, 120);
    let mut c = conversation(
        vec![
            Message::user_text(medium.clone()),
            Message::user_text(long.clone()),
            Message::user_text(long),
        ],
        100_000,
        0.01,
    )?;
    let folded = sizer.tokens(&c.render())? - {
        let mut rest = c.clone();
        rest.messages_mut().remove(0);
        sizer.tokens(&rest.render())?
    };
    let record = compactor
        .compact_if_needed(&mut c, &sizer, None)
        .await?
        .expect("over 1% of 100K");
    assert_eq!(record.summarized_messages, 1);
    let asked = targets.lock().unwrap()[0];
    assert!(
        u64::from(asked) <= folded / 2 + 8,
        "asked {asked} for a fold of {folded}"
    );
    Ok(())
}
