//! Loading a catalog from TOML text: the document's shape, then every provider and entry,
//! validated field by field. The format is documented in `crates/thinkers/catalogs/README.md`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use toml::{Spanned, Value};

use super::azure::{read_auth, read_azure};
use super::cache::{BedrockCaching, CacheTtl, PromptCache, read_prompt_cache};
use super::entry::{Entry, Pricing, Reasoning};
use super::error::{CatalogError, Location, Problem};
use super::fields::{Fields, RawTable, Source};
use super::provider::{Dialect, Provider, SIM_PLACEHOLDER};
use super::spend::{read_entry_caps, read_table_caps};
use crate::dispatch::{CapOn, SpendCap};
use crate::job::Seat;
use crate::model::Tokenizer;
use crate::model::{Depth, Grade, OutputSize};

/// The document's top level. Providers and entries are kept as tables so each field can be
/// checked with its own message.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDocument {
    #[serde(default)]
    providers: BTreeMap<String, Spanned<RawTable>>,
    #[serde(default)]
    entries: Vec<Spanned<RawTable>>,
    /// The caps on every call (`[spend]`).
    #[serde(default)]
    spend: Option<Spanned<Value>>,
}

/// What a loaded document holds.
pub(super) struct Loaded {
    pub(super) providers: BTreeMap<String, Provider>,
    pub(super) entries: Vec<Entry>,
    /// The spending caps its `spend` tables state.
    pub(super) caps: Vec<SpendCap>,
}

/// Parse and validate a whole document.
pub(super) fn load(text: &str, source_name: &str) -> Result<Loaded, CatalogError> {
    load_keyed(text, source_name, &BTreeSet::new())
}

/// [`load`], where the providers named in `keyed` get their key in code (so they need no
/// `api_key_env`).
pub(super) fn load_keyed(
    text: &str,
    source_name: &str,
    keyed: &BTreeSet<String>,
) -> Result<Loaded, CatalogError> {
    let source = Source {
        name: source_name,
        text,
    };
    let doc: RawDocument = toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |s| source.line_col(s.start));
        CatalogError::Syntax {
            source_name: source_name.to_owned(),
            line,
            column,
            message: e.message().to_owned(),
        }
    })?;

    let mut caps = Vec::new();
    if let Some(spend) = doc.spend {
        let top = RawTable::from([("spend".to_owned(), spend)]);
        read_table_caps(
            &mut Fields::new(source, Location::Document, &top),
            &CapOn::Every,
            &mut caps,
        )?;
    }

    let mut providers = BTreeMap::new();
    for (name, table) in &doc.providers {
        let line = source.line_col(table.span().start).0;
        let provider = read_provider(
            source,
            name,
            line,
            table.get_ref(),
            keyed.contains(name),
            &mut caps,
        )?;
        providers.insert(name.clone(), provider);
    }

    let mut entries: Vec<Entry> = Vec::with_capacity(doc.entries.len());
    let mut ids = BTreeSet::new();
    for (index, table) in doc.entries.iter().enumerate() {
        let line = source.line_col(table.span().start).0;
        let entry = read_entry(
            source,
            index,
            line,
            table.get_ref(),
            &providers,
            &mut ids,
            &mut caps,
        )?;
        entries.push(entry);
    }
    Ok(Loaded {
        providers,
        entries,
        caps,
    })
}

fn read_provider(
    source: Source<'_>,
    name: &str,
    line: usize,
    table: &RawTable,
    keyed: bool,
    caps: &mut Vec<SpendCap>,
) -> Result<Provider, CatalogError> {
    let location = Location::Provider {
        name: name.to_owned(),
        line: Some(line),
    };
    let mut f = Fields::new(source, location, table);
    let dialect_name = f.required_string("dialect")?;
    let dialect: Dialect = dialect_name
        .parse()
        .map_err(|e: crate::model::ParseNameError| {
            f.error(
                "dialect",
                f.value_of("dialect"),
                Problem::UnknownDialect,
                e.to_string(),
            )
        })?;
    let base_url = f.required_string("base_url")?.trim_end_matches('/');
    let scheme_ok = ["http://", "https://", SIM_PLACEHOLDER]
        .iter()
        .any(|p| base_url.starts_with(p));
    if !scheme_ok {
        return Err(f.error(
            "base_url",
            f.value_of("base_url"),
            Problem::BadValue,
            format!("must start with http://, https:// or {SIM_PLACEHOLDER}"),
        ));
    }
    let api_key_env = f.string("api_key_env")?.map(str::to_owned);
    if api_key_env.is_none() && dialect.requires_key() && !keyed {
        return Err(f.error(
            "api_key_env",
            None,
            Problem::Missing,
            format!("a provider of dialect `{dialect}` needs the name of its API-key variable"),
        ));
    }
    let structured_output = match f.string("structured_output")? {
        None => None,
        Some(mode) => Some(mode.parse().map_err(|e: crate::model::ParseNameError| {
            f.error(
                "structured_output",
                f.value_of("structured_output"),
                Problem::BadValue,
                e.to_string(),
            )
        })?),
    };
    let stream_tools = f.boolean("stream_tools")?;
    let prompt_cache = f.boolean("prompt_cache")?.unwrap_or(true);
    let azure = read_azure(&mut f, dialect, base_url)?;
    let auth = read_auth(&mut f, dialect, azure.is_some())?;
    let aws = if dialect == Dialect::BedrockConverse {
        Some(read_aws(&mut f)?)
    } else {
        None
    };
    read_table_caps(&mut f, &CapOn::Provider(name.to_owned()), caps)?;
    f.finish()?;
    Ok(Provider {
        name: name.to_owned(),
        dialect,
        base_url: base_url.to_owned(),
        api_key_env,
        key: None,
        structured_output: structured_output.unwrap_or_default(),
        structured_output_set: structured_output.is_some(),
        stream_tools: stream_tools.unwrap_or(true),
        stream_tools_set: stream_tools.is_some(),
        azure,
        auth,
        aws,
        prompt_cache,
    })
}

