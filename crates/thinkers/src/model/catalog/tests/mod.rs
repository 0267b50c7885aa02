//! Tests of catalog loading: the bundled catalog's properties, the translations an entry makes,
//! and one test per malformed case, each checking the error names the file, entry and field.

use std::time::Duration;

use super::*;
use crate::dispatch::Rate;
use crate::error::ErrorKind;
use crate::model::{Depth, OutputSize};

/// A small valid catalog; tests break one line of it at a time.
pub(super) const VALID: &str = r#"
[providers.acme]
dialect = "openai"
base_url = "https://api.acme.test/v1/"
api_key_env = "ACME_KEY"

[providers.local]
dialect = "openai-compatible"
base_url = "http://localhost:8080/v1"

[[entries]]
id = "acme-small"
provider = "acme"
model = "acme-small-2"
grade = "small"
context_window = 64000
output_ceiling = 8000
tpm = 100000
rpm = 600
concurrency = 8
price_in = 0.5
price_out = 2
price_cached = 0.25
currency = "USD"
thinking = false
native_tools = true
open = true
reasoning_tokens = { immediate = 0, quick = 500, standard = 2000, thorough = 6000 }
output_budgets = { verdict = 300, standard = 6000 }
compliance = { region = "eu", retention = "zero" }

[entries.sim]
latency_ms = [1, 2]
quality = 0.5
rates = { http_500 = 0.1 }

[[entries]]
id = "local-large"
provider = "local"
model = "llama"
grade = "large"
context_window = 8192
output_ceiling = 2048
price_in = 0
price_out = 0
currency = "EUR"
reasoning_effort = { quick = "low", thorough = "high" }
"#;

fn valid() -> Catalog {
    Catalog::from_toml_str(VALID, "valid.toml").unwrap()
}

/// Load `VALID` with `from` replaced by `to` (which must occur) and return the error.
pub(super) fn broken(from: &str, to: &str) -> CatalogError {
    assert!(VALID.contains(from), "fixture lacks {from:?}");
    let text = VALID.replacen(from, to, 1);
    match Catalog::from_toml_str(&text, "broken.toml") {
        Ok(_) => panic!("replacing {from:?} with {to:?} was accepted"),
        Err(e) => e,
    }
}

/// Assert an invalid-value error: its problem, and that the message names the file and each
/// needle (entry, field, value).
pub(super) fn assert_invalid(err: &CatalogError, problem: Problem, needles: &[&str]) {
    assert_eq!(err.problem(), Some(problem), "{err}");
    assert_eq!(err.source_name(), "broken.toml");
    let msg = err.to_string();
    assert!(msg.starts_with("broken.toml: "), "{msg}");
    for needle in needles {
        assert!(msg.contains(needle), "{msg:?} lacks {needle:?}");
    }
}

#[test]
fn a_valid_catalog_loads_every_field() {
    let c = valid();
    assert_eq!(c.source_name(), "valid.toml");
    assert_eq!(c.entries().len(), 2);
    let e = c.entry("acme-small").unwrap();
    assert_eq!(e.provider(), "acme");
    assert_eq!(e.model(), "acme-small-2");
    assert_eq!(e.grade(), Grade::Small);
    assert_eq!((e.context_window(), e.output_ceiling()), (64_000, 8_000));
    assert_eq!(
        (e.tpm(), e.rpm(), e.concurrency()),
        (Some(100_000), Some(600), Some(8))
    );
    assert_eq!(
        e.pricing(),
        Some(&Pricing {
            input: 0.5,
            output: 2.0,
            cached: 0.25,
            // An OpenAI entry's writes cost the input price.
            cache_write: 0.5,
            currency: "USD".into()
        })
    );
    assert!(!e.thinking() && e.native_tools() && e.is_open());
    assert_eq!(e.tag("region"), Some("eu"));
    assert_eq!(e.tag("retention"), Some("zero"));
    assert_eq!(e.compliance().len(), 2);

    let p = c.provider("acme").unwrap();
    assert_eq!(p.dialect, Dialect::OpenAi);
    assert_eq!(
        p.base_url, "https://api.acme.test/v1",
        "trailing slash trimmed"
    );
    assert_eq!(p.api_key_env.as_deref(), Some("ACME_KEY"));
    assert_eq!(c.provider("local").unwrap().api_key_env, None);
    assert!(!c.needs_sim());
}

