//! Shared helpers: stamps, stores on fresh databases, a conversation holding every block kind,
//! a bounded summariser and a sizer over the real encoders.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use serde_json::json;
use thinkers::conversation::{
    ContentBlock, ConversationService, ConversationStore, MediaSource, MemoryConversationStore,
    Message, Role, Stamps, Summarizer, WireSizer, summarizer_fn,
};
use thinkers::llm::{Dialect, TokenCounter, WireTarget};
use thinkers::model::{Depth, Grade, OutputSize};
use thinkers_store::{SqliteConversationStore, SqliteStore};

/// A 1×1 PNG, base64.
pub const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// A signature as providers send them: long, opaque, base64 with `+`, `/` and padding.
pub const SIGNATURE: &str =
    "EqQBCkYIBxgCKkDq+/Zz0u9Hk3+Q1rJ0y5v/8mX2T+AbC4dEfGhIjKlMnOpQrStUvWxYz0123456789+/AAAA==";

pub fn stamps() -> Stamps {
    Stamps::new(Grade::Medium, Depth::Standard, OutputSize::Compact)
}

/// A SQLite store in a fresh file under `dir`.
pub async fn sqlite_at(dir: &Path) -> Result<(SqliteStore, Arc<dyn ConversationStore>)> {
    let path = dir.join("conversations.db");
    let store = SqliteStore::open(path.to_str().unwrap()).await?;
    let conversations: Arc<dyn ConversationStore> = Arc::new(SqliteConversationStore::new(&store));
    Ok((store, conversations))
}

/// Every store, each fresh: the memory store, SQLite on a temporary file and (feature
/// `postgres`) PostgreSQL in a fresh schema. The directory
/// must outlive the stores.
pub async fn both_stores(dir: &Path) -> Result<Vec<(&'static str, Arc<dyn ConversationStore>)>> {
    let (_, sqlite) = sqlite_at(dir).await?;
    #[allow(unused_mut)]
    let mut stores: Vec<(&'static str, Arc<dyn ConversationStore>)> = vec![
        ("memory", Arc::new(MemoryConversationStore::new())),
        ("sqlite", sqlite),
    ];
    if let Some(pg) = crate::pg::pg_conversations().await? {
        stores.push(("postgres", pg));
    }
    Ok(stores)
}

pub fn service(store: Arc<dyn ConversationStore>) -> ConversationService {
    ConversationService::new(store)
}

/// Messages holding every block kind, with awkward text.
pub fn every_block() -> Vec<Message> {
    vec![
        Message::user_text("Quelle est la météo à Paris ? 🌦 \"quoted\" \\ back\u{1}slash\nline"),
        Message::assistant(vec![
            ContentBlock::Thinking {
                thinking: "The user wants weather; call the tool.\n\tindented".into(),
                signature: SIGNATURE.into(),
            },
            ContentBlock::RedactedThinking {
                data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw\u{0}tail".into(),
            },
            ContentBlock::text("Let me check."),
            ContentBlock::tool_call(
                "toolu_01A",
                "get_weather",
                json!({"city": "Paris", "units": ["c", "f"], "nested": {"n": 1.5, "b": null}}),
            ),
            ContentBlock::tool_call("call_2", "broken_json", json!("{\"city\": Par")),
        ]),
        Message::tool_results(vec![
            ContentBlock::tool_result("toolu_01A", "get_weather", "11°C, light rain"),
            ContentBlock::tool_error("call_2", "broken_json", "arguments did not parse"),
        ]),
        Message::new(
            Role::User,
            vec![
                ContentBlock::text("And this chart?"),
                ContentBlock::Image {
                    media_type: "image/png".into(),
                    source: MediaSource::Base64(PNG_1X1.into()),
                },
                ContentBlock::Image {
                    media_type: "image/jpeg".into(),
                    source: MediaSource::Url("https://example.invalid/c.jpg".into()),
                },
                ContentBlock::File {
                    media_type: "application/pdf".into(),
                    name: Some("report.pdf".into()),
                    source: MediaSource::Base64("JVBERi0xLjQK".into()),
                },
                ContentBlock::File {
                    media_type: "text/plain".into(),
                    name: None,
                    source: MediaSource::Url("https://example.invalid/a.txt".into()),
                },
            ],
        ),
        Message::assistant_text("The chart shows rain all week."),
    ]
}

/// A counter shared by the sizers and the summariser of one test.
pub fn counter() -> Arc<TokenCounter> {
    Arc::new(TokenCounter::new())
}

/// A sizer over the real encoder of `dialect`.
pub fn sizer(dialect: Dialect, counter: &Arc<TokenCounter>) -> WireSizer {
    let base = match dialect {
        Dialect::Anthropic => "http://sim.invalid",
        _ => "http://sim.invalid/v1",
    };
    WireSizer::new(
        WireTarget::new(dialect, base, "model-x"),
        Arc::clone(counter),
    )
}

/// The longest prefix of `text` (on a char boundary) of at most `max` tokens.
pub fn truncate_to_tokens(counter: &TokenCounter, text: &str, max: u32) -> String {
    let chars: Vec<char> = text.chars().collect();
    let (mut lo, mut hi) = (0usize, chars.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let candidate: String = chars[..mid].iter().collect();
        if counter.count_str(&candidate) <= u64::from(max) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    chars[..lo].iter().collect()
}

/// An extractive summariser: the transcript's opening, cut to the target token count. Its
/// output is bounded by the target, quotes, braces and newlines included.
pub fn bounded_summarizer(counter: &Arc<TokenCounter>) -> Arc<dyn Summarizer> {
    let counter = Arc::clone(counter);
    Arc::new(summarizer_fn(move |text: String, target: u32| {
        let counter = Arc::clone(&counter);
        async move {
            Ok(truncate_to_tokens(
                &counter,
                &format!("Earlier: {text}"),
                target,
            ))
        }
    }))
}
