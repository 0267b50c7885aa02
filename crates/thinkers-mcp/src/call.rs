//! One MCP tool as a [`ToolProvider`], and the job that calls it.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ErrorCode, JsonObject};
use serde_json::Value;

use super::server::Connection;
use thinkers::dispatch::Limits;
use thinkers::error::{FailureClass, ServiceFailure, ServiceStep};
use thinkers::job::{BoxJob, Job, JobContext, Requirements, Resources};
use thinkers::tool::{ToolCallContext, ToolOutput, ToolProvider};
use thinkers::{Error, Result};

/// The step every call failure names.
const STEP: &str = "tools/call";
/// The parameter a correctable failure names: the call's arguments as a whole.
const PARAMETER: &str = "arguments";
/// How much of the arguments an error quotes.
const VALUE_EXCERPT: usize = 300;

/// One tool of an MCP server. See the [module docs](super) for names, outcomes and why it is
/// never read-only.
#[derive(Debug)]
pub struct McpTool {
    connection: Arc<Connection>,
    name: String,
    wire_name: String,
    description: String,
    schema: Value,
    read_only_hint: Option<bool>,
}

impl McpTool {
    pub(crate) fn new(connection: Arc<Connection>, name: String, tool: rmcp::model::Tool) -> Self {
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or_default()
            .to_owned();
        Self {
            connection,
            name,
            wire_name: tool.name.into_owned(),
            description,
            schema: Value::Object(tool.input_schema.as_ref().clone()),
            read_only_hint: tool.annotations.and_then(|a| a.read_only_hint),
        }
    }

    /// The tool's name on the server, which calls use.
    pub fn wire_name(&self) -> &str {
        &self.wire_name
    }

    /// The server this tool belongs to.
    pub fn server(&self) -> &str {
        &self.connection.server
    }

    /// What the server claims in its `readOnlyHint` annotation. Informational only: it never
    /// makes the tool read-only (see the [module docs](super)).
    pub fn read_only_hint(&self) -> Option<bool> {
        self.read_only_hint
    }
}

impl ToolProvider for McpTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    /// Always `false`: MCP gives a client no way to establish that a tool has no side effects.
    fn read_only(&self) -> bool {
        false
    }
    fn instantiate(&self, arguments: &Value, _cx: &ToolCallContext) -> Result<BoxJob<ToolOutput>> {
        Ok(BoxJob::new(McpCallJob {
            connection: self.connection.clone(),
            name: self.name.clone(),
            wire_name: self.wire_name.clone(),
            // The job owns what it sends; a `null` for an optional property (OpenAI strict mode
            // writes one for what it leaves out) is sent as its absence, which the server's
            // schema allows.
            arguments: as_object(
                thinkers_core::schema::nulls_as_absent(arguments, &self.schema).into_owned(),
            )?,
        }))
    }
}

fn as_object(arguments: Value) -> Result<JsonObject> {
    match arguments {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(JsonObject::new()),
        other => Err(Error::invalid_input(
            PARAMETER,
            Some(excerpt(&other.to_string())),
            "the arguments of an MCP tool are a JSON object",
        )),
    }
}

/// One call of an MCP tool as a job.
struct McpCallJob {
    connection: Arc<Connection>,
    name: String,
    wire_name: String,
    arguments: JsonObject,
}

impl Job for McpCallJob {
    type Output = ToolOutput;

    fn class(&self) -> Cow<'static, str> {
        Cow::Owned(self.name.clone())
    }

    /// One slot of `mcp:<server>`, unlimited unless the deployment configures that budget (for
    /// example to bound concurrent calls to a fragile server). Refused under a read-only scope:
    /// no MCP tool is read-only.
    fn requirements(&mut self, req: &mut Requirements, cx: &JobContext) -> Result<()> {
        thinkers::tool::admit_tool(&self.name, false, cx.scope())?;
        req.resource(
            format!("mcp:{}", self.connection.server),
            Some(Limits::default()),
        );
        Ok(())
    }

    async fn execute(&mut self, _res: &Resources, _cx: &JobContext) -> Result<ToolOutput> {
        call(&self.connection, &self.wire_name, self.arguments.clone()).await
    }
}

/// A transport or protocol failure of `tools/call`, classified for [`ServiceStep`].
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
struct CallFailure(ServiceError);

impl ServiceFailure for CallFailure {
    fn class(&self) -> FailureClass {
        match &self.0 {
            ServiceError::McpError(e) if e.code == ErrorCode::INVALID_PARAMS => {
                FailureClass::Correctable
            }
            ServiceError::TransportSend(_)
            | ServiceError::TransportClosed
            | ServiceError::Timeout { .. }
            | ServiceError::Cancelled { .. } => FailureClass::Io,
            _ => FailureClass::Uncorrectable,
        }
    }
}

/// The call itself: the one step that sends the model's arguments to the server.
async fn call(connection: &Connection, tool: &str, arguments: JsonObject) -> Result<ToolOutput> {
    let value = excerpt(&Value::Object(arguments.clone()).to_string());
    let step = ServiceStep {
        service: &connection.server,
        step: STEP,
        parameter: PARAMETER,
        value: &value,
    };
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.arguments = Some(arguments);
    let limit = connection.call_timeout;
    let answer = tokio::time::timeout(limit, connection.service.call_tool(params)).await;
    let result = match answer {
        Ok(r) => step.wrap(r.map_err(CallFailure))?,
        Err(_) => {
            return Err(Error::external(
                &connection.server,
                STEP,
                format!("no answer from the tool {tool} within {limit:?}"),
            ));
        }
    };
    if result.is_error == Some(true) {
        return Err(Error::invalid_input(
            PARAMETER,
            Some(value),
            format!(
                "the tool {tool} reported an error: {}",
                texts(&result.content)
            ),
        ));
    }
    Ok(ToolOutput {
        json: output_json(&result),
        typed: Arc::new(result),
    })
}

/// What the model reads of a result: the structured content, else the content blocks.
fn output_json(result: &CallToolResult) -> Value {
    if let Some(structured) = &result.structured_content {
        return structured.clone();
    }
    let blocks: Vec<Value> = result
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => Value::String(t.text.clone()),
            other => serde_json::to_value(other).unwrap_or(Value::Null),
        })
        .collect();
    match <[Value; 1]>::try_from(blocks) {
        Ok([single @ Value::String(_)]) => single,
        Ok([other]) => Value::Array(vec![other]),
        Err(blocks) => Value::Array(blocks),
    }
}

/// The text blocks of a result joined, or a note that there were none.
fn texts(content: &[ContentBlock]) -> String {
    let joined: Vec<&str> = content
        .iter()
        .filter_map(|b| b.as_text().map(|t| t.text.as_str()))
        .collect();
    if joined.is_empty() {
        "(no text)".to_owned()
    } else {
        joined.join("\n")
    }
}

fn excerpt(s: &str) -> String {
    match s.char_indices().nth(VALUE_EXCERPT) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_owned(),
    }
}