#[test]
fn absent_optional_fields_take_their_documented_defaults() {
    let e = valid();
    let e = e.entry("local-large").unwrap();
    assert_eq!((e.tpm(), e.rpm(), e.concurrency()), (None, None, None));
    assert_eq!(e.limits(), crate::dispatch::Limits::default());
    let pricing = e.pricing().unwrap();
    assert_eq!(pricing.cached, pricing.input);
    assert!(!e.thinking() && e.native_tools() && e.is_open());
    assert!(e.compliance().is_empty());
}

#[test]
fn unknown_ids_and_providers_are_named() {
    let c = valid();
    let err = c.entry("nope").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("\"nope\""), "{err}");
    let err = c.provider("ghost").unwrap_err();
    assert!(err.to_string().contains("\"ghost\""), "{err}");
}

#[test]
fn limits_budget_and_cost() {
    let c = valid();
    let e = c.entry("acme-small").unwrap();
    assert_eq!(&*e.budget_name(), "model:acme-small");
    let limits = e.limits();
    assert_eq!(limits.tokens, Some(Rate::per_minute(100_000)));
    assert_eq!(limits.requests, Some(Rate::per_minute(600)));
    assert_eq!(limits.concurrency, Some(8));
    // 1M uncached in at 0.5, 2M cache reads at 0.25, 2M cache writes at 0.5, 0.5M out at 2.
    let cost = e.cost(1_000_000, 2_000_000, 0, 500_000).unwrap();
    assert!((cost - (0.5 + 0.5 + 1.0)).abs() < 1e-9, "{cost}");
    let cost = e.cost(1_000_000, 2_000_000, 2_000_000, 500_000).unwrap();
    assert!((cost - (0.5 + 0.5 + 1.0 + 1.0)).abs() < 1e-9, "{cost}");
    assert_eq!(e.cost(0, 0, 0, 0), Some(0.0));
    assert!((e.list_price().unwrap() - 2.5).abs() < 1e-12);
}

#[test]
fn burst_seconds_gives_both_rates_an_explicit_burst() {
    let text = VALID.replacen("rpm = 600\n", "rpm = 600\nburst_seconds = 2.5\n", 1);
    let c = Catalog::from_toml_str(&text, "burst.toml").unwrap();
    let e = c.entry("acme-small").unwrap();
    let burst = Duration::from_millis(2_500);
    assert_eq!(e.burst(), Some(burst));
    assert_eq!(
        e.limits().tokens,
        Some(Rate::per_minute(100_000).with_burst(burst))
    );
    assert_eq!(
        e.limits().requests,
        Some(Rate::per_minute(600).with_burst(burst))
    );
    assert_eq!(valid().entry("acme-small").unwrap().burst(), None);
    let err = broken("rpm = 600\n", "rpm = 600\nburst_seconds = 61\n");
    assert_invalid(
        &err,
        Problem::BadValue,
        &["acme-small", "burst_seconds", "61"],
    );
}

#[test]
fn input_and_output_token_limits_are_axes_of_their_own() {
    let text = VALID.replacen("rpm = 600\n", "rpm = 600\nitpm = 40000\notpm = 8000\n", 1);
    let c = Catalog::from_toml_str(&text, "itpm.toml").unwrap();
    let e = c.entry("acme-small").unwrap();
    assert_eq!((e.itpm(), e.otpm()), (Some(40_000), Some(8_000)));
    let limits = e.limits();
    assert_eq!(limits.input_tokens, Some(Rate::per_minute(40_000)));
    assert_eq!(limits.output_tokens, Some(Rate::per_minute(8_000)));
    assert_eq!(limits.tokens, Some(Rate::per_minute(100_000)));
    let err = broken("rpm = 600\n", "rpm = 600\notpm = 0\n");
    assert_invalid(&err, Problem::BadValue, &["acme-small", "otpm"]);
}

