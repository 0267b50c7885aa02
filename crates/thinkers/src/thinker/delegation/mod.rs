//! Delegation: the built-in doors a thinker asks through (`request_tools`, `request_skill`, the
//! hub's catalogs), the sub-thinker it hands a part of its task to, and any thinker or doer
//! offered to its model as a tool (`as_tool`).

pub(crate) mod as_tool;
pub(crate) mod doors;
pub(crate) mod subthinker;
