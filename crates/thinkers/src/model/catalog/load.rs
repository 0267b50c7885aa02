//! Loading a catalog from TOML text: serde reads the file's shape ([`super::file`]), then every
//! provider and entry is checked (ranges, names, fields that go together) and turned into a
//! [`Provider`] or an [`Entry`]. The format is documented in `crates/thinkers/catalogs/README.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use toml::Spanned;

use super::azure::{read_auth, read_azure};
use super::cache::{BedrockCaching, CacheTtl, PromptCache, read_prompt_cache};
use super::entry::{Entry, Pricing, Reasoning};
use super::error::{CatalogError, Location, Problem};
use super::fields::{Place, Source};
use super::file::{CatalogFile, EntryTable, ProviderTable, Text};
use super::provider::{Dialect, Provider, SIM_PLACEHOLDER};
use super::spend::{read_entry_caps, read_table_caps};
use crate::dispatch::{CapOn, SpendCap};
use crate::job::Seat;
use crate::model::{Depth, Grade, OutputSize, ParseNameError, Tokenizer};

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
    let file = CatalogFile::parse(source)?;

    let mut caps = Vec::new();
    if let Some(spend) = &file.spend {
        let document = Place::new(source, Location::Document);
        read_table_caps(&document, spend, &CapOn::Every, &mut caps)?;
    }

    let mut providers = BTreeMap::new();
    for (name, table) in &file.providers {
        let at = Place::new(
            source,
            Location::Provider {
                name: name.clone(),
                line: Some(source.line(table.span().start)),
            },
        );
        let provider = read_provider(&at, name, table.get_ref(), keyed.contains(name), &mut caps)?;
        providers.insert(name.clone(), provider);
    }

    let mut entries: Vec<Entry> = Vec::with_capacity(file.entries.len());
    let mut ids = BTreeSet::new();
    for (index, table) in file.entries.iter().enumerate() {
        let entry = table.get_ref();
        let at = Place::new(
            source,
            Location::Entry {
                id: Some(entry.id.get_ref().as_str().to_owned()),
                index,
                line: Some(source.line(table.span().start)),
            },
        );
        entries.push(read_entry(&at, entry, &providers, &mut ids, &mut caps)?);
    }
    Ok(Loaded {
        providers,
        entries,
        caps,
    })
}

fn read_provider(
    at: &Place<'_>,
    name: &str,
    table: &ProviderTable,
    keyed: bool,
    caps: &mut Vec<SpendCap>,
) -> Result<Provider, CatalogError> {
    let dialect: Dialect =
        table
            .dialect
            .get_ref()
            .as_str()
            .parse()
            .map_err(|e: ParseNameError| {
                at.bad(
                    "dialect",
                    &table.dialect,
                    Problem::UnknownDialect,
                    e.to_string(),
                )
            })?;
    let base_url = table.base_url.get_ref().as_str().trim_end_matches('/');
    let scheme_ok = ["http://", "https://", SIM_PLACEHOLDER]
        .iter()
        .any(|p| base_url.starts_with(p));
    if !scheme_ok {
        return Err(at.bad(
            "base_url",
            &table.base_url,
            Problem::BadValue,
            format!("must start with http://, https:// or {SIM_PLACEHOLDER}"),
        ));
    }
    let api_key_env = Text::of(table.api_key_env.as_ref()).map(str::to_owned);
    if api_key_env.is_none() && dialect.requires_key() && !keyed {
        return Err(at.absent(
            "api_key_env",
            Problem::Missing,
            format!("a provider of dialect `{dialect}` needs the name of its API-key variable"),
        ));
    }
    let structured_output = match &table.structured_output {
        None => None,
        Some(mode) => Some(
            mode.get_ref()
                .as_str()
                .parse()
                .map_err(|e: ParseNameError| {
                    at.bad("structured_output", mode, Problem::BadValue, e.to_string())
                })?,
        ),
    };
    let azure = read_azure(at, table, dialect, base_url)?;
    let auth = read_auth(at, table.auth.as_ref(), dialect, azure.is_some())?;
    let aws = read_aws(at, table, dialect)?;
    if let Some(spend) = &table.spend {
        read_table_caps(at, spend, &CapOn::Provider(name.to_owned()), caps)?;
    }
    Ok(Provider {
        name: name.to_owned(),
        dialect,
        base_url: base_url.to_owned(),
        api_key_env,
        key: None,
        structured_output: structured_output.unwrap_or_default(),
        structured_output_set: structured_output.is_some(),
        stream_tools: table.stream_tools.unwrap_or(true),
        stream_tools_set: table.stream_tools.is_some(),
        azure,
        auth,
        aws,
        prompt_cache: table.prompt_cache.unwrap_or(true),
    })
}