#[test]
fn output_sizes_use_overrides_and_are_capped_at_the_ceiling() {
    let c = valid();
    let e = c.entry("acme-small").unwrap();
    assert_eq!(e.output_tokens(OutputSize::Verdict), 300, "override");
    assert_eq!(
        e.output_tokens(OutputSize::Compact),
        4_096,
        "framework rung"
    );
    assert_eq!(e.output_budget(OutputSize::Compact), None);
    // The entry books less than the framework's 16,384 for Standard; Extended's 32,768 is
    // capped at the 8,000 ceiling.
    assert_eq!(e.output_tokens(OutputSize::Standard), 6_000);
    assert_eq!(e.output_tokens(OutputSize::Extended), 8_000);
    assert_eq!(e.output_tokens(OutputSize::Max), 8_000);
    assert_eq!(e.output_tokens(OutputSize::Tokens(2_500)), 2_500);
    assert_eq!(e.output_tokens(OutputSize::Tokens(50_000)), 8_000);
    assert_eq!(e.output_budget(OutputSize::Max), None);

    let local = c.entry("local-large").unwrap();
    assert_eq!(local.output_tokens(OutputSize::Verdict), 1_024);
    assert_eq!(local.output_tokens(OutputSize::Compact), 2_048);
    assert_eq!(local.output_tokens(OutputSize::Max), 2_048);
}

#[test]
fn depth_becomes_reasoning_tokens_or_effort() {
    let c = valid();
    let tokens = c.entry("acme-small").unwrap();
    assert_eq!(tokens.reasoning_tokens(Depth::Immediate), 0);
    assert_eq!(tokens.reasoning_tokens(Depth::Quick), 500);
    assert_eq!(tokens.reasoning_tokens(Depth::Standard), 2_000);
    assert_eq!(tokens.reasoning_tokens(Depth::Thorough), 6_000);
    assert_eq!(tokens.reasoning_effort(Depth::Thorough), None);

    let effort = c.entry("local-large").unwrap();
    assert!(matches!(effort.reasoning(), Reasoning::Effort(m) if m.len() == 2));
    assert_eq!(effort.reasoning_effort(Depth::Quick), Some("low"));
    assert_eq!(effort.reasoning_effort(Depth::Thorough), Some("high"));
    assert_eq!(effort.reasoning_effort(Depth::Standard), None, "not listed");
    // An effort name reserves the tokens the framework assumes for it; an unlisted depth none.
    assert_eq!(effort.reasoning_tokens(Depth::Quick), 2_048);
    assert_eq!(effort.reasoning_tokens(Depth::Thorough), 16_384);
    assert_eq!(effort.reasoning_tokens(Depth::Standard), 0);
}

#[test]
fn an_effort_entry_reserves_its_own_figure_where_it_gives_one() {
    let text = VALID.replacen(
        "reasoning_effort = { quick = \"low\", thorough = \"high\" }",
        "reasoning_effort = { quick = \"low\", thorough = \"high\" }\n\
         reasoning_tokens = { thorough = 1_200 }",
        1,
    );
    let c = Catalog::from_toml_str(&text, "own.toml").unwrap();
    let e = c.entry("local-large").unwrap();
    // The effort names are still what is sent.
    assert!(matches!(e.reasoning(), Reasoning::Effort(m) if m.len() == 2));
    assert_eq!(e.reasoning_effort(Depth::Thorough), Some("high"));
    assert_eq!(
        e.reasoning_tokens(Depth::Thorough),
        1_200,
        "the entry's own"
    );
    assert_eq!(
        e.reasoning_tokens(Depth::Quick),
        crate::model::effort_tokens("low", Depth::Quick),
        "the table's, where the entry gives none"
    );
    assert_eq!(e.reasoning_tokens(Depth::Standard), 0, "no effort named");
    // What a seat on the entry reserves, and what the request says.
    let (sent, reserved) = crate::llm::call::reasoning_for(e, Depth::Thorough);
    assert_eq!(sent, crate::llm::Reasoning::Effort("high".into()));
    assert_eq!(reserved, 1_200);
    // An entry that gives no figure of its own still reserves the table's.
    let table = valid();
    let plain = table.entry("local-large").unwrap();
    assert_eq!(
        crate::llm::call::reasoning_for(plain, Depth::Thorough).1,
        16_384
    );
}

