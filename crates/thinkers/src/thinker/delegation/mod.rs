//! Delegation: the built-in doors a thinker asks through (`request_tools`, `request_skill`, the
//! hub's catalogs) and the sub-thinker it hands a part of its task to.

pub mod doors;
pub mod subthinker;
