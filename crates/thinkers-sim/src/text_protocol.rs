//! The text-tool protocol, for models without native tool calling:
//!
//! - the system prompt lists tools as a JSON array of `{"name","description","parameters"}`
//!   between a `<tools>` line and a `</tools>` line;
//! - a requested answer schema sits between `<response_schema>` and `</response_schema>`;
//! - the model calls tools by replying with only `{"tool_calls":[{"name":…,"arguments":{…}}]}`;
//! - results come back in a user message as
//!   `<tool_result name="NAME" id="ID">TEXT</tool_result>` blocks.

use serde_json::{Value, json};

use crate::exchange::ToolSpec;

/// The text between a line that is exactly `<tag>` and the next line that is exactly `</tag>`,
/// trimmed. The protocol puts each marker on a line of its own, so a prompt that merely mentions
/// the tags in prose is not mistaken for the block.
fn block<'a>(text: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut offset = 0;
    let mut start = None;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']).trim();
        match start {
            None if bare == open => start = Some(offset + line.len()),
            Some(s) if bare == close => return Some(text[s..offset].trim()),
            _ => {}
        }
        offset += line.len();
    }
    None
}

/// Why the text-protocol blocks of a system prompt could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProtocolError(pub(crate) String);

/// The tools listed in a `<tools>` block (empty when there is none).
pub(crate) fn tools(system: &str) -> Result<Vec<ToolSpec>, ProtocolError> {
    let Some(body) = block(system, "tools") else {
        return Ok(Vec::new());
    };
    let list: Vec<Value> = serde_json::from_str(body)
        .map_err(|e| ProtocolError(format!("the <tools> block is not a JSON array: {e}")))?;
    list.into_iter()
        .map(|tool| {
            let name = tool
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| ProtocolError("a tool in the <tools> block has no name".into()))?;
            Ok(ToolSpec {
                name: name.to_owned(),
                description: tool
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                schema: tool
                    .get("parameters")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            })
        })
        .collect()
}

/// The schema in a `<response_schema>` block, if any.
pub(crate) fn response_schema(system: &str) -> Result<Option<Value>, ProtocolError> {
    block(system, "response_schema")
        .map(|body| {
            serde_json::from_str(body)
                .map_err(|e| ProtocolError(format!("the <response_schema> block is not JSON: {e}")))
        })
        .transpose()
}

/// One `<tool_result>` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextToolResult {
    pub(crate) name: Option<String>,
    pub(crate) id: Option<String>,
    pub(crate) body: String,
}

/// Every `<tool_result …>…</tool_result>` block of a message, in order.
pub(crate) fn tool_results(text: &str) -> Vec<TextToolResult> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<tool_result") {
        let after = &rest[start..];
        let Some(head_end) = after.find('>') else {
            break;
        };
        let head = &after[..head_end];
        let body_start = head_end + 1;
        let Some(body_len) = after[body_start..].find("</tool_result>") else {
            break;
        };
        out.push(TextToolResult {
            name: attribute(head, "name"),
            id: attribute(head, "id"),
            body: after[body_start..body_start + body_len].trim().to_owned(),
        });
        rest = &after[body_start + body_len + "</tool_result>".len()..];
    }
    out
}

fn attribute(head: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = head.find(&key)? + key.len();
    let end = start + head[start..].find('"')?;
    Some(head[start..end].to_owned())
}

/// The reply text that calls tools: `{"tool_calls":[{"name":…,"arguments":{…}}]}`.
pub(crate) fn render_calls(calls: &[(String, Value)]) -> String {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(name, args)| json!({"name": name, "arguments": args}))
        .collect();
    json!({ "tool_calls": calls }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYSTEM: &str = "You are helpful.\n<tools>\n[{\"name\":\"lookup\",\"description\":\"Look up\",\"parameters\":{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\"}},\"required\":[\"q\"]}}]\n</tools>\nAnswer shape:\n<response_schema>\n{\"type\":\"object\"}\n</response_schema>\n";

    #[test]
    fn reads_tools_and_schema_blocks() {
        let tools = tools(SYSTEM).unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name, "lookup");
        assert_eq!(tools[0].schema["required"][0], "q");
        assert_eq!(
            response_schema(SYSTEM).unwrap(),
            Some(json!({"type": "object"}))
        );
        assert!(super::tools("no tools here").unwrap().is_empty());
        assert!(super::tools("<tools>\nnot json\n</tools>").is_err());
        // Markers mentioned in prose are not the block.
        let prose = "Tools are between the <tools> and </tools> lines.\n<tools>\n[]\n</tools>\n";
        assert_eq!(super::tools(prose).unwrap().len(), 0);
    }

    #[test]
    fn reads_tool_result_blocks() {
        let text = "<tool_result name=\"lookup\" id=\"t1\">first</tool_result>\n<tool_result name=\"x\" id=\"t2\">\nsecond\n</tool_result>";
        let results = tool_results(text);
        assert_eq!(results.len(), 2);
        assert_eq!(results[0].name.as_deref(), Some("lookup"));
        assert_eq!(results[1].id.as_deref(), Some("t2"));
        assert_eq!(results[1].body, "second");
        assert!(tool_results("plain").is_empty());
    }

    #[test]
    fn renders_calls_as_protocol_json() {
        let text = render_calls(&[("lookup".into(), json!({"q": "x"}))]);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["tool_calls"][0]["name"], "lookup");
        assert_eq!(v["tool_calls"][0]["arguments"]["q"], "x");
    }
}