#[test]
fn effort_names_reserve_the_documented_tokens() {
    use crate::model::{EFFORT_TOKENS, effort_tokens};
    for (name, tokens) in EFFORT_TOKENS {
        for depth in Depth::ALL {
            assert_eq!(effort_tokens(name, depth), tokens, "{name} at {depth}");
        }
        assert_eq!(
            effort_tokens(&format!(" {} ", name.to_ascii_uppercase()), Depth::Quick),
            tokens
        );
    }
    // Growing effort reserves more.
    let order = ["none", "minimal", "low", "medium", "high", "xhigh"];
    let reserved: Vec<u32> = order
        .iter()
        .map(|n| effort_tokens(n, Depth::Standard))
        .collect();
    assert!(reserved.windows(2).all(|w| w[0] < w[1]), "{reserved:?}");
    // A name the table does not know reserves what its depth usually maps to.
    let by_depth: Vec<u32> = Depth::ALL
        .iter()
        .map(|d| effort_tokens("dynamic", *d))
        .collect();
    assert_eq!(by_depth, [1_024, 2_048, 8_192, 16_384]);
}

#[test]
fn grouping_and_filtering_by_grade() {
    let c = Catalog::bundled();
    let groups = c.entries_by_grade();
    assert_eq!(
        groups.keys().copied().collect::<Vec<_>>(),
        Grade::RUNGS.to_vec()
    );
    for (grade, entries) in &groups {
        assert!(entries.iter().all(|e| e.grade() == *grade));
        assert!(
            entries.windows(2).all(|w| w[0].id() < w[1].id()),
            "sorted by id"
        );
        assert_eq!(entries.len(), c.entries_of(*grade).len());
    }
    assert!(c.entries_of(Grade::Ceiling).is_empty());
    // Closed entries are listed too.
    assert!(c.entries_of(Grade::Medium).iter().any(|e| !e.is_open()));
}

#[test]
fn the_bundled_catalog_covers_every_rung_and_every_sim_dialect() {
    let c = Catalog::bundled();
    assert_eq!(c.source_name(), "bundled.toml");
    assert!(c.entries().len() >= 10);
    for grade in Grade::RUNGS {
        let open: Vec<_> = c
            .entries_of(grade)
            .into_iter()
            .filter(|e| e.is_open())
            .collect();
        assert!(open.len() >= 2, "{grade} has {} open entries", open.len());
        let prices: std::collections::BTreeSet<u64> = open
            .iter()
            .map(|e| (e.list_price().unwrap() * 1000.0) as u64)
            .collect();
        assert_eq!(prices.len(), open.len(), "{grade} entries share a price");
    }
    let dialect = |e: &Entry| c.provider(e.provider()).unwrap().dialect;
    // Every dialect the sim speaks has an open entry (the demo calls each one).
    for wanted in [
        Dialect::OpenAi,
        Dialect::Anthropic,
        Dialect::OpenAiResponses,
        Dialect::Gemini,
        Dialect::BedrockConverse,
    ] {
        assert!(
            c.entries()
                .iter()
                .any(|e| e.is_open() && dialect(e) == wanted),
            "no open {} entry",
            wanted.as_str()
        );
    }
    assert!(c.entries().iter().any(|e| e.is_open() && !e.native_tools()));
    assert!(c.entries().iter().any(|e| {
        dialect(e) == Dialect::Anthropic && e.thinking() && e.reasoning_tokens(Depth::Thorough) > 0
    }));
    assert!(c.entries().iter().any(|e| {
        dialect(e) == Dialect::OpenAi && e.reasoning_effort(Depth::Thorough).is_some()
    }));
    let currencies: std::collections::BTreeSet<&str> = c
        .entries()
        .iter()
        .map(|e| &*e.pricing().unwrap().currency)
        .collect();
    assert!(currencies.contains("USD") && currencies.contains("EUR"));
    for (tag, value) in [
        ("region", "eu"),
        ("region", "us"),
        ("retention", "zero"),
        ("retention", "30d"),
    ] {
        assert!(
            c.entries().iter().any(|e| e.tag(tag) == Some(value)),
            "{tag}={value}"
        );
    }
    for p in c.providers().values() {
        // The sim's key variable: Bedrock signs with it as its AWS credentials, the others send it.
        match &p.aws {
            Some(aws) => {
                assert_eq!(p.api_key_env, None, "{} signs", p.name);
                assert_eq!(aws.access_key_env, SIM_KEY_ENV);
                assert_eq!(aws.secret_key_env, SIM_KEY_ENV);
            }
            None => assert_eq!(p.api_key_env.as_deref(), Some(SIM_KEY_ENV)),
        }
        assert!(p.needs_sim());
    }
    assert_eq!(c.provider("sim-openai").unwrap().base_url, "{sim}/v1");
    assert_eq!(c.provider("sim-anthropic").unwrap().base_url, "{sim}");
    // Normal tests must never be throttled by the bundled limits.
    for e in c.entries().iter().filter(|e| e.is_open()) {
        assert!(e.tpm().is_some_and(|t| t >= 1_000_000), "{}", e.id());
    }
}