/// The region and credential variables of a `bedrock-converse` provider (see
/// [`super::AwsSettings`]); any other dialect refuses them as unknown.
fn read_aws(
    at: &Place<'_>,
    table: &ProviderTable,
    dialect: Dialect,
) -> Result<Option<super::AwsSettings>, CatalogError> {
    if dialect != Dialect::BedrockConverse {
        let fields = [
            ("region", &table.region),
            ("access_key_env", &table.access_key_env),
            ("secret_key_env", &table.secret_key_env),
            ("session_token_env", &table.session_token_env),
        ];
        for (field, value) in fields {
            if let Some(value) = value {
                return Err(at.bad(
                    field,
                    value,
                    Problem::UnknownField,
                    format!("read only for the `bedrock-converse` dialect, not `{dialect}`"),
                ));
            }
        }
        return Ok(None);
    }
    let mut aws = super::AwsSettings {
        region: Text::of(table.region.as_ref()).map(str::to_owned),
        ..super::AwsSettings::default()
    };
    if let Some(var) = Text::of(table.access_key_env.as_ref()) {
        var.clone_into(&mut aws.access_key_env);
    }
    if let Some(var) = Text::of(table.secret_key_env.as_ref()) {
        var.clone_into(&mut aws.secret_key_env);
    }
    if let Some(var) = Text::of(table.session_token_env.as_ref()) {
        var.clone_into(&mut aws.session_token_env);
    }
    Ok(Some(aws))
}

