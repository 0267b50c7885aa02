//! The expansion of `#[tool]`: arguments, the input struct, the unit struct and its `Tool` impl.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, ExprLit, FnArg, GenericArgument, Ident, ItemFn, Lit, LitStr, Meta, Pat,
    PathArguments, ReturnType, Type,
};

/// What the attribute's arguments say.
#[derive(Default)]
struct Args {
    read_only: bool,
    idempotent: bool,
    name: Option<LitStr>,
    params: Vec<(Ident, LitStr)>,
}

fn parse_args(attr: TokenStream) -> syn::Result<Args> {
    let mut args = Args::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("read_only") {
            args.read_only = true;
            Ok(())
        } else if meta.path.is_ident("idempotent") {
            args.idempotent = true;
            Ok(())
        } else if meta.path.is_ident("name") {
            args.name = Some(meta.value()?.parse()?);
            Ok(())
        } else if meta.path.is_ident("params") {
            meta.parse_nested_meta(|param| {
                let ident = param.path.get_ident().cloned().ok_or_else(|| {
                    param.error("a parameter description is `name = \"what it is\"`")
                })?;
                let text: LitStr = param.value()?.parse()?;
                args.params.push((ident, text));
                Ok(())
            })
        } else {
            Err(meta.error(
                "unknown argument of #[tool]; expected `read_only`, `idempotent`, \
                 `name = \"…\"` or `params(name = \"…\", …)`",
            ))
        }
    });
    parser.parse2(attr)?;
    Ok(args)
}

/// The doc comment of the function, lines joined, common indentation trimmed.
fn doc_text(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    lines
        .iter()
        .map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end())
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// `word_count` → `WordCount`.
fn camel(name: &str) -> String {
    name.split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect::<String>()
            })
        })
        .collect()
}

/// Whether a parameter type is a reference to `ToolContext`.
fn is_context(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => match &*r.elem {
            Type::Path(p) => p
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "ToolContext"),
            _ => false,
        },
        _ => false,
    }
}

/// The success type of a `Result<T>` / `Result<T, E>` return type.
fn output_type(ret: &ReturnType) -> syn::Result<Type> {
    let err = |span: Span| {
        syn::Error::new(
            span,
            "a tool returns a `Result` whose success type is its output, for example \
             `thinkers::Result<String>`",
        )
    };
    let ReturnType::Type(_, ty) = ret else {
        return Err(err(ret.span()));
    };
    let Type::Path(path) = &**ty else {
        return Err(err(ty.span()));
    };
    let Some(last) = path.path.segments.last() else {
        return Err(err(ty.span()));
    };
    if last.ident != "Result" {
        return Err(err(ty.span()));
    }
    let PathArguments::AngleBracketed(generics) = &last.arguments else {
        return Err(err(ty.span()));
    };
    match generics.args.first() {
        Some(GenericArgument::Type(out)) => Ok(out.clone()),
        _ => Err(err(ty.span())),
    }
}

/// One input parameter: its name, type and description.
struct Param {
    ident: Ident,
    ty: Type,
    doc: Option<LitStr>,
}

pub(crate) fn tool(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut args = parse_args(attr)?;
    let func: ItemFn = syn::parse2(item)?;
    let sig = &func.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            "#[tool] goes on an `async fn`",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "a tool function cannot be generic: its parameters are the model's input schema",
        ));
    }
    let description = doc_text(&func.attrs);
    if description.is_empty() {
        return Err(syn::Error::new(
            sig.ident.span(),
            "a tool needs a doc comment: it is the description the model reads",
        ));
    }
    let output = output_type(&sig.output)?;

    let mut context = None;
    let mut params = Vec::new();
    for (index, input) in sig.inputs.iter().enumerate() {
        let FnArg::Typed(typed) = input else {
            return Err(syn::Error::new(
                input.span(),
                "a tool function takes no `self`",
            ));
        };
        if index == 0 && is_context(&typed.ty) {
            context = Some(typed.clone());
            continue;
        }
        let Pat::Ident(pat) = &*typed.pat else {
            return Err(syn::Error::new(
                typed.pat.span(),
                "a tool parameter is a plain name (it becomes a field of the input)",
            ));
        };
        let position = args.params.iter().position(|(n, _)| *n == pat.ident);
        let doc = position.map(|at| args.params.remove(at).1);
        params.push(Param {
            ident: pat.ident.clone(),
            ty: (*typed.ty).clone(),
            doc,
        });
    }
    if let Some((unknown, _)) = args.params.first() {
        return Err(syn::Error::new(
            unknown.span(),
            format!("`params` describes `{unknown}`, which is not a parameter of the function"),
        ));
    }

    let vis = &func.vis;
    let fn_name = &sig.ident;
    let tool_name = args
        .name
        .clone()
        .unwrap_or_else(|| LitStr::new(&fn_name.to_string(), fn_name.span()));
    let input_ident = format_ident!("{}Input", camel(&fn_name.to_string()));
    let read_only = args.read_only;
    let idempotent = args.idempotent;
    let attrs: Vec<&Attribute> = func.attrs.iter().collect();
    let body = &func.block;
    let ret = &sig.output;
    let input_doc = format!("The input of the `{}` tool.", tool_name.value());

    let fields = params.iter().map(|p| {
        let (ident, ty) = (&p.ident, &p.ty);
        let doc = p.doc.as_ref().map(|d| quote! { #[doc = #d] });
        quote! { #doc pub #ident: #ty, }
    });
    let run_params = sig.inputs.iter();
    let call_context = context.as_ref().map(|_| quote! { cx, });
    let call_args = params.iter().map(|p| {
        let ident = &p.ident;
        quote! { ::core::clone::Clone::clone(&input.#ident), }
    });
    let cx_name = if context.is_some() {
        quote! { cx }
    } else {
        quote! { _cx }
    };

    Ok(quote! {
        #[doc = #input_doc]
        #[derive(Debug, Clone, ::thinkers::__private::serde::Deserialize, ::thinkers::__private::schemars::JsonSchema)]
        #[serde(crate = "::thinkers::__private::serde")]
        #[schemars(crate = "::thinkers::__private::schemars")]
        #vis struct #input_ident {
            #(#fields)*
        }

        #(#attrs)*
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #fn_name;

        impl #fn_name {
            /// The tool's body, callable directly.
            #vis async fn run(#(#run_params),*) #ret #body
        }

        impl ::thinkers::tool::Tool for #fn_name {
            const NAME: &'static str = #tool_name;
            type Input = #input_ident;
            type Output = #output;

            fn description(&self) -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(#description)
            }

            fn read_only(&self) -> bool {
                #read_only
            }

            fn idempotent(&self) -> bool {
                #idempotent
            }

            async fn call(
                &self,
                input: &#input_ident,
                #cx_name: &::thinkers::tool::ToolContext<'_>,
            ) -> ::thinkers::Result<#output> {
                let _ = input;
                Self::run(#call_context #(#call_args)*)
                    .await
                    .map_err(::core::convert::Into::into)
            }
        }
    })
}
