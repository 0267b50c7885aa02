//! A contract the compiler enforces, pinned with trybuild: an MCP tool is called only as a job
//! the dispatcher admitted (`tests/compile_fail/mcp_call_outside_admission.rs` must fail to
//! compile with the error in the `.stderr` beside it).
//!
//! After a change of compiler message, regenerate with `TRYBUILD=overwrite` and read the new
//! `.stderr` files before committing them.

#[test]
fn an_mcp_tool_is_called_only_as_an_admitted_job() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/compile_fail/*.rs");
}
