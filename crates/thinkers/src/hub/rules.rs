//! Ready-made admission rules for a [`super::ToolHub`].

use super::Grant;
use crate::job::ScopeGuard;
use crate::tool::ToolProvider;

/// A tool rule: a tool with side effects (not read-only) is admitted only in a scope that binds
/// the identity axis `axis` (for example `ticket`), so every side effect is attributable.
pub fn side_effects_need_axis(
    axis: impl Into<String>,
) -> impl Fn(&dyn ToolProvider, &ScopeGuard) -> Grant + Send + Sync + 'static {
    let axis = axis.into();
    move |tool, scope| {
        if tool.read_only() || scope.axis(&axis).is_some() {
            Grant::Admit
        } else {
            Grant::refuse(format!(
                "`{}` has side effects and is admitted only in a flow bound to a `{axis}`",
                tool.name()
            ))
        }
    }
}