fn read_entry(
    at: &Place<'_>,
    table: &EntryTable,
    providers: &BTreeMap<String, Provider>,
    ids: &mut BTreeSet<String>,
    caps: &mut Vec<SpendCap>,
) -> Result<Entry, CatalogError> {
    let id = table.id.get_ref().as_str();
    if !ids.insert(id.to_owned()) {
        return Err(at.bad(
            "id",
            &table.id,
            Problem::Duplicate,
            "another entry already uses this id",
        ));
    }

    let provider = table.provider.get_ref().as_str();
    let Some(served_by) = providers.get(provider) else {
        let known: Vec<&str> = providers.keys().map(String::as_str).collect();
        return Err(at.bad(
            "provider",
            &table.provider,
            Problem::UnknownProvider,
            format!(
                "no such provider; the catalog defines: {}",
                known.join(", ")
            ),
        ));
    };
    let model = table.model.get_ref().as_str();
    let grade = read_grade(at, &table.grade)?;

    let context_window = at.count("context_window", &table.context_window, u64::from(u32::MAX))?;
    if context_window == 0 {
        return Err(at.bad(
            "context_window",
            &table.context_window,
            Problem::ZeroContextWindow,
            "the context window must be at least 1 token",
        ));
    }
    let output_ceiling = at.count("output_ceiling", &table.output_ceiling, u64::from(u32::MAX))?;
    if output_ceiling == 0 || output_ceiling > context_window {
        return Err(at.bad(
            "output_ceiling",
            &table.output_ceiling,
            Problem::BadOutputCeiling,
            format!("must be from 1 to the context window ({context_window})"),
        ));
    }

    let tpm = at.limit("tpm", table.tpm.as_ref(), u64::MAX >> 1)?;
    let itpm = at.limit("itpm", table.itpm.as_ref(), u64::MAX >> 1)?;
    let otpm = at.limit("otpm", table.otpm.as_ref(), u64::MAX >> 1)?;
    let rpm = at.limit("rpm", table.rpm.as_ref(), u64::MAX >> 1)?;
    let concurrency = at.limit(
        "concurrency",
        table.concurrency.as_ref(),
        u64::from(u32::MAX),
    )?;
    let burst = match &table.burst_seconds {
        None => None,
        Some(value) => Some(Duration::from_secs_f64(at.seconds(
            "burst_seconds",
            value,
            60.0,
        )?)),
    };
    let dialect = served_by.dialect;
    let prompt_cache = read_prompt_cache(
        at,
        table.prompt_cache,
        table.cache_ttl.as_ref(),
        dialect,
        served_by.prompt_cache,
    )?;
    let ttl = match prompt_cache {
        PromptCache::On(ttl) => ttl,
        PromptCache::Off => CacheTtl::default(),
    };
    // Anthropic prices a cache write above the input price, on its API and on Bedrock.
    let priced_writes = match dialect {
        Dialect::Anthropic => Some(ttl),
        Dialect::BedrockConverse if BedrockCaching::of(model) == BedrockCaching::Claude => {
            Some(CacheTtl::FiveMinutes)
        }
        _ => None,
    };
    let pricing = read_pricing(at, table, priced_writes)?;
    let currency = pricing.as_ref().map(|p| p.currency.as_ref());
    read_entry_caps(
        at,
        table.spend.as_ref(),
        id,
        &table.provider,
        currency,
        caps,
    )?;
    let (reasoning, effort_tokens) = read_reasoning(at, table)?;
    let output_budgets = read_output_budgets(at, table, output_ceiling)?;
    let compliance = table
        .compliance
        .iter()
        .flatten()
        .map(|(key, tag)| (key.clone(), tag.get_ref().as_str().to_owned()))
        .collect();
    let tokenizer = read_tokenizer(at, table.tokenizer.as_ref())?;

    Ok(Entry {
        budget: Seat::budget_for(id).into(),
        id: id.into(),
        provider: provider.to_owned(),
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
        thinking: table.thinking.unwrap_or(false),
        native_tools: table.native_tools.unwrap_or(true),
        open: table.open.unwrap_or(true),
        compliance,
        output_budgets,
        tokenizer,
        prompt_cache,
        cache_reads_count: table
            .cache_reads_count
            .unwrap_or(dialect != Dialect::Anthropic),
    })
}

fn read_tokenizer(at: &Place<'_>, name: Option<&Spanned<Text>>) -> Result<Tokenizer, CatalogError> {
    let Some(name) = name else {
        return Ok(Tokenizer::default());
    };
    Tokenizer::from_name(name.get_ref().as_str()).ok_or_else(|| {
        at.bad(
            "tokenizer",
            name,
            Problem::BadValue,
            format!(
                "unknown tokenizer; use one of: {}",
                Tokenizer::NAMES.join(", ")
            ),
        )
    })
}

fn read_grade(at: &Place<'_>, name: &Spanned<Text>) -> Result<Grade, CatalogError> {
    let unknown = |reason: String| at.bad("grade", name, Problem::UnknownGrade, reason);
    match name.get_ref().as_str().parse::<Grade>() {
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
    at: &Place<'_>,
    table: &EntryTable,
    priced_writes: Option<CacheTtl>,
) -> Result<Option<Pricing>, CatalogError> {
    let prices = [
        &table.price_in,
        &table.price_out,
        &table.price_cached,
        &table.price_cache_write,
    ];
    if prices.iter().all(|p| p.is_none()) && table.currency.is_none() {
        return Ok(None);
    }
    let missing = |field: &str| {
        at.absent(
            field,
            Problem::Missing,
            "an entry with prices needs price_in, price_out and currency; leave every price \
             field out for an entry whose cost is unknown",
        )
    };
    let input = at
        .price("price_in", table.price_in.as_ref())?
        .ok_or_else(|| missing("price_in"))?;
    let output = at
        .price("price_out", table.price_out.as_ref())?
        .ok_or_else(|| missing("price_out"))?;
    let cached = at
        .price("price_cached", table.price_cached.as_ref())?
        .unwrap_or(input);
    let cache_write = at
        .price("price_cache_write", table.price_cache_write.as_ref())?
        .unwrap_or_else(|| priced_writes.map_or(input, |ttl| input * ttl.write_multiplier()));
    let currency = table.currency.as_ref().ok_or_else(|| missing("currency"))?;
    let code = currency.get_ref().as_str();
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(at.bad(
            "currency",
            currency,
            Problem::BadCurrency,
            "a currency is an ISO 4217 code of three upper-case letters, for example USD",
        ));
    }
    Ok(Some(Pricing {
        input,
        output,
        cached,
        cache_write,
        currency: code.into(),
    }))
}

