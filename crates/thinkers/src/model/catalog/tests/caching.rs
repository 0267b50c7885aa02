//! Prompt caching in catalogs: `prompt_cache` (provider and entry), `cache_ttl` (Anthropic
//! entries) and `price_cache_write`, their defaults, what a call costs with cache reads and
//! writes apart, and the errors naming entry, field and value.

use super::{VALID, assert_invalid, broken};
use crate::model::catalog::*;

/// An Anthropic provider and a Bedrock one, each with entries, after a toggle on `acme`.
fn catalog(acme: &str, entries: &str) -> Result<Catalog, CatalogError> {
    let text = format!(
        "{}\n[providers.claude]\ndialect = \"anthropic\"\nbase_url = \"https://api.anthropic.test\"\n\
         api_key_env = \"K\"\n\n[providers.aws]\ndialect = \"bedrock-converse\"\n\
         base_url = \"https://bedrock-runtime.us-east-1.amazonaws.com\"\n{entries}",
        VALID.replacen(
            "api_key_env = \"ACME_KEY\"\n",
            &format!("api_key_env = \"ACME_KEY\"\n{acme}"),
            1
        ),
    );
    Catalog::from_toml_str(&text, "broken.toml")
}

fn entry(id: &str, provider: &str, model: &str, extra: &str) -> String {
    format!(
        "\n[[entries]]\nid = \"{id}\"\nprovider = \"{provider}\"\nmodel = \"{model}\"\n\
         grade = \"large\"\ncontext_window = 200000\noutput_ceiling = 8000\nprice_in = 3\n\
         price_out = 15\nprice_cached = 0.3\ncurrency = \"USD\"\n{extra}"
    )
}

#[test]
fn caching_is_on_by_default_and_a_provider_or_entry_turns_it_off() -> anyhow::Result<()> {
    let entries = [
        entry("sonnet", "claude", "claude-sonnet-4-5", ""),
        entry(
            "sonnet-hour",
            "claude",
            "claude-sonnet-4-5",
            "cache_ttl = \"1h\"\n",
        ),
        entry(
            "sonnet-off",
            "claude",
            "claude-sonnet-4-5",
            "prompt_cache = false\n",
        ),
    ]
    .concat();
    let c = catalog("prompt_cache = false\n", &entries)?;
    assert_eq!(
        c.entry("sonnet")?.prompt_cache(),
        PromptCache::On(CacheTtl::FiveMinutes)
    );
    assert_eq!(
        c.entry("sonnet-hour")?.prompt_cache(),
        PromptCache::On(CacheTtl::OneHour)
    );
    assert_eq!(c.entry("sonnet-off")?.prompt_cache(), PromptCache::Off);
    // The provider's switch holds for its entries; an entry's own wins.
    assert!(!c.provider("acme")?.prompt_cache);
    assert_eq!(c.entry("acme-small")?.prompt_cache(), PromptCache::Off);
    let on = entry("acme-on", "acme", "m", "prompt_cache = true\n");
    let c = catalog("prompt_cache = false\n", &on)?;
    assert!(c.entry("acme-on")?.prompt_cache().is_on());
    Ok(())
}

