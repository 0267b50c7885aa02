//! The JSON API, its refusals, the event stream's order, and a restart on the same database.

use serde_json::{Value, json};

use crate::support::{PARIS, Sse, create_chat, events_until_answer, history, host, post_text, sim};

#[tokio::test]
async fn the_event_stream_carries_a_turn_in_order_with_ids_counting_up() {
    let sim = sim().await;
    let dir = tempfile::tempdir().unwrap();
    let h = host(&sim, &dir.path().join("chat.db"), true).await;
    let chat = create_chat(&h.url, "order").await;

    let (status, body) = post_text(&h.url, &chat, "What does seat mean?").await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(
        body["joined"],
        json!(false),
        "the first message starts a turn"
    );
    let events = events_until_answer(&h.url, &chat, 0).await;

    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    let expected: Vec<u64> = (1..=events.len() as u64).collect();
    assert_eq!(ids, expected, "ids count up from 1 without gaps");
    let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
    // The sim makes one tool round (as many calls as the entry's profile says), then answers
    // from the results, streamed: the message, every call, every result, tokens, the answer.
    let calls = names.iter().filter(|n| **n == "tool_call").count();
    assert!(calls >= 1, "{names:?}");
    let mut expected = vec!["message"];
    expected.extend(std::iter::repeat_n("tool_call", calls));
    expected.extend(std::iter::repeat_n("tool_result", calls));
    assert_eq!(&names[..expected.len()], &expected[..], "{names:?}");
    assert_eq!(names.last(), Some(&"answer"));
    let tokens: Vec<&Sse> = events.iter().filter(|e| e.name == "token").collect();
    assert!(tokens.len() > 1, "the answer streamed in pieces: {names:?}");
    assert!(
        names[expected.len()..names.len() - 1]
            .iter()
            .all(|n| *n == "token"),
        "{names:?}"
    );
    assert_eq!(events[0].data["text"], "What does seat mean?");
    assert_eq!(events[1].data["name"], "lookup");
    let streamed: String = tokens
        .iter()
        .map(|e| e.data["text"].as_str().unwrap())
        .collect();
    let answer = &events.last().unwrap().data;
    assert_eq!(answer["text"].as_str().unwrap(), streamed);
    // The answer quotes the latest tool result (the sim's answer may be a weak or a good
    // sentence, drawn from the request, but both quote it).
    assert!(streamed.contains("the meaning of"), "{streamed}");
    // The answer carries the conversation's artifacts: the lookups' outputs.
    assert_eq!(answer["artifacts"].as_array().unwrap().len(), calls);
    assert_eq!(answer["artifacts"][0]["reference"], "@a1");
    assert_eq!(answer["artifacts"][0]["tool"], "lookup");

    // A subscriber asking from an id gets only what follows it.
    let tail = events_until_answer(&h.url, &chat, 2).await;
    assert_eq!(tail.first().unwrap().id, 3);
    assert_eq!(tail.len(), events.len() - 2);

    // History: the person's message, the calls, the results, the answer.
    let hist = history(&h.url, &chat).await;
    let messages = hist["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4, "{hist}");
    assert_eq!(hist["turn_open"], json!(false));
    assert_eq!(hist["last_event_id"], json!(events.len()));

    // A reconnecting browser's Last-Event-ID wins over the URL's `after`.
    let resp = reqwest::Client::new()
        .get(format!("{}/api/chats/{chat}/events?after=0", h.url))
        .header("last-event-id", (events.len() - 1).to_string())
        .send()
        .await
        .unwrap();
    let mut stream = eventsource_stream::Eventsource::eventsource(resp.bytes_stream());
    let first = futures::StreamExt::next(&mut stream)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.id, events.len().to_string());
    assert_eq!(first.event, "answer");
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[3]["role"], "assistant");
    assert_eq!(messages[3]["content"][0]["text"], answer["text"]);
    h.running.shutdown().await.unwrap();
}

async fn refusal(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{body}"
    );
    (status, body)
}