/// `reasoning_tokens` and `reasoning_effort`, with the entry's own reservation per effort name.
/// Alone, `reasoning_tokens` is the budget each depth sends. Beside `reasoning_effort` it is what
/// each depth's effort name reserves (where it gives none, [`super::EFFORT_TOKENS`] does), so it
/// may name only depths the effort names: a reservation for a depth that asks for no reasoning
/// is refused as a conflict.
fn read_reasoning(
    at: &Place<'_>,
    table: &EntryTable,
) -> Result<(Reasoning, BTreeMap<Depth, u32>), CatalogError> {
    let effort = match &table.reasoning_effort {
        Some(names) => {
            let mut map = BTreeMap::new();
            for (key, name) in names {
                let depth = read_depth(at, "reasoning_effort", key, name)?;
                map.insert(depth, name.get_ref().as_str().to_owned());
            }
            Some(map)
        }
        None => None,
    };
    let tokens = match &table.reasoning_tokens {
        Some(counts) => {
            let mut map = BTreeMap::new();
            for (key, value) in counts {
                let depth = read_depth(at, "reasoning_tokens", key, value)?;
                let field = format!("reasoning_tokens.{key}");
                let n = at.count(&field, value, u64::from(u32::MAX))?;
                if let Some(effort) = &effort
                    && !effort.contains_key(&depth)
                {
                    return Err(at.bad(
                        &field,
                        value,
                        Problem::Conflict,
                        format!(
                            "beside reasoning_effort, reasoning_tokens gives what each effort \
                             name reserves, and reasoning_effort names none for `{key}`"
                        ),
                    ));
                }
                map.insert(depth, u32::try_from(n).unwrap_or(u32::MAX));
            }
            Some(map)
        }
        None => None,
    };
    Ok(match (tokens, effort) {
        (Some(tokens), Some(effort)) => (Reasoning::Effort(effort), tokens),
        (Some(tokens), None) => (Reasoning::Tokens(tokens), BTreeMap::new()),
        (None, Some(effort)) => (Reasoning::Effort(effort), BTreeMap::new()),
        (None, None) => (Reasoning::None, BTreeMap::new()),
    })
}

fn read_depth<T>(
    at: &Place<'_>,
    field: &str,
    key: &str,
    value: &Spanned<T>,
) -> Result<Depth, CatalogError> {
    // Catalog keys are exact: the lower-case names only.
    Depth::ALL
        .into_iter()
        .find(|d| d.as_str() == key)
        .ok_or_else(|| {
            let reason = ParseNameError::new(
                "depth",
                key,
                &["immediate", "quick", "standard", "thorough"],
            );
            at.bad(
                &format!("{field}.{key}"),
                value,
                Problem::UnknownDepth,
                reason.to_string(),
            )
        })
}

fn read_output_budgets(
    at: &Place<'_>,
    table: &EntryTable,
    ceiling: u64,
) -> Result<[Option<u32>; 4], CatalogError> {
    let mut budgets = [None; 4];
    for (key, value) in table.output_budgets.iter().flatten() {
        let dotted = format!("output_budgets.{key}");
        let index = OutputSize::RUNGS
            .iter()
            .position(|r| r.name() == Some(key.as_str()))
            .ok_or_else(|| {
                at.bad(
                    &dotted,
                    value,
                    Problem::UnknownOutputSize,
                    "only the rungs verdict, compact, standard and extended can be overridden \
                     (max is always the output ceiling)",
                )
            })?;
        let n = at.count(&dotted, value, ceiling)?;
        if n == 0 {
            return Err(at.bad(
                &dotted,
                value,
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
