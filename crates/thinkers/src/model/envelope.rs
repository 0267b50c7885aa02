//! [`Envelope`]: the compliance boundary every model call stays inside, pinned or not.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use super::Entry;

/// Which entries a deployment may call at all: an optional allow-list of providers and required
/// compliance tags (for example `region ∈ {eu}` and `retention ∈ {zero}`).
///
/// The picker only chooses among entries inside the envelope, and a pin outside it is refused:
/// nothing reaches a model the envelope excludes. The unrestricted envelope permits every entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// When set, only entries of these providers are permitted.
    #[serde(default)]
    pub allowed_providers: Option<BTreeSet<String>>,
    /// Each tag an entry must carry, with the values it may have. An entry without the tag is
    /// outside the envelope.
    #[serde(default)]
    pub required_tags: BTreeMap<String, BTreeSet<String>>,
}

/// The rule of the envelope an entry breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvelopeRule {
    /// The entry's provider is not on the allow-list.
    Provider {
        /// The entry's provider.
        provider: String,
        /// The providers allowed.
        allowed: BTreeSet<String>,
    },
    /// The entry lacks a required tag or has a value the envelope does not accept.
    Tag {
        /// The tag, for example `region`.
        tag: String,
        /// The entry's value, if it has the tag.
        found: Option<String>,
        /// The values accepted.
        allowed: BTreeSet<String>,
    },
}

impl fmt::Display for EnvelopeRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(", ");
        match self {
            Self::Provider { provider, allowed } => write!(
                f,
                "provider `{provider}` is not among the allowed providers {{{}}}",
                list(allowed)
            ),
            Self::Tag {
                tag,
                found: Some(found),
                allowed,
            } => write!(f, "{tag} `{found}` is not one of {{{}}}", list(allowed)),
            Self::Tag {
                tag,
                found: None,
                allowed,
            } => write!(
                f,
                "it has no `{tag}` tag and the envelope requires one of {{{}}}",
                list(allowed)
            ),
        }
    }
}

/// An entry outside the envelope, naming the entry and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("entry `{entry}` is outside the compliance envelope: {rule}")]
pub struct EnvelopeViolation {
    /// The entry's id.
    pub entry: String,
    /// The rule it breaks (the first one checked: providers, then tags in name order).
    pub rule: EnvelopeRule,
}

impl Envelope {
    /// The envelope that permits every entry.
    pub fn unrestricted() -> Self {
        Self::default()
    }

    /// Only entries of these providers (adds to the allow-list when there is one).
    #[must_use]
    pub fn allow_providers<I, S>(mut self, providers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_providers
            .get_or_insert_with(BTreeSet::new)
            .extend(providers.into_iter().map(Into::into));
        self
    }

    /// Only entries whose tag `tag` has one of `values` (adds to the values already accepted).
    #[must_use]
    pub fn require_tag<I, S>(mut self, tag: impl Into<String>, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_tags
            .entry(tag.into())
            .or_default()
            .extend(values.into_iter().map(Into::into));
        self
    }

    /// Whether the envelope permits every entry.
    #[cfg(test)]
    pub(crate) fn is_unrestricted(&self) -> bool {
        self.allowed_providers.is_none() && self.required_tags.is_empty()
    }

    /// Check one entry; the violation names the entry and the first rule it breaks.
    pub(crate) fn permits(&self, entry: &Entry) -> Result<(), EnvelopeViolation> {
        let violation = |rule| EnvelopeViolation {
            entry: entry.id().to_owned(),
            rule,
        };
        if let Some(allowed) = &self.allowed_providers
            && !allowed.contains(entry.provider())
        {
            return Err(violation(EnvelopeRule::Provider {
                provider: entry.provider().to_owned(),
                allowed: allowed.clone(),
            }));
        }
        for (tag, allowed) in &self.required_tags {
            let found = entry.tag(tag);
            if !found.is_some_and(|v| allowed.contains(v)) {
                return Err(violation(EnvelopeRule::Tag {
                    tag: tag.clone(),
                    found: found.map(str::to_owned),
                    allowed: allowed.clone(),
                }));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Catalog;

    #[test]
    fn unrestricted_permits_everything() {
        let catalog = Catalog::bundled();
        let envelope = Envelope::unrestricted();
        assert!(envelope.is_unrestricted());
        assert!(
            catalog
                .entries()
                .iter()
                .all(|e| envelope.permits(e).is_ok())
        );
    }

    #[test]
    fn provider_allow_list() {
        let catalog = Catalog::bundled();
        let envelope = Envelope::unrestricted().allow_providers(["sim-anthropic"]);
        assert!(
            envelope
                .permits(catalog.entry("sim-small-b").unwrap())
                .is_ok()
        );
        let err = envelope
            .permits(catalog.entry("sim-small-a").unwrap())
            .unwrap_err();
        assert_eq!(err.entry, "sim-small-a");
        assert!(
            matches!(&err.rule, EnvelopeRule::Provider { provider, .. } if provider == "sim-openai")
        );
        let msg = err.to_string();
        assert!(
            msg.contains("sim-small-a") && msg.contains("sim-anthropic"),
            "{msg}"
        );
    }

    #[test]
    fn required_tags_check_values_and_presence() {
        let text = r#"
            [providers.p]
            dialect = "openai-compatible"
            base_url = "http://localhost:8080/v1"
            [[entries]]
            id = "untagged"
            provider = "p"
            model = "m"
            grade = "small"
            context_window = 1000
            output_ceiling = 100
            price_in = 0
            price_out = 0
            currency = "USD"
        "#;
        let untagged = Catalog::from_toml_str(text, "t.toml").unwrap();
        let bundled = Catalog::bundled();
        let envelope = Envelope::unrestricted()
            .require_tag("region", ["eu"])
            .require_tag("retention", ["zero"]);

        assert!(
            envelope
                .permits(bundled.entry("sim-small-b").unwrap())
                .is_ok()
        );
        let wrong_region = envelope
            .permits(bundled.entry("sim-small-a").unwrap())
            .unwrap_err();
        assert_eq!(
            wrong_region.rule,
            EnvelopeRule::Tag {
                tag: "region".into(),
                found: Some("us".into()),
                allowed: ["eu".to_owned()].into(),
            }
        );
        // Right region, wrong retention.
        let wrong_retention = envelope
            .permits(bundled.entry("sim-small-text").unwrap())
            .unwrap_err();
        assert!(wrong_retention.to_string().contains("retention `30d`"));
        let missing = envelope
            .permits(untagged.entry("untagged").unwrap())
            .unwrap_err();
        assert!(matches!(
            &missing.rule,
            EnvelopeRule::Tag { found: None, .. }
        ));
        assert!(missing.to_string().contains("no `region` tag"), "{missing}");
    }

    #[test]
    fn deserializes_from_config() {
        let envelope: Envelope = toml::from_str(
            r#"
            allowed_providers = ["sim-openai"]
            required_tags = { region = ["eu", "us"] }
            "#,
        )
        .unwrap();
        assert_eq!(
            envelope,
            Envelope::unrestricted()
                .allow_providers(["sim-openai"])
                .require_tag("region", ["us", "eu"])
        );
    }
}
