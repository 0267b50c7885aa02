//! Contracts the compiler enforces (issue 30, point 2), pinned with trybuild: each file in
//! `tests/compile_fail/` must fail to compile with the error in its `.stderr` beside it.
//!
//! * an orchestrator cannot declare requirements or a timeout, nor implement `Job` itself
//!   (`orchestrator_*`);
//! * a loopless thinker (toolless, decision) has no `tool` method: no tool could ever be offered
//!   to its model (`loopless_thinker_with_tool`);
//! * a model call cannot be sent without a permit: the client's sends are crate-private, only
//!   the dispatcher acquires, and nobody outside its kernel makes a `Permit`, the `Resources`
//!   that `converse_bound` needs or a `JobContext` (`send_without_permit`,
//!   `acquire_outside_dispatcher`, `resources_outside_dispatcher`, `resources_forged`,
//!   `context_forged`); an MCP tool is called only as an admitted job (`thinkers-mcp`'s
//!   `tests/compile_fail/mcp_call_outside_admission`);
//! * no door takes a scope wider than the parent's: the one that takes any scope is the
//!   kernel's (`scope_widened`); `FanOut::narrowed` refuses a widening at run time;
//! * a `#[thinkers::tool]` fn without a doc comment, which is the description the model reads
//!   (`tool_without_doc`).
//!
//! After a change of compiler message, regenerate with `TRYBUILD=overwrite` and read the new
//! `.stderr` files before committing them.

#[test]
fn contracts_the_type_system_enforces() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/compile_fail/*.rs");
}
