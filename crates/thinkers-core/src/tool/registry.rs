//! An ordered, idempotent registry of tool providers: a thinker's palette.

use std::sync::Arc;

use super::ToolProvider;

/// Tool providers by name, in registration order. Registering a name already present replaces
/// nothing and returns `false`; unregistering an absent name is a no-op. Both are idempotent, so
/// state-based reconcile hooks can call them every turn.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn ToolProvider>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| t.name()))
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register a provider unless one of the same name is present. Returns whether it was added.
    pub fn register(&mut self, provider: Arc<dyn ToolProvider>) -> bool {
        if self.contains(provider.name()) {
            return false;
        }
        self.tools.push(provider);
        true
    }

    /// Remove a provider by name. Returns whether one was removed.
    pub fn unregister(&mut self, name: &str) -> bool {
        let before = self.tools.len();
        self.tools.retain(|t| t.name() != name);
        before != self.tools.len()
    }

    /// Whether a provider of this name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name() == name)
    }

    /// A provider by name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn ToolProvider>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// Every provider, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn ToolProvider>> {
        self.tools.iter()
    }

    /// How many providers are registered.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether none is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Whether both hold the very same providers (the same `Arc`s) in the same order.
    pub fn same_providers(&self, other: &Self) -> bool {
        self.tools.len() == other.tools.len()
            && self
                .tools
                .iter()
                .zip(&other.tools)
                .all(|(a, b)| Arc::ptr_eq(a, b))
    }
}