#[tokio::test]
async fn bad_input_gets_a_4xx_naming_the_field_and_changes_nothing() {
    let sim = sim().await;
    let dir = tempfile::tempdir().unwrap();
    let h = host(&sim, &dir.path().join("chat.db"), false).await;
    let c = reqwest::Client::new();
    let url = &h.url;
    let chat = create_chat(url, "refusals").await;

    // Unknown chat, for each route that names one.
    let unknown = "0190aaaa-0000-7000-8000-000000000000";
    for resp in [
        c.get(format!("{url}/api/chats/{unknown}"))
            .send()
            .await
            .unwrap(),
        c.post(format!("{url}/api/chats/{unknown}/messages"))
            .json(&json!({"text": "hi"}))
            .send()
            .await
            .unwrap(),
        c.get(format!("{url}/api/chats/{unknown}/events"))
            .send()
            .await
            .unwrap(),
        c.get(format!("{url}/api/chats/not-even-an-id"))
            .send()
            .await
            .unwrap(),
    ] {
        let (status, body) = refusal(resp).await;
        assert_eq!(status, 404, "{body}");
        assert_eq!(body["field"], "chat_id", "{body}");
    }

    let post = |body: String| {
        c.post(format!("{url}/api/chats/{chat}/messages"))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let cases: Vec<(String, u16, &str)> = vec![
        ("{\"text\": \"unclosed".into(), 400, "body"),
        ("not json at all".into(), 400, "body"),
        ("[\"text\"]".into(), 400, "body"),
        ("{}".into(), 422, "text"),
        ("{\"text\": 42}".into(), 422, "text"),
        ("{\"text\": \"\"}".into(), 422, "text"),
        ("{\"text\": \"  \\n \"}".into(), 422, "text"),
        (
            json!({"text": "x".repeat(16 * 1024 + 1)}).to_string(),
            413,
            "text",
        ),
    ];
    for (body, want_status, want_field) in cases {
        let shown: String = body.chars().take(40).collect();
        let (status, reply) = refusal(post(body).await.unwrap()).await;
        assert_eq!(status, want_status, "{shown}: {reply}");
        assert_eq!(reply["field"], want_field, "{shown}: {reply}");
    }
    // A message of exactly the limit is accepted.
    let (status, _) = post_text(url, &chat, &"y".repeat(16 * 1024)).await;
    assert_eq!(status, 202);

    // Creating a chat: malformed JSON names the body, a bad title names the title.
    let (status, reply) = refusal(
        c.post(format!("{url}/api/chats"))
            .body("{title")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, reply["field"].as_str()), (400, Some("body")));
    let (status, reply) = refusal(
        c.post(format!("{url}/api/chats"))
            .json(&json!({"title": 7}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, reply["field"].as_str()), (422, Some("title")));
    let (status, reply) = refusal(
        c.post(format!("{url}/api/chats"))
            .json(&json!({"title": "t".repeat(201)}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, reply["field"].as_str()), (422, Some("title")));

    // Nothing refused was stored: one chat, whose only message is the accepted one.
    let events = events_until_answer(url, &chat, 0).await;
    assert_eq!(events.last().unwrap().name, "answer");
    let list: Value = c
        .get(format!("{url}/api/chats"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["chats"].as_array().unwrap().len(), 1, "{list}");
    let hist = history(url, &chat).await;
    let users: Vec<&Value> = hist["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .collect();
    assert_eq!(users.len(), 1, "{hist}");
    h.running.shutdown().await.unwrap();
}

#[tokio::test]
async fn chats_survive_a_restart_of_the_host_on_the_same_database() {
    let sim = sim().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");

    let first = host(&sim, &db, false).await;
    let chat = create_chat(&first.url, "kept").await;
    let other = create_chat(&first.url, "empty one").await;
    let (status, _) = post_text(&first.url, &chat, "What is the capital of France?").await;
    assert_eq!(status, 202);
    let events = events_until_answer(&first.url, &chat, 0).await;
    assert_eq!(events.last().unwrap().data["text"], PARIS);
    first.running.shutdown().await.unwrap();
    first.rt.flush().await.unwrap();
    drop(first.host);
    drop(first.rt);

    // A new runtime and host on the same file.
    let second = host(&sim, &db, false).await;
    assert_ne!(second.url, "");
    let list: Value = reqwest::get(format!("{}/api/chats", second.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = list["chats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![chat.as_str(), other.as_str()],
        "most recently changed first"
    );
    let hist = history(&second.url, &chat).await;
    let texts: Vec<&str> = hist["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, vec!["What is the capital of France?", PARIS]);
    assert_eq!(history(&second.url, &other).await["messages"], json!([]));

    // The chat goes on where it stopped: the new turn's request holds the old exchange.
    let before = sim.requests().len();
    let (status, _) = post_text(&second.url, &chat, "And the capital of France again?").await;
    assert_eq!(status, 202);
    let events = events_until_answer(&second.url, &chat, 0).await;
    assert_eq!(events.last().unwrap().name, "answer");
    let sent = &sim.requests()[before..];
    let body = sent.last().unwrap().body.to_string();
    assert!(body.contains("What is the capital of France?"), "{body}");
    assert!(body.contains(PARIS), "{body}");
    assert_eq!(
        history(&second.url, &chat).await["messages"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    second.running.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_provider_failure_is_recorded_with_its_reason_and_the_next_turn_reads_only_that_it_failed()
 {
    let sim = sim().await;
    let dir = tempfile::tempdir().unwrap();
    let h = host(&sim, &dir.path().join("chat.db"), false).await;
    let chat = create_chat(&h.url, "failing").await;
    // Enough server errors to exhaust the transient retries of the turn's call.
    sim.inject(thinkers_sim::FaultRule::new(thinkers_sim::FaultKind::Http500).times(20));
    let (status, _) = post_text(&h.url, &chat, "What is the capital of France?").await;
    assert_eq!(status, 202);
    let events = events_until_answer(&h.url, &chat, 0).await;
    let last = events.last().unwrap();
    assert_eq!(last.name, "error", "{events:?}");
    let hist = history(&h.url, &chat).await;
    let messages = hist["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{hist}");
    let marker = messages[1]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(marker.starts_with("[no answer:"), "{marker}");
    // The record says why: the entry, where it was called and what the provider said.
    let sim_addr = sim.base_url().trim_start_matches("http://").to_owned();
    let internals = [
        "sim-small-a",
        "sim-openai",
        "http://",
        sim_addr.as_str(),
        "server_error",
        "The server had an error",
    ];
    for detail in internals {
        assert!(marker.contains(detail), "{detail} not in {marker}");
    }

    sim.reset(); // the faults left over, and the request log
    let (status, _) = post_text(&h.url, &chat, "Once more: the capital of France?").await;
    assert_eq!(status, 202);
    let after = events.last().unwrap().id;
    let events = events_until_answer(&h.url, &chat, after).await;
    assert_eq!(events.last().unwrap().name, "answer", "{events:?}");
    // What the model read of the failed turn: that it failed, nothing of why.
    let sent = sim.requests();
    assert!(!sent.is_empty());
    for request in &sent {
        let read = request.body["messages"].to_string();
        assert!(
            read.contains("[the previous turn failed; no answer was given]"),
            "{read}"
        );
        assert!(
            !read.contains("[no answer"),
            "the marker reached the model: {read}"
        );
        for detail in internals {
            assert!(!read.contains(detail), "{detail} reached the model: {read}");
        }
    }
    // The record and the page still show the marker, reason and all.
    let hist = history(&h.url, &chat).await;
    let messages = hist["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4, "{hist}");
    assert_eq!(messages[1]["content"][0]["text"], marker.as_str());
    h.running.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_message_posted_during_a_turn_joins_it() {
    let sim = sim().await;
    let dir = tempfile::tempdir().unwrap();
    let h = host(&sim, &dir.path().join("chat.db"), true).await;
    let chat = create_chat(&h.url, "joining").await;
    let (status, first) = post_text(&h.url, &chat, "What does seat mean?").await;
    assert_eq!((status, &first["joined"]), (202, &json!(false)));
    let (status, second) = post_text(&h.url, &chat, "Also: what does grade mean?").await;
    assert_eq!((status, &second["joined"]), (202, &json!(true)), "{second}");

    let events = events_until_answer(&h.url, &chat, 0).await;
    let messages: Vec<&str> = events
        .iter()
        .filter(|e| e.name == "message")
        .map(|e| e.data["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        vec!["What does seat mean?", "Also: what does grade mean?"],
        "both read by the one turn"
    );
    h.running.shutdown().await.unwrap();
    // One turn answered both: the last request to the model held the two messages.
    let last = sim.requests().last().unwrap().body.to_string();
    assert!(last.contains("Also: what does grade mean?"), "{last}");
}

/// A chat turn that reaches a call needing approval stops with an `approval` event (after the
/// call's `tool_call`), and its history lists the waiting call. Bad decisions are refused naming
/// the field or the id; a decision continues the same turn to its answer, the tool run once.
#[tokio::test]
async fn a_waiting_call_is_decided_through_the_api_and_the_turn_goes_on() {
    use thinkers_sim::{Script, ScriptAnswer, ScriptRule, ScriptToolCall};
    let script = Script::new(vec![
        ScriptRule::when_contains(
            "the meaning of seat",
            ScriptAnswer::Text("APPROVED: looked it up.".into()),
        ),
        ScriptRule::when_contains(
            "Approve me",
            ScriptAnswer::ToolCalls(vec![ScriptToolCall {
                name: "lookup".to_owned(),
                arguments: json!({"term": "seat"}),
            }]),
        ),
    ]);
    let config = thinkers_sim::SimConfig::from_catalog_toml(thinkers::model::catalog::BUNDLED_TOML)
        .unwrap()
        .calm();
    let sim = thinkers_sim::Sim::start(thinkers_sim::SimConfig {
        script: Some(script),
        log_bodies: true,
        ..config
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rt = crate::support::runtime_with(
        &sim,
        &dir.path().join("chat.db"),
        thinkers::durable::ApprovalPolicy::new().tool("lookup"),
    )
    .await;
    let h = crate::support::host_with(rt, true).await;
    let chat = create_chat(&h.url, "approvals").await;
    let other = create_chat(&h.url, "another").await;
    let (status, _) = post_text(&h.url, &chat, "Approve me: what is a seat?").await;
    assert_eq!(status, 202);
    let events = events_until_answer(&h.url, &chat, 0).await;
    let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names.last(), Some(&"approval"), "{names:?}");
    assert!(names.contains(&"tool_call"), "{names:?}");
    assert!(!names.contains(&"tool_result"), "nothing ran: {names:?}");
    let approval = events.last().unwrap().data.clone();
    assert_eq!(approval["tool"], "lookup");
    let id = approval["id"].as_str().unwrap().to_owned();
    let seen = history(&h.url, &chat).await;
    assert_eq!(seen["approvals"][0]["id"], id.as_str(), "{seen}");
    let last_id = events.last().unwrap().id;

    let decide = |chat: String, approval: String, body: Value| {
        let url = h.url.clone();
        async move {
            let resp = reqwest::Client::new()
                .post(format!("{url}/api/chats/{chat}/approvals/{approval}"))
                .json(&body)
                .send()
                .await
                .unwrap();
            let code = resp.status().as_u16();
            (code, resp.json::<Value>().await.unwrap())
        }
    };
    let (code, body) = decide(chat.clone(), id.clone(), json!({"decision": "maybe"})).await;
    assert_eq!(
        (code, body["field"].as_str()),
        (422, Some("decision")),
        "{body}"
    );
    let (code, body) = decide(chat.clone(), "nope".into(), json!({"decision": "approve"})).await;
    assert_eq!(code, 422, "{body}");
    assert!(body["error"].as_str().unwrap().contains("nope"), "{body}");
    let (code, body) = decide(other.clone(), id.clone(), json!({"decision": "approve"})).await;
    assert_eq!(code, 422, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("another chat"),
        "{body}"
    );

    let (code, body) = decide(chat.clone(), id.clone(), json!({"decision": "approve"})).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"], "approved");
    let rest = events_until_answer(&h.url, &chat, last_id).await;
    let names: Vec<&str> = rest.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names.last(), Some(&"answer"), "{names:?}");
    assert!(names.contains(&"tool_result"), "{names:?}");
    assert!(
        rest.last().unwrap().data["text"]
            .as_str()
            .unwrap()
            .contains("APPROVED")
    );
    let after = history(&h.url, &chat).await;
    assert_eq!(after["approvals"], json!([]), "{after}");
    h.running.shutdown().await.unwrap();
}
