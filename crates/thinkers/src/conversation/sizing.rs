//! [`RequestSizer`]: how many tokens a rendered request costs, measured on the wire bytes.
//!
//! Compaction compares the size of a conversation's request with its threshold. [`WireSizer`]
//! measures it the way admission does: the request is encoded by the dialect of the target that
//! will serve it (tools and answer shape included) and counted with the shared
//! [`TokenCounter`], whose part cache makes re-measuring a grown conversation cheap.

use std::sync::Arc;

use crate::Result;
use crate::llm::{ChatRequest, ResponseSchema, TokenCounter, ToolSpec, WireTarget, encode};

/// Measures the tokens of a request.
pub trait RequestSizer: Send + Sync {
    /// The tokens `request` costs as it would be sent.
    fn tokens(&self, request: &ChatRequest) -> Result<u64>;
}

impl<F> RequestSizer for F
where
    F: Fn(&ChatRequest) -> Result<u64> + Send + Sync,
{
    fn tokens(&self, request: &ChatRequest) -> Result<u64> {
        self(request)
    }
}

/// Measures a request on the bytes a target's dialect would send, with the tools and answer
/// shape the caller will add, optionally calibrated for a catalog entry.
#[derive(Debug, Clone)]
pub struct WireSizer {
    target: WireTarget,
    counter: Arc<TokenCounter>,
    tools: Vec<ToolSpec>,
    response: Option<ResponseSchema>,
    entry: Option<String>,
}

impl WireSizer {
    /// A sizer for `target`, counting with `counter`.
    pub fn new(target: WireTarget, counter: Arc<TokenCounter>) -> Self {
        Self {
            target,
            counter,
            tools: Vec::new(),
            response: None,
            entry: None,
        }
    }

    /// Count these tools in every request, as the call will offer them.
    #[must_use]
    pub(crate) fn with_tools(mut self, tools: Vec<ToolSpec>) -> Self {
        self.tools = tools;
        self
    }

    /// Count this answer shape in every request.
    #[must_use]
    pub(crate) fn with_response(mut self, response: ResponseSchema) -> Self {
        self.response = Some(response);
        self
    }

    /// Scale counts by the calibration factor the counter learned for this catalog entry.
    #[must_use]
    pub(crate) fn with_entry(mut self, entry_id: impl Into<String>) -> Self {
        self.entry = Some(entry_id.into());
        self
    }
}

impl RequestSizer for WireSizer {
    fn tokens(&self, request: &ChatRequest) -> Result<u64> {
        let encoded = if self.tools.is_empty() && self.response.is_none() {
            encode(&self.target, request)?
        } else {
            let mut full = request.clone();
            full.tools.clone_from(&self.tools);
            full.response.clone_from(&self.response);
            encode(&self.target, &full)?
        };
        let counted = match &self.entry {
            Some(entry) => self.counter.count_for(entry, &encoded.body),
            None => self.counter.count_encoded(&encoded),
        };
        Ok(match &self.entry {
            Some(entry) => self.counter.estimate(entry, counted),
            None => counted,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::conversation::Message;
    use crate::llm::{Dialect, Tokenizer};

    #[test]
    fn tools_and_calibration_count() -> anyhow::Result<()> {
        let counter = Arc::new(TokenCounter::new());
        let target = WireTarget::new(Dialect::Anthropic, "http://x", "m");
        let req = ChatRequest::new("Be brief.", vec![Message::user_text("Hello there")]);
        let bare = WireSizer::new(target.clone(), Arc::clone(&counter)).tokens(&req)?;
        assert!(bare > 0);
        let tool = ToolSpec {
            name: "search".into(),
            description: "Search the corpus for documents about a topic.".into(),
            parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}}).into(),
        };
        let with_tools = WireSizer::new(target.clone(), Arc::clone(&counter))
            .with_tools(vec![tool])
            .tokens(&req)?;
        assert!(with_tools > bare + 10, "{with_tools} vs {bare}");
        counter.register("claude", Dialect::Anthropic, Tokenizer::Estimate);
        let calibrated = WireSizer::new(target, counter)
            .with_entry("claude")
            .tokens(&req)?;
        let start = crate::llm::tokens::starting_factor(Dialect::Anthropic, Tokenizer::Estimate);
        assert_eq!(calibrated, (bare as f64 * start).ceil() as u64);
        Ok(())
    }
}
