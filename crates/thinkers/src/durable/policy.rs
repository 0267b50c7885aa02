//! [`ApprovalPolicy`]: the deployment's rule for which tool calls wait for a person.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

type Predicate = dyn Fn(&str, &Value, bool) -> bool + Send + Sync;

/// Which tool calls need a person's approval, beyond the ones a tool asks for itself
/// ([`crate::tool::Tool::needs_approval`]). Register it on the runtime
/// ([`crate::RuntimeBuilder::approval_policy`]) or the dispatcher (as a service). The rules add
/// up: a call needs approval when any of them says so. A read-only scope still withholds tools
/// that are not read-only; approval is for what the scope allows.
#[derive(Clone, Default)]
pub struct ApprovalPolicy {
    tools: BTreeSet<String>,
    side_effects: bool,
    when: Vec<Arc<Predicate>>,
}

impl std::fmt::Debug for ApprovalPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalPolicy")
            .field("tools", &self.tools)
            .field("side_effects", &self.side_effects)
            .field("when", &self.when.len())
            .finish()
    }
}

impl ApprovalPolicy {
    /// A policy that asks for nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls of the tool named `name` need approval.
    #[must_use]
    pub fn tool(mut self, name: impl Into<String>) -> Self {
        self.tools.insert(name.into());
        self
    }

    /// Calls of every tool that is not read-only need approval.
    #[must_use]
    pub fn side_effects(mut self) -> Self {
        self.side_effects = true;
        self
    }

    /// Calls for which `rule(tool name, arguments, read_only)` is true need approval.
    #[must_use]
    pub fn when(
        mut self,
        rule: impl Fn(&str, &Value, bool) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.when.push(Arc::new(rule));
        self
    }

    /// Whether a call of `tool` (read-only or not) with `arguments` needs approval.
    pub(crate) fn requires(&self, tool: &str, arguments: &Value, read_only: bool) -> bool {
        self.tools.contains(tool)
            || (self.side_effects && !read_only)
            || self
                .when
                .iter()
                .any(|rule| rule(tool, arguments, read_only))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_add_up() {
        let none = ApprovalPolicy::new();
        assert!(!none.requires("send_mail", &Value::Null, false));
        let by_name = ApprovalPolicy::new().tool("send_mail");
        assert!(by_name.requires("send_mail", &Value::Null, true));
        assert!(!by_name.requires("lookup", &Value::Null, false));
        let effects = ApprovalPolicy::new().side_effects();
        assert!(effects.requires("lookup", &Value::Null, false));
        assert!(!effects.requires("lookup", &Value::Null, true));
        let big = ApprovalPolicy::new().when(|tool, args, _| {
            tool == "refund" && args["amount"].as_f64().is_some_and(|a| a > 100.0)
        });
        assert!(big.requires("refund", &serde_json::json!({"amount": 250}), false));
        assert!(!big.requires("refund", &serde_json::json!({"amount": 20}), false));
    }
}