/// The region and credential variables of a `bedrock-converse` provider (see
/// [`super::AwsSettings`]).
fn read_aws<'a>(f: &mut Fields<'a>) -> Result<super::AwsSettings, CatalogError> {
    let mut aws = super::AwsSettings {
        region: f.string("region")?.map(str::to_owned),
        ..super::AwsSettings::default()
    };
    if let Some(var) = f.string("access_key_env")? {
        var.clone_into(&mut aws.access_key_env);
    }
    if let Some(var) = f.string("secret_key_env")? {
        var.clone_into(&mut aws.secret_key_env);
    }
    if let Some(var) = f.string("session_token_env")? {
        var.clone_into(&mut aws.session_token_env);
    }
    Ok(aws)
}

fn read_entry(
    source: Source<'_>,
    index: usize,
    line: usize,
    table: &RawTable,
    providers: &BTreeMap<String, Provider>,
    ids: &mut BTreeSet<String>,
    caps: &mut Vec<SpendCap>,
) -> Result<Entry, CatalogError> {
    let mut f = Fields::new(
        source,
        Location::Entry {
            id: None,
            index,
            line: Some(line),
        },
        table,
    );
    let id = f.required_string("id")?.to_owned();
    f.set_location(Location::Entry {
        id: Some(id.clone()),
        index,
        line: Some(line),
    });
    if !ids.insert(id.clone()) {
        return Err(f.error(
            "id",
            f.value_of("id"),
            Problem::Duplicate,
            "another entry already uses this id",
        ));
    }

    let provider = f.required_string("provider")?.to_owned();
    if !providers.contains_key(&provider) {
        let known: Vec<&str> = providers.keys().map(String::as_str).collect();
        return Err(f.error(
            "provider",
            f.value_of("provider"),
            Problem::UnknownProvider,
            format!(
                "no such provider; the catalog defines: {}",
                known.join(", ")
            ),
        ));
    }
    let model = f.required_string("model")?.to_owned();
    let grade = read_grade(&mut f)?;

    let context_window = f.required_count("context_window", u64::from(u32::MAX))?;
    if context_window == 0 {
        return Err(f.error(
            "context_window",
            f.value_of("context_window"),
            Problem::ZeroContextWindow,
            "the context window must be at least 1 token",
        ));
    }
    let output_ceiling = f.required_count("output_ceiling", u64::from(u32::MAX))?;
    if output_ceiling == 0 || output_ceiling > context_window {
        return Err(f.error(
            "output_ceiling",
            f.value_of("output_ceiling"),
            Problem::BadOutputCeiling,
            format!("must be from 1 to the context window ({context_window})"),
        ));
    }

    let tpm = f.limit("tpm", u64::MAX >> 1)?;
    let itpm = f.limit("itpm", u64::MAX >> 1)?;
    let otpm = f.limit("otpm", u64::MAX >> 1)?;
    let rpm = f.limit("rpm", u64::MAX >> 1)?;
    let concurrency = f.limit("concurrency", u64::from(u32::MAX))?;
    let burst = f
        .seconds("burst_seconds", 60.0)?
        .map(std::time::Duration::from_secs_f64);
    // The provider was checked to exist above.
    let (dialect, provider_caches) = providers
        .get(&provider)
        .map_or((Dialect::OpenAi, true), |p| (p.dialect, p.prompt_cache));
    let prompt_cache = read_prompt_cache(&mut f, dialect, provider_caches)?;
    let ttl = match prompt_cache {
        PromptCache::On(ttl) => ttl,
        PromptCache::Off => CacheTtl::default(),
    };
    // Anthropic prices a cache write above the input price, on its API and on Bedrock.
    let priced_writes = match dialect {
        Dialect::Anthropic => Some(ttl),
        Dialect::BedrockConverse if BedrockCaching::of(&model) == BedrockCaching::Claude => {
            Some(CacheTtl::FiveMinutes)
        }
        _ => None,
    };
    let pricing = read_pricing(&mut f, priced_writes)?;
    let currency = pricing.as_ref().map(|p| p.currency.as_ref());
    read_entry_caps(&mut f, &id, &provider, currency, caps)?;
    let cache_reads_count = f
        .boolean("cache_reads_count")?
        .unwrap_or(dialect != Dialect::Anthropic);
    let (reasoning, effort_tokens) = read_reasoning(&mut f)?;
    let thinking = f.boolean("thinking")?.unwrap_or(false);
    let native_tools = f.boolean("native_tools")?.unwrap_or(true);
    let open = f.boolean("open")?.unwrap_or(true);
    let compliance = read_compliance(&mut f)?;
    let output_budgets = read_output_budgets(&mut f, output_ceiling)?;
    let tokenizer = read_tokenizer(&mut f)?;
    // The behaviour profile belongs to the simulated provider; the runtime never reads it.
    f.ignore("sim");
    f.finish()?;

    Ok(Entry {
        budget: Seat::budget_for(&id).into(),
        id: id.into(),
        provider,
        model: model.into(),
        grade,
        // Both were checked against u32::MAX above.
        context_window: u32::try_from(context_window).unwrap_or(u32::MAX),
        output_ceiling: u32::try_from(output_ceiling).unwrap_or(u32::MAX),
        tpm,
        itpm,
        otpm,
        rpm,
        burst,
        concurrency: concurrency.map(|c| u32::try_from(c).unwrap_or(u32::MAX)),
        pricing,
        reasoning,
        effort_tokens,
        thinking,
        native_tools,
        open,
        compliance,
        output_budgets,
        tokenizer,
        prompt_cache,
        cache_reads_count,
    })
}

