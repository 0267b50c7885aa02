//! The tools several test binaries share: a read-only glossary lookup and a side-effecting
//! delete, both counting their calls. Included with `#[path = "../common/glossary.rs"]`; each
//! binary uses what it needs.
#![allow(dead_code)]

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::tool::{Tool, ToolContext};

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct LookupInput {
    /// The term to look up.
    pub term: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Definition {
    pub term: String,
    pub meaning: String,
}

/// A read-only glossary lookup that counts its calls.
#[derive(Debug, Default, Clone)]
pub struct Lookup {
    pub calls: Arc<AtomicUsize>,
}

impl Tool for Lookup {
    const NAME: &'static str = "lookup";
    type Input = LookupInput;
    type Output = Definition;
    fn description(&self) -> Cow<'static, str> {
        "Look a term up in the glossary.".into()
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn call(&self, input: &LookupInput, _: &ToolContext<'_>) -> thinkers::Result<Definition> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(Definition {
            term: input.term.clone(),
            meaning: format!("the meaning of {}", input.term),
        })
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct DeleteInput {
    /// What to delete.
    pub id: String,
}

/// A tool with side effects: never read-only.
#[derive(Debug, Default, Clone)]
pub struct Delete {
    pub calls: Arc<AtomicUsize>,
}

impl Tool for Delete {
    const NAME: &'static str = "delete_record";
    type Input = DeleteInput;
    type Output = String;
    fn description(&self) -> Cow<'static, str> {
        "Delete a record.".into()
    }
    async fn call(&self, input: &DeleteInput, _: &ToolContext<'_>) -> thinkers::Result<String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(format!("deleted {}", input.id))
    }
}
