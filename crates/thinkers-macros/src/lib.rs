//! `#[thinkers::tool]`: a thinkers tool written as an `async fn`.
//!
//! Use it through the `thinkers` crate (`#[thinkers::tool]`); this crate holds only the macro.
//! The function's doc comment is the description the model reads, its parameters are the input
//! schema, and its name is the tool's name. See `thinkers::tool` for the contract the generated
//! code implements.

mod expand;

use proc_macro::TokenStream;

/// Turn an `async fn` into a tool.
///
/// ```text
/// /// Count the words of a text.
/// #[thinkers::tool(read_only, params(text = "The text to count"))]
/// async fn word_count(text: String) -> thinkers::Result<usize> {
///     Ok(text.split_whitespace().count())
/// }
/// // `word_count` is now a unit struct implementing `thinkers::tool::Tool`:
/// // thinker.tool(word_count)
/// ```
///
/// * The function name is the tool name (snake_case, as the model calls it); the tool is a unit
///   struct of that name, and the body stays callable as `word_count::run(…)`.
/// * The doc comment is the description; a tool without one does not compile.
/// * Each parameter is a field of the generated input type `<CamelName>Input` (it derives
///   `Deserialize` and `JsonSchema`; an `Option` parameter may be left out by the model).
///   `params(name = "…")` describes a parameter to the model. Parameter types must be `Clone`.
/// * A first parameter whose type is a reference to `ToolContext` receives the call's context
///   and is not part of the input.
/// * The return type is a `Result` whose success type is the output.
/// * `read_only` declares the tool free of side effects (the default is not read-only);
///   `idempotent` declares that a call repeated with the same idempotency key has no further
///   effect (the default is not idempotent); `name = "…"` overrides the tool name.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand::tool(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}