fn read_tokenizer(f: &mut Fields<'_>) -> Result<Tokenizer, CatalogError> {
    let Some(name) = f.string("tokenizer")? else {
        return Ok(Tokenizer::default());
    };
    Tokenizer::from_name(name).ok_or_else(|| {
        f.error(
            "tokenizer",
            f.value_of("tokenizer"),
            Problem::BadValue,
            format!(
                "unknown tokenizer; use one of: {}",
                Tokenizer::NAMES.join(", ")
            ),
        )
    })
}

fn read_grade(f: &mut Fields<'_>) -> Result<Grade, CatalogError> {
    let name = f.required_string("grade")?;
    let unknown =
        |reason: String| f.error("grade", f.value_of("grade"), Problem::UnknownGrade, reason);
    match name.parse::<Grade>() {
        Ok(grade) if grade.is_rung() => Ok(grade),
        Ok(_) => Err(unknown(
            "`ceiling` is not a rung; an entry must be one of small, medium, large, xl, mega"
                .to_owned(),
        )),
        Err(e) => Err(unknown(e.to_string())),
    }
}

/// The price fields of an entry: none of them (the entry has no prices, its cost is unknown),
/// or `price_in`, `price_out` and `currency` together (`price_cached` and `price_cache_write`
/// optional; an absent write price follows [`Pricing::cache_write`]).
///
/// `priced_writes` is the TTL of an entry whose provider prices cache writes apart (Anthropic's
/// models), `None` for one that charges the input price.
fn read_pricing(
    f: &mut Fields<'_>,
    priced_writes: Option<CacheTtl>,
) -> Result<Option<Pricing>, CatalogError> {
    const FIELDS: [&str; 5] = [
        "price_in",
        "price_out",
        "price_cached",
        "price_cache_write",
        "currency",
    ];
    if FIELDS.iter().all(|field| f.value_of(field).is_none()) {
        return Ok(None);
    }
    let missing = |f: &Fields<'_>, field: &str| {
        f.error(
            field,
            None,
            Problem::Missing,
            "an entry with prices needs price_in, price_out and currency; leave every price \
             field out for an entry whose cost is unknown",
        )
    };
    let input = f.price("price_in")?.ok_or_else(|| missing(f, "price_in"))?;
    let output = f
        .price("price_out")?
        .ok_or_else(|| missing(f, "price_out"))?;
    let cached = f.price("price_cached")?.unwrap_or(input);
    let cache_write = f
        .price("price_cache_write")?
        .unwrap_or_else(|| priced_writes.map_or(input, |ttl| input * ttl.write_multiplier()));
    let currency = f
        .string("currency")?
        .ok_or_else(|| missing(f, "currency"))?;
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(f.error(
            "currency",
            f.value_of("currency"),
            Problem::BadCurrency,
            "a currency is an ISO 4217 code of three upper-case letters, for example USD",
        ));
    }
    Ok(Some(Pricing {
        input,
        output,
        cached,
        cache_write,
        currency: currency.into(),
    }))
}