#[test]
fn bundled_sim_profiles_differ_and_keep_fault_rates_modest() {
    // The runtime ignores [entries.sim]; read the raw text to check what the sim will see.
    let doc: toml::Table = BUNDLED_TOML.parse().unwrap();
    let entries = doc["entries"].as_array().unwrap();
    let mut profiles = std::collections::BTreeSet::new();
    for entry in entries
        .iter()
        .filter(|e| e.get("open").and_then(toml::Value::as_bool) != Some(false))
    {
        let sim = entry.get("sim").and_then(toml::Value::as_table).unwrap();
        for (name, rate) in sim["rates"].as_table().unwrap() {
            let rate = rate.as_float().unwrap();
            assert!((0.0..=0.1).contains(&rate), "{name} = {rate}");
        }
        profiles.insert(format!("{}|{}", sim["latency_ms"], sim["quality"]));
    }
    assert_eq!(
        profiles.len(),
        entries.len() - 1,
        "every open entry has its own profile"
    );
}

#[test]
fn binding_the_sim_replaces_the_placeholder() {
    let mut c = Catalog::bundled();
    assert!(c.needs_sim());
    c.bind_sim("http://127.0.0.1:43123/");
    assert!(!c.needs_sim());
    assert_eq!(
        c.provider("sim-openai").unwrap().base_url,
        "http://127.0.0.1:43123/v1"
    );
    assert_eq!(
        c.provider("sim-anthropic").unwrap().base_url,
        "http://127.0.0.1:43123"
    );
    let bound = Catalog::bundled().with_sim_url("http://localhost:9");
    assert_eq!(
        bound.provider("sim-openai").unwrap().base_url,
        "http://localhost:9/v1"
    );
}

#[test]
fn load_reads_a_file_and_names_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.toml");
    std::fs::write(&path, VALID).unwrap();
    let c = Catalog::load(&path).unwrap();
    assert_eq!(c.source_name(), path.display().to_string());
    assert_eq!(c.entries().len(), 2);

    let missing = dir.path().join("absent.toml");
    let err = Catalog::load(&missing).unwrap_err();
    assert!(matches!(err, CatalogError::Io { .. }));
    assert!(err.to_string().contains("absent.toml"), "{err}");
    assert_eq!(Error::from(err).kind(), ErrorKind::ExternalService);
}

#[test]
fn merge_adds_a_users_catalog_and_refuses_clashes() {
    let mut c = Catalog::bundled();
    let before = c.entries().len();
    c.merge(valid()).unwrap();
    assert_eq!(c.entries().len(), before + 2);
    assert!(c.entry("acme-small").is_ok() && c.entry("sim-small-a").is_ok());
    assert_eq!(c.source_name(), "bundled.toml + valid.toml");

    let err = c.merge(valid()).unwrap_err();
    assert_eq!(err.problem(), Some(Problem::Duplicate));
    assert!(err.to_string().contains("acme"), "{err}");
}

#[test]
fn invalid_catalogs_become_invalid_input_naming_the_source() {
    let err = Error::from(broken("grade = \"small\"", "grade = \"huge\""));
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let msg = err.to_string();
    assert!(
        msg.contains("catalog") && msg.contains("broken.toml") && msg.contains("huge"),
        "{msg}"
    );
}

mod azure;
mod caching;
mod malformed;
mod spend;
