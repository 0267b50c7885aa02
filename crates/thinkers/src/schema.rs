//! Schemas built once per Rust type and shared by every user of that type.
//!
//! A thinker, a tool provider or a one-call tool is often constructed per request (a server
//! builds a thinker per incoming question), and generating a JSON Schema walks the type with
//! `schemars` and allocates a tree of values: tens of microseconds each time. The schema of a
//! type never changes within a process, so it is generated on first use and handed out as an
//! [`Arc`] from then on; the trees are shared, not copied, into every request that carries them.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, PoisonError, RwLock};

use schemars::JsonSchema;
use serde_json::Value;

type Shared = Arc<dyn Any + Send + Sync>;

static CACHE: LazyLock<RwLock<HashMap<TypeId, Shared>>> = LazyLock::new(Default::default);

/// The value `build` makes for the key type `K`, built once per process and shared. Distinct
/// value types under one key type are distinct entries.
pub(crate) fn per_type<K: ?Sized + 'static, V: Send + Sync + 'static>(
    build: impl FnOnce() -> V,
) -> Arc<V> {
    let key = TypeId::of::<(fn() -> Box<K>, V)>();
    if let Some(hit) = CACHE
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
        .and_then(|v| Arc::clone(v).downcast::<V>().ok())
    {
        return hit;
    }
    // Built outside the lock: a schema of a type may itself ask for the schemas of others.
    let built = Arc::new(build());
    let mut cache = CACHE.write().unwrap_or_else(PoisonError::into_inner);
    let entry = cache
        .entry(key)
        .or_insert_with(|| Arc::clone(&built) as Shared);
    Arc::clone(entry).downcast::<V>().unwrap_or(built)
}

/// The JSON Schema of `T` (`schemars` defaults), generated once per process.
pub(crate) fn of<T: JsonSchema + ?Sized + 'static>() -> Arc<Value> {
    per_type::<T, Value>(|| serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null))
}

/// Decode a value into `T`, reading it in place. Only when that fails is it decoded again with
/// the path of every field tracked, so the error can name where it failed: the path costs an
/// allocation per field, which a value that fits (nearly every one) does not pay.
pub(crate) fn decode_tracked<T: serde::de::DeserializeOwned>(
    value: &Value,
) -> Result<T, serde_path_to_error::Error<serde_json::Error>> {
    match T::deserialize(value) {
        Ok(decoded) => Ok(decoded),
        Err(_) => serde_path_to_error::deserialize(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Probe {
        term: String,
    }

    #[test]
    fn a_schema_is_built_once_and_shared() {
        let a = of::<Probe>();
        let b = of::<Probe>();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a["properties"]["term"]["type"], "string");
    }

    #[test]
    fn value_types_under_one_key_are_distinct_entries() {
        let n = per_type::<Probe, u32>(|| 7);
        let s = per_type::<Probe, String>(|| "seven".to_owned());
        assert_eq!((*n, s.as_str()), (7, "seven"));
        assert_eq!(*per_type::<Probe, u32>(|| 8), 7, "built once");
    }
}