/// `reasoning_tokens` and `reasoning_effort`, with the entry's own reservation per effort name.
/// Alone, `reasoning_tokens` is the budget each depth sends. Beside `reasoning_effort` it is what
/// each depth's effort name reserves (where it gives none, [`super::EFFORT_TOKENS`] does), so it
/// may name only depths the effort names: a reservation for a depth that asks for no reasoning
/// is refused as a conflict.
fn read_reasoning(f: &mut Fields<'_>) -> Result<(Reasoning, BTreeMap<Depth, u32>), CatalogError> {
    let tokens = match f.table("reasoning_tokens")? {
        Some(pairs) => {
            let mut map = BTreeMap::new();
            for (key, value) in pairs {
                let depth = read_depth(f, "reasoning_tokens", key, value)?;
                let n = f.nested_count("reasoning_tokens", key, value, u64::from(u32::MAX))?;
                map.insert(depth, u32::try_from(n).unwrap_or(u32::MAX));
            }
            Some(map)
        }
        None => None,
    };
    let effort = match f.table("reasoning_effort")? {
        Some(pairs) => {
            let mut map = BTreeMap::new();
            for (key, value) in pairs {
                let depth = read_depth(f, "reasoning_effort", key, value)?;
                let name = f.nested_string("reasoning_effort", key, value)?;
                map.insert(depth, name.to_owned());
            }
            Some(map)
        }
        None => None,
    };
    match (tokens, effort) {
        (Some(tokens), Some(effort)) => {
            if let Some(depth) = tokens.keys().find(|d| !effort.contains_key(d)) {
                let field = format!("reasoning_tokens.{}", depth.as_str());
                return Err(f.error(
                    &field,
                    None,
                    Problem::Conflict,
                    format!(
                        "beside reasoning_effort, reasoning_tokens gives what each effort name \
                         reserves, and reasoning_effort names none for `{}`",
                        depth.as_str()
                    ),
                ));
            }
            Ok((Reasoning::Effort(effort), tokens))
        }
        (Some(tokens), None) => Ok((Reasoning::Tokens(tokens), BTreeMap::new())),
        (None, Some(effort)) => Ok((Reasoning::Effort(effort), BTreeMap::new())),
        (None, None) => Ok((Reasoning::None, BTreeMap::new())),
    }
}

fn read_depth(
    f: &Fields<'_>,
    field: &str,
    key: &str,
    value: &Value,
) -> Result<Depth, CatalogError> {
    // Catalog keys are exact: the lower-case names only.
    Depth::ALL
        .into_iter()
        .find(|d| d.as_str() == key)
        .ok_or_else(|| {
            let reason = crate::model::ParseNameError::new(
                "depth",
                key,
                &["immediate", "quick", "standard", "thorough"],
            );
            f.error(
                &format!("{field}.{key}"),
                Some(value),
                Problem::UnknownDepth,
                reason.to_string(),
            )
        })
}

fn read_compliance(f: &mut Fields<'_>) -> Result<BTreeMap<String, String>, CatalogError> {
    let mut tags = BTreeMap::new();
    for (key, value) in f.table("compliance")?.unwrap_or_default() {
        let tag = f.nested_string("compliance", key, value)?;
        tags.insert(key.to_owned(), tag.to_owned());
    }
    Ok(tags)
}

fn read_output_budgets(f: &mut Fields<'_>, ceiling: u64) -> Result<[Option<u32>; 4], CatalogError> {
    let mut budgets = [None; 4];
    for (key, value) in f.table("output_budgets")?.unwrap_or_default() {
        let dotted = format!("output_budgets.{key}");
        let index = OutputSize::RUNGS
            .iter()
            .position(|r| r.name() == Some(key))
            .ok_or_else(|| {
                f.error(
                    &dotted,
                    Some(value),
                    Problem::UnknownOutputSize,
                    "only the rungs verdict, compact, standard and extended can be overridden \
                     (max is always the output ceiling)",
                )
            })?;
        let n = f.nested_count("output_budgets", key, value, ceiling)?;
        if n == 0 {
            return Err(f.error(
                &dotted,
                Some(value),
                Problem::BadValue,
                "an output budget must be at least 1 token",
            ));
        }
        if let Some(slot) = budgets.get_mut(index) {
            *slot = u32::try_from(n).ok();
        }
    }
    Ok(budgets)
}
