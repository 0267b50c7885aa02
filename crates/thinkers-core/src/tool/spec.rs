//! What the model is told of a tool: the one description every dialect renders.

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool the model may call.
///
/// Name and description are borrowed when the tool's are `'static` (a typed tool's name, a
/// door's text), so a palette rendered every turn copies neither.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name (snake_case on the wire).
    pub name: Cow<'static, str>,
    /// What the tool does, for the model.
    pub description: Cow<'static, str>,
    /// The JSON Schema of the tool's arguments (an object schema). Dialects adapt it where a
    /// provider constrains schemas (see `llm::strict`). Shared: a palette is rendered every
    /// turn, and a schema is built once per tool, not once per turn.
    pub parameters: Arc<Value>,
}
