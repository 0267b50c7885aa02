//! The web page in a real browser: headless Chromium driven over the W3C WebDriver protocol
//! (chromedriver, spoken to with reqwest) opens the host's page, creates a chat, sends a
//! message and sees the streamed answer from the sim; a screenshot is saved to
//! `target/screenshots/chat.png`.
//!
//! `scripts/test.sh` installs Debian's `chromium` and `chromium-driver` and exports
//! `THINKERS_CHROMIUM` and `THINKERS_CHROMEDRIVER`; without them this test says so and skips.

use serde_json::json;

use crate::support::{PARIS, host, sim};
use crate::webdriver::{browser, screenshot_path};
use thinkers_store::RuntimeBuilderExt as _;

#[tokio::test]
async fn the_page_streams_an_answer_in_headless_chromium() {
    let Some(browser) = browser("the page streams an answer").await else {
        return;
    };
    let sim = sim().await;
    let dir = tempfile::tempdir().unwrap();
    let h = host(&sim, &dir.path().join("chat.db"), true).await;

    browser.goto(&h.url).await;
    let title = browser.eval("return document.title").await;
    assert_eq!(title, "thinkers chat");
    browser.click("#new-chat").await;
    // The chat is listed and its event stream open (the send button is enabled then).
    browser
        .wait_for(
            "return document.querySelectorAll('#chat-list .chat-item.active').length === 1 \
             && !document.getElementById('send').disabled",
            |v| v == &json!(true),
        )
        .await;
    browser
        .type_into("#input", "What is the capital of France?")
        .await;
    browser.click("#send").await;
    let answer = browser
        .wait_for(
            "return [...document.querySelectorAll('.msg.assistant.final')]\
             .map(e => e.textContent).join('\\n')",
            |v| v.as_str().is_some_and(|s| s.contains(PARIS)),
        )
        .await;
    assert!(answer.as_str().unwrap().contains(PARIS));
    // It arrived as a stream of tokens, and the person's message is shown.
    let tokens = browser.eval("return window.tokenEvents || 0").await;
    assert!(
        tokens.as_u64().unwrap() > 1,
        "tokens seen by the page: {tokens}"
    );
    let user = browser
        .eval("return document.querySelector('.msg.user').textContent")
        .await;
    assert_eq!(user, "What is the capital of France?");
    // A second message makes the model use its tool: the activity shows, then the answer.
    browser.type_into("#input", "What does seat mean?").await;
    browser.click("#send").await;
    browser
        .wait_for(
            "return document.querySelectorAll('.msg.assistant.final').length",
            |v| v.as_u64() == Some(2),
        )
        .await;
    let tools = browser
        .eval("return [...document.querySelectorAll('.tool')].map(e => e.textContent)")
        .await;
    let tools: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(tools.iter().any(|t| t.starts_with("→ lookup")), "{tools:?}");
    assert!(tools.iter().any(|t| t.starts_with("← lookup")), "{tools:?}");
    let errors = browser
        .eval("return document.querySelectorAll('.error').length")
        .await;
    assert_eq!(errors, json!(0));

    let path = screenshot_path("chat.png");
    let path = std::fs::canonicalize(path.parent().unwrap().parent().unwrap())
        .map_or(path.clone(), |t| t.join("screenshots").join("chat.png"));
    browser.screenshot(&path).await;
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 1000, "a screenshot of {size} bytes");
    println!("screenshot saved to {}", path.display());
    browser.quit().await;
    h.running.shutdown().await.unwrap();
}

