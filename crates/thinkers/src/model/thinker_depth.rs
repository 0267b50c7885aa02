//! The depth a thinker runs at, as jobs below it read it: a thinker publishes its effective depth
//! on its job's metadata, and every thinker, one-call tool or model call started under it clamps
//! its own depth to it.

use crate::job::JobContext;
use crate::model::Depth;

/// The metadata key under which a running thinker publishes its effective depth.
pub const META_THINKER_DEPTH: &str = "thinker.depth";

/// The depth of the nearest thinker this job runs under (its parent, or a tool job of a thinker,
/// or any further ancestor), read from what that thinker published under
/// [`META_THINKER_DEPTH`]. `None` when no thinker is above this job.
pub(crate) fn parent_thinker_depth(cx: &JobContext) -> Option<Depth> {
    // The shallowest any ancestor published: a job between the thinker and this one that
    // publishes a deeper depth of its own lowers nothing and raises nothing.
    cx.ancestors_metadata(META_THINKER_DEPTH)
        .iter()
        .filter_map(|v| v.as_str()?.parse::<Depth>().ok())
        .reduce(|a, b| a.clamp_to(b))
}

/// The effective depth of a run: the input's, clamped to the calling thinker's, published on the
/// job's metadata under [`META_THINKER_DEPTH`] so thinkers started below read it.
pub(crate) fn effective_depth(requested: Depth, cx: &JobContext) -> Depth {
    let depth = match parent_thinker_depth(cx) {
        Some(parent) => requested.clamp_to(parent),
        None => requested,
    };
    cx.set_metadata(META_THINKER_DEPTH, serde_json::Value::from(depth.as_str()));
    depth
}