#[test]
fn cache_writes_cost_1_25x_input_on_anthropic_2x_for_the_hour_and_the_input_elsewhere()
-> anyhow::Result<()> {
    let entries = [
        entry("sonnet", "claude", "claude-sonnet-4-5", ""),
        entry(
            "sonnet-hour",
            "claude",
            "claude-sonnet-4-5",
            "cache_ttl = \"1h\"\n",
        ),
        entry(
            "sonnet-priced",
            "claude",
            "claude-sonnet-4-5",
            "price_cache_write = 4\n",
        ),
        entry(
            "bedrock-claude",
            "aws",
            "us.anthropic.claude-sonnet-4-5-v1:0",
            "",
        ),
        entry("nova", "aws", "amazon.nova-pro-v1:0", ""),
        entry("gpt", "acme", "gpt", ""),
    ]
    .concat();
    let c = catalog("", &entries)?;
    let write = |id: &str| c.entry(id).unwrap().pricing().unwrap().cache_write;
    assert!((write("sonnet") - 3.75).abs() < 1e-12);
    assert!((write("sonnet-hour") - 6.0).abs() < 1e-12);
    assert!((write("sonnet-priced") - 4.0).abs() < 1e-12);
    assert!((write("bedrock-claude") - 3.75).abs() < 1e-12);
    assert!((write("nova") - 3.0).abs() < 1e-12);
    assert!((write("gpt") - 3.0).abs() < 1e-12);

    // 1M uncached at 3, 2M cache reads at 0.3, 1M cache writes at 3.75, 0.1M out at 15.
    let cost = c
        .entry("sonnet")?
        .cost(1_000_000, 2_000_000, 1_000_000, 100_000)
        .unwrap();
    assert!((cost - (3.0 + 0.6 + 3.75 + 1.5)).abs() < 1e-9, "{cost}");
    Ok(())
}

#[test]
fn rejects_an_unknown_cache_ttl() {
    let err = catalog("", &entry("sonnet", "claude", "c", "cache_ttl = \"10m\"\n")).unwrap_err();
    assert_invalid(
        &err,
        Problem::BadValue,
        &["entry `sonnet`", "field `cache_ttl`", "\"10m\"", "5m, 1h"],
    );
}

#[test]
fn rejects_a_cache_ttl_outside_anthropic() {
    let err = broken(
        "price_cached = 0.25",
        "price_cached = 0.25\ncache_ttl = \"1h\"",
    );
    assert_invalid(
        &err,
        Problem::Conflict,
        &[
            "entry `acme-small`",
            "field `cache_ttl`",
            "\"1h\"",
            "`openai`",
        ],
    );
}

#[test]
fn rejects_a_cache_ttl_with_caching_off() {
    let extra = "prompt_cache = false\ncache_ttl = \"1h\"\n";
    let err = catalog("", &entry("sonnet", "claude", "c", extra)).unwrap_err();
    assert_invalid(
        &err,
        Problem::Conflict,
        &[
            "entry `sonnet`",
            "field `cache_ttl`",
            "prompt_cache = false",
        ],
    );
}

#[test]
fn rejects_a_prompt_cache_that_is_not_a_boolean() {
    let err = broken(
        "price_cached = 0.25",
        "price_cached = 0.25\nprompt_cache = \"no\"",
    );
    assert_invalid(
        &err,
        Problem::WrongType,
        &["entry `acme-small`", "field `prompt_cache`", "\"no\""],
    );
    let err = broken(
        "api_key_env = \"ACME_KEY\"",
        "api_key_env = \"ACME_KEY\"\nprompt_cache = 1",
    );
    assert_invalid(
        &err,
        Problem::WrongType,
        &["provider `acme`", "field `prompt_cache`"],
    );
}

#[test]
fn rejects_a_negative_cache_write_price() {
    let err = broken(
        "price_cached = 0.25",
        "price_cached = 0.25\nprice_cache_write = -1",
    );
    assert_invalid(
        &err,
        Problem::BadPrice,
        &["entry `acme-small`", "field `price_cache_write`", "-1"],
    );
}

#[test]
fn cache_reads_count_toward_input_limits_except_on_anthropic_unless_set() -> anyhow::Result<()> {
    let entries = [
        entry("sonnet", "claude", "claude-sonnet-4-5", ""),
        entry(
            "sonnet-counted",
            "claude",
            "claude-sonnet-4-5",
            "cache_reads_count = true\n",
        ),
        entry("claude-aws", "aws", "anthropic.claude-sonnet-4-5", ""),
    ]
    .concat();
    let c = catalog("", &entries)?;
    assert!(!c.entry("sonnet")?.cache_reads_count());
    assert!(c.entry("sonnet-counted")?.cache_reads_count());
    assert!(c.entry("claude-aws")?.cache_reads_count());
    assert!(c.entry("acme-small")?.cache_reads_count());
    Ok(())
}