/// A chat whose `lookup` needs a person's approval (the runtime's policy): the page shows the
/// waiting call with Approve and Deny; approving runs the tool and the same turn answers;
/// denying (with a reason) answers without it. A screenshot of the waiting call is saved to
/// `target/screenshots/chat-approval.png`.
#[tokio::test]
async fn the_page_approves_and_denies_a_waiting_call_in_headless_chromium() {
    use thinkers::durable::ApprovalPolicy;
    use thinkers_sim::{Script, ScriptAnswer, ScriptRule, ScriptToolCall};

    let Some(browser) = browser("the page approves and denies").await else {
        return;
    };
    let lookup = |term: &str| {
        ScriptAnswer::ToolCalls(vec![ScriptToolCall {
            name: "lookup".to_owned(),
            arguments: json!({ "term": term }),
        }])
    };
    // Each rule looks at the conversation's last person message or tool result.
    let script = Script::new(vec![
        ScriptRule::when_contains(
            "denied",
            ScriptAnswer::Text("DENIED: I did not look it up.".into()),
        ),
        ScriptRule::when_contains(
            "the meaning of seat",
            ScriptAnswer::Text("APPROVED: a seat is the meaning of seat.".into()),
        ),
        ScriptRule::when_contains("Deny me", lookup("grade")),
        ScriptRule::when_contains("Approve me", lookup("seat")),
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
    let rt = thinkers::Runtime::builder(
        thinkers::model::Catalog::bundled().with_sim_url(&sim.base_url()),
    )
    .database(dir.path().join("chat.db").to_str().unwrap())
    .approval_policy(ApprovalPolicy::new().tool("lookup"))
    .build()
    .await
    .unwrap();
    let host = thinkers_host::ChatHost::new(
        &rt,
        crate::support::factory("sim-small-a", true),
        thinkers_host::HostConfig::default(),
    )
    .unwrap();
    let running = host.start("127.0.0.1:0".parse().unwrap()).await.unwrap();
    browser.goto(&running.url()).await;
    browser.click("#new-chat").await;
    browser
        .wait_for("return !document.getElementById('send').disabled", |v| {
            v == &json!(true)
        })
        .await;

    // Approve: the waiting call shows, nothing ran yet; a click runs it and the turn answers.
    browser
        .type_into("#input", "Approve me: what is a seat?")
        .await;
    browser.click("#send").await;
    browser
        .wait_for(
            "return document.querySelectorAll('.approval button.approve').length",
            |v| v.as_u64() == Some(1),
        )
        .await;
    let shown = browser
        .eval("return document.querySelector('.approval').textContent")
        .await;
    assert!(shown.as_str().unwrap().contains("lookup"), "{shown}");
    let ran = browser
        .eval("return [...document.querySelectorAll('.tool')].filter(e => e.textContent.startsWith('← lookup')).length")
        .await;
    assert_eq!(ran, json!(0), "nothing ran before the decision");
    let path = screenshot_path("chat-approval.png");
    browser.screenshot(&path).await;
    // A reload shows the waiting call again (from the chat's history).
    browser.goto(&running.url()).await;
    browser
        .wait_for(
            "return document.querySelectorAll('.chat-item').length",
            |v| v.as_u64() == Some(1),
        )
        .await;
    browser.click(".chat-item").await;
    browser
        .wait_for(
            "return document.querySelectorAll('.approval button.approve').length === 1 \
             && !document.getElementById('send').disabled",
            |v| v == &json!(true),
        )
        .await;
    browser.click(".approval button.approve").await;
    let answer = browser
        .wait_for(
            "return [...document.querySelectorAll('.msg.assistant.final')].map(e => e.textContent).join('\\n')",
            |v| v.as_str().is_some_and(|s| s.contains("APPROVED")),
        )
        .await;
    assert!(answer.as_str().unwrap().contains("a seat is"), "{answer}");
    let results = browser
        .eval("return [...document.querySelectorAll('.tool')].map(e => e.textContent)")
        .await;
    assert!(
        results
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t.as_str().unwrap().starts_with("← lookup")),
        "{results}"
    );

    // Deny, with a reason: the model reads it and answers without the call.
    browser
        .type_into("#input", "Deny me: what is a grade?")
        .await;
    browser.click("#send").await;
    browser
        .wait_for(
            "return document.querySelectorAll('.approval button.deny:not([disabled])').length",
            |v| v.as_u64() == Some(1),
        )
        .await;
    browser
        .type_into(
            ".approval:last-of-type .approval-reason",
            "not needed today",
        )
        .await;
    browser.click(".approval button.deny:not([disabled])").await;
    browser
        .wait_for(
            "return [...document.querySelectorAll('.msg.assistant.final')].map(e => e.textContent).join('\\n')",
            |v| v.as_str().is_some_and(|s| s.contains("DENIED")),
        )
        .await;
    let told = sim
        .requests()
        .into_iter()
        .any(|r| r.raw_body.contains("not needed today"));
    assert!(told, "the model read the person's reason");
    let errors = browser
        .eval("return document.querySelectorAll('.error').length")
        .await;
    assert_eq!(errors, json!(0));
    let approvals = rt.approvals(false).await.unwrap();
    let statuses: Vec<&str> = approvals.iter().map(|a| a.status.as_str()).collect();
    assert_eq!(statuses, ["approved", "denied"]);
    browser.quit().await;
    running.shutdown().await.unwrap();
}

/// The model's Markdown is rendered (a list, bold, code) and sanitised: a `<script>` and an
/// `onerror` handler in the answer do nothing, live or reloaded from the history; a
/// `[no answer: …]` marker shows as a failure with its reason; tool calls and their results
/// are folded under the message that made them.
#[tokio::test]
async fn markdown_renders_and_a_script_in_it_stays_inert_in_headless_chromium() {
    use thinkers_sim::{Script, ScriptAnswer, ScriptRule};
    let Some(browser) = browser("markdown renders inert").await else {
        return;
    };
    let hostile = "Here is **bold** and `code`:\n\n- one\n- two\n\n<script>window.pwned = 1</script>\
                   <img src=x onerror=\"window.pwned = 2\"><a href=\"javascript:window.pwned=3\">link</a>";
    let script = Script::new(vec![
        ScriptRule::when_contains("Show markdown", ScriptAnswer::Text(hostile.into())),
        ScriptRule::when_contains(
            "Fail please",
            ScriptAnswer::Text("[no answer: the provider refused the request]".into()),
        ),
    ]);
    let config = thinkers_sim::SimConfig::from_catalog_toml(thinkers::model::catalog::BUNDLED_TOML)
        .unwrap()
        .calm();
    let sim = thinkers_sim::Sim::start(thinkers_sim::SimConfig {
        script: Some(script),
        ..config
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let h = host(&sim, &dir.path().join("chat.db"), true).await;
    browser.goto(&h.url).await;
    browser.click("#new-chat").await;
    browser
        .wait_for("return !document.getElementById('send').disabled", |v| {
            v == &json!(true)
        })
        .await;
    browser.type_into("#input", "Show markdown").await;
    browser.click("#send").await;
    let check = "const m = [...document.querySelectorAll('.msg.assistant.final')].pop(); \
                 if (!m || !m.querySelector('strong')) return null; \
                 return {strong: m.querySelector('strong').textContent, \
                         items: m.querySelectorAll('li').length, \
                         code: m.querySelector('code') && m.querySelector('code').textContent, \
                         scripts: document.querySelectorAll('#messages script').length, \
                         handlers: document.querySelectorAll('#messages [onerror]').length, \
                         js_links: [...document.querySelectorAll('#messages a')] \
                             .filter(a => (a.getAttribute('href') || '').startsWith('javascript')).length, \
                         pwned: window.pwned === undefined ? null : window.pwned}";
    let live = browser.wait_for(check, |v| !v.is_null()).await;
    let inert = json!({"strong": "bold", "items": 2, "code": "code", "scripts": 0,
                       "handlers": 0, "js_links": 0, "pwned": null});
    assert_eq!(live, inert, "rendered live");
    // A tool question: its calls and results are folded under the message that made them.
    browser.type_into("#input", "What does seat mean?").await;
    browser.click("#send").await;
    browser
        .wait_for(
            "return document.querySelectorAll('.msg.assistant.final').length",
            |v| v.as_u64() == Some(2),
        )
        .await;
    let folded = browser
        .eval(
            "return [...document.querySelectorAll('.msg.assistant details.tools .tool')]\
             .map(e => e.textContent.slice(0, 8))",
        )
        .await;
    let folded: Vec<&str> = folded
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        folded.iter().any(|t| t.starts_with("→ lookup")),
        "{folded:?}"
    );
    assert!(
        folded.iter().any(|t| t.starts_with("← lookup")),
        "{folded:?}"
    );
    let loose = browser
        .eval("return [...document.querySelectorAll('.tool')].filter(t => !t.closest('details.tools')).length")
        .await;
    assert_eq!(loose, json!(0), "every tool line is folded under a message");
    // The marker is a failure with its reason.
    browser.type_into("#input", "Fail please").await;
    browser.click("#send").await;
    let failure = browser
        .wait_for(
            "const f = document.querySelector('.msg.failure .reason'); return f && f.textContent",
            |v| !v.is_null(),
        )
        .await;
    assert_eq!(failure, json!("the provider refused the request"));
    // Reloaded from the history: the same, still inert.
    browser.goto(&h.url).await;
    browser
        .wait_for(
            "return document.querySelectorAll('.chat-item').length",
            |v| v.as_u64() == Some(1),
        )
        .await;
    browser.click(".chat-item").await;
    browser
        .wait_for(
            "return document.querySelectorAll('.msg.failure').length",
            |v| v.as_u64() == Some(1),
        )
        .await;
    let check_first = check.replace(".pop()", "[0]");
    let reloaded = browser.wait_for(&check_first, |v| !v.is_null()).await;
    assert_eq!(reloaded, inert, "rendered from the history");
    let path = screenshot_path("chat-markdown.png");
    browser.screenshot(&path).await;
    println!("screenshot saved to {}", path.display());
    browser.quit().await;
    h.running.shutdown().await.unwrap();
}
