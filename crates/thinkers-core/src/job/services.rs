//! Shared services jobs look up by type (catalog, model clients, stores).

use std::any::{Any, TypeId};
use std::sync::Arc;

/// A type map of shared services, fixed when the dispatcher is built.
#[derive(Default, Clone)]
pub struct Services {
    map: foldhash::HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("count", &self.map.len())
            .finish()
    }
}

impl Services {
    /// Register a service, replacing one of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, service: Arc<T>) {
        self.map.insert(TypeId::of::<T>(), service);
    }

    /// Register every service of `other`, replacing services of the same types.
    pub(crate) fn extend(&mut self, other: Self) {
        self.map.extend(other.map);
    }

    /// Look a service up.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.map
            .get(&TypeId::of::<T>())
            .and_then(|s| s.clone().downcast::<T>().ok())
    }

    /// Look a service up, or fail with a system error naming the missing type.
    pub fn require<T: Send + Sync + 'static>(&self) -> crate::Result<Arc<T>> {
        self.get::<T>().ok_or_else(|| {
            crate::Error::system(
                "dispatcher services",
                format!(
                    "no service of type {} is registered",
                    std::any::type_name::<T>()
                ),
            )
        })
    }
}
