//! Choosing one entry for a seat: the [`Picker`] policy, its default [`HeadroomPicker`], and the
//! resolution of [`Grade::Ceiling`] that happens before any picker runs.

use std::cmp::Ordering;

use super::{Catalog, Entry, Envelope, Grade};
use crate::dispatch::BudgetStore;

/// A policy choosing one entry among the candidates for a grade.
///
/// The router calls it with the open entries of the (already resolved) rung that lie inside the
/// compliance envelope, never with an empty list and never for [`Grade::Ceiling`]. Returning
/// `None`, or an id that is not a candidate, makes the resolution fail.
pub trait Picker: Send + Sync {
    /// Choose an entry id among `candidates`.
    fn pick(
        &self,
        grade: Grade,
        candidates: &[&Entry],
        budgets: &dyn BudgetStore,
    ) -> Option<String>;

    /// The rung [`Grade::Ceiling`] stands for in this deployment. The default is
    /// [`resolve_ceiling`].
    fn ceiling(&self, catalog: &Catalog, envelope: &Envelope) -> Grade {
        resolve_ceiling(catalog, envelope)
    }
}

impl<P: Picker + ?Sized> Picker for Box<P> {
    fn pick(
        &self,
        grade: Grade,
        candidates: &[&Entry],
        budgets: &dyn BudgetStore,
    ) -> Option<String> {
        (**self).pick(grade, candidates, budgets)
    }

    fn ceiling(&self, catalog: &Catalog, envelope: &Envelope) -> Grade {
        (**self).ceiling(catalog, envelope)
    }
}

impl<P: Picker + ?Sized> Picker for std::sync::Arc<P> {
    fn pick(
        &self,
        grade: Grade,
        candidates: &[&Entry],
        budgets: &dyn BudgetStore,
    ) -> Option<String> {
        (**self).pick(grade, candidates, budgets)
    }

    fn ceiling(&self, catalog: &Catalog, envelope: &Envelope) -> Grade {
        (**self).ceiling(catalog, envelope)
    }
}

/// The strongest rung the deployment serves: the highest of Mega, Xl, Large, Medium and Small
/// that has an open entry inside the envelope.
///
/// A catalog that serves no rung at all inside the envelope resolves to [`Grade::Small`], the
/// rung every other search ends on too; the router then fails with "no open entry of grade
/// `small`", naming what the catalog lists.
pub fn resolve_ceiling(catalog: &Catalog, envelope: &Envelope) -> Grade {
    Grade::RUNGS
        .into_iter()
        .rev()
        .find(|&rung| {
            catalog
                .entries_of(rung)
                .into_iter()
                .any(|e| e.is_open() && envelope.permits(e).is_ok())
        })
        .unwrap_or(Grade::Small)
}

/// The default policy: the candidate with the most admission headroom right now, then the
/// cheapest (input plus output price per million tokens), then the smallest id.
///
/// Headroom is [`BudgetStore::headroom`] on the entry's budget; a budget the store does not know
/// counts as fully free (1.0). Prices are compared as numbers: entries priced in different
/// currencies are not converted.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeadroomPicker;

impl HeadroomPicker {
    /// The default picker.
    pub fn new() -> Self {
        Self
    }
}

impl Picker for HeadroomPicker {
    fn pick(
        &self,
        _grade: Grade,
        candidates: &[&Entry],
        budgets: &dyn BudgetStore,
    ) -> Option<String> {
        let scored: Vec<(f64, &Entry)> = candidates
            .iter()
            .map(|e| (budgets.headroom(&e.budget_name()).unwrap_or(1.0), *e))
            .collect();
        scored
            .into_iter()
            .min_by(|(ha, a), (hb, b)| {
                // More headroom first, so compare b to a.
                hb.total_cmp(ha).then_with(|| cheaper_first(a, b))
            })
            .map(|(_, e)| e.id().to_owned())
    }
}

/// The tie-break order of [`HeadroomPicker`]: lower input plus output price first, then the
/// smaller id. An entry without prices comes after every priced one (its cost is unknown, so it
/// is never taken for the cheaper). Exposed for pickers that want the same tie-breaks.
pub fn cheaper_first(a: &Entry, b: &Entry) -> Ordering {
    let price = |e: &Entry| (e.list_price().is_none(), e.list_price().unwrap_or(0.0));
    let (a_unknown, a_price) = price(a);
    let (b_unknown, b_price) = price(b);
    a_unknown
        .cmp(&b_unknown)
        .then_with(|| a_price.total_cmp(&b_price))
        .then_with(|| a.id().cmp(b.id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::{MemoryBudgets, Reservation};
    use crate::job::Ask;
    use crate::model::ModelRouter;

    fn small_candidates(catalog: &Catalog) -> Vec<&Entry> {
        catalog
            .entries_of(Grade::Small)
            .into_iter()
            .filter(|e| e.is_open())
            .collect()
    }

    #[test]
    fn equal_headroom_picks_the_cheapest() {
        let catalog = Catalog::bundled();
        let budgets = MemoryBudgets::new();
        for e in catalog.entries() {
            budgets.configure(&e.budget_name(), e.limits());
        }
        let candidates = small_candidates(&catalog);
        let picked = HeadroomPicker.pick(Grade::Small, &candidates, &budgets);
        // sim-small-text lists at 0.08 + 0.30, the cheapest small entry.
        assert_eq!(picked.as_deref(), Some("sim-small-text"));
    }

    #[tokio::test]
    async fn the_entry_with_most_headroom_wins_over_a_cheaper_one() {
        let catalog = Catalog::bundled();
        let budgets = MemoryBudgets::new();
        for e in catalog.entries() {
            budgets.configure(&e.budget_name(), e.limits());
        }
        let cheapest = catalog.entry("sim-small-text").unwrap();
        // Use a tenth of the cheapest entry's token budget.
        let ask = Ask {
            budget: cheapest.budget_name(),
            tokens: 200_000,
            input_tokens: 0,
            output_tokens: 0,
            requests: 1,
            slots: 1,
        };
        let granted = budgets.try_reserve(&ask).await.unwrap();
        assert!(matches!(granted, Reservation::Granted(_)));
        assert!(budgets.headroom(&cheapest.budget_name()).unwrap() < 1.0);

        let candidates = small_candidates(&catalog);
        let picked = HeadroomPicker.pick(Grade::Small, &candidates, &budgets);
        // The two untouched entries tie on headroom; sim-small-a is cheaper than sim-small-b.
        assert_eq!(picked.as_deref(), Some("sim-small-a"));
    }

    #[tokio::test]
    async fn an_unknown_budget_counts_as_fully_free() {
        let catalog = Catalog::bundled();
        let budgets = MemoryBudgets::new();
        let a = catalog.entry("sim-mega-a").unwrap();
        let b = catalog.entry("sim-mega-b").unwrap();
        assert_eq!(cheaper_first(a, b), Ordering::Less);
        // Nothing configured: both count as free and the cheaper one wins.
        assert_eq!(
            HeadroomPicker
                .pick(Grade::Mega, &[b, a], &budgets)
                .as_deref(),
            Some("sim-mega-a")
        );
        // Only sim-mega-a is known, and one of its slots is taken: sim-mega-b wins.
        budgets.configure(&a.budget_name(), a.limits());
        let ask = Ask {
            budget: a.budget_name(),
            tokens: 1,
            input_tokens: 0,
            output_tokens: 0,
            requests: 1,
            slots: 1,
        };
        assert!(matches!(
            budgets.try_reserve(&ask).await.unwrap(),
            Reservation::Granted(_)
        ));
        assert_eq!(
            HeadroomPicker
                .pick(Grade::Mega, &[a, b], &budgets)
                .as_deref(),
            Some("sim-mega-b")
        );
        assert_eq!(HeadroomPicker.pick(Grade::Mega, &[], &budgets), None);
    }

    #[test]
    fn equal_headroom_and_price_fall_back_to_the_id() {
        let mut text = String::from(
            "[providers.p]\ndialect = \"openai-compatible\"\nbase_url = \"http://localhost:1/v1\"\n",
        );
        for id in ["m-zeta", "m-alpha", "m-mid"] {
            text.push_str(&format!(
                "[[entries]]\nid = \"{id}\"\nprovider = \"p\"\nmodel = \"{id}\"\ngrade = \"large\"\n\
                 context_window = 1000\noutput_ceiling = 100\nprice_in = 1\nprice_out = 2\ncurrency = \"USD\"\n"
            ));
        }
        let catalog = Catalog::from_toml_str(&text, "ties.toml").unwrap();
        let candidates: Vec<&Entry> = catalog.entries().iter().collect();
        let picked = HeadroomPicker.pick(Grade::Large, &candidates, &MemoryBudgets::new());
        assert_eq!(picked.as_deref(), Some("m-alpha"));
    }

    #[test]
    fn ceiling_is_the_highest_rung_with_an_open_entry_inside_the_envelope() {
        let catalog = Catalog::bundled();
        assert_eq!(
            resolve_ceiling(&catalog, &Envelope::unrestricted()),
            Grade::Mega
        );
        // Both mega entries stay inside an EU envelope through sim-mega-b.
        let eu = Envelope::unrestricted().require_tag("region", ["eu"]);
        assert_eq!(resolve_ceiling(&catalog, &eu), Grade::Mega);
        // us/zero excludes both mega entries; sim-xl-a is inside.
        let us_zero = Envelope::unrestricted()
            .require_tag("region", ["us"])
            .require_tag("retention", ["zero"]);
        assert_eq!(resolve_ceiling(&catalog, &us_zero), Grade::Xl);
        assert_eq!(HeadroomPicker.ceiling(&catalog, &us_zero), Grade::Xl);
        // eu/30d keeps only sim-small-text and sim-medium-b.
        let eu_30d = eu.require_tag("retention", ["30d"]);
        assert_eq!(resolve_ceiling(&catalog, &eu_30d), Grade::Medium);
        // No entry is tagged for this retention: nothing is served, and the ceiling is small.
        let none = Envelope::unrestricted().require_tag("retention", ["7d"]);
        assert_eq!(resolve_ceiling(&catalog, &none), Grade::Small);
    }

    const OLLAMA: &str = include_str!("../../catalogs/examples/ollama.toml");
    const ANTHROPIC: &str = include_str!("../../catalogs/examples/anthropic.toml");

    /// `base` with one more provider `elsewhere` (region `far`) serving an open entry `top` of
    /// `grade`: a rung above what `base` serves that an envelope can exclude.
    fn with_top_rung(base: &str, grade: Grade) -> Catalog {
        let text = format!(
            "{base}\n[providers.elsewhere]\ndialect = \"openai-compatible\"\n\
             base_url = \"http://localhost:1/v1\"\n\
             [[entries]]\nid = \"top\"\nprovider = \"elsewhere\"\nmodel = \"top\"\n\
             grade = \"{grade}\"\ncontext_window = 1000\noutput_ceiling = 100\nprice_in = 1\n\
             price_out = 1\ncurrency = \"USD\"\ncompliance = {{ region = \"far\" }}\n"
        );
        Catalog::from_toml_str(&text, "with-top.toml").unwrap()
    }

    #[test]
    fn ceiling_is_the_strongest_rung_the_shipped_example_catalogs_serve() {
        let ollama = Catalog::from_toml_str(OLLAMA, "ollama.toml").unwrap();
        assert_eq!(
            resolve_ceiling(&ollama, &Envelope::unrestricted()),
            Grade::Medium
        );
        let anthropic = Catalog::from_toml_str(ANTHROPIC, "anthropic.toml").unwrap();
        assert_eq!(
            resolve_ceiling(&anthropic, &Envelope::unrestricted()),
            Grade::Large
        );
        // The seat a judge or `thinkers chat --grade ceiling` takes is served.
        for (catalog, id) in [(ollama, "ollama-medium"), (anthropic, "claude-large")] {
            let router = ModelRouter::with_headroom_picker(catalog, Envelope::unrestricted());
            let entry = router
                .resolve(Grade::Ceiling, None, &MemoryBudgets::new())
                .unwrap();
            assert_eq!(entry.id(), id);
        }
    }

    #[test]
    fn ceiling_skips_a_top_rung_the_envelope_excludes() {
        for (base, top, below, id) in [
            (OLLAMA, Grade::Mega, Grade::Medium, "ollama-medium"),
            (OLLAMA, Grade::Xl, Grade::Medium, "ollama-medium"),
            (ANTHROPIC, Grade::Xl, Grade::Large, "claude-large"),
        ] {
            let catalog = with_top_rung(base, top);
            assert_eq!(resolve_ceiling(&catalog, &Envelope::unrestricted()), top);
            let by_provider = Envelope::unrestricted().allow_providers(["ollama", "anthropic"]);
            let by_tag = Envelope::unrestricted().require_tag("region", ["local", "us"]);
            for envelope in [by_provider, by_tag] {
                assert_eq!(resolve_ceiling(&catalog, &envelope), below, "{envelope:?}");
                let router = ModelRouter::with_headroom_picker(catalog.clone(), envelope);
                let entry = router
                    .resolve(Grade::Ceiling, None, &MemoryBudgets::new())
                    .unwrap();
                assert_eq!(entry.id(), id);
            }
        }
    }

    #[test]
    fn ceiling_walks_down_to_small_and_names_small_when_nothing_is_served() {
        // With ollama.toml's medium entry closed the ceiling is small; with every entry outside
        // the envelope it stays small, and routing names that rung.
        let closed = OLLAMA.replacen(
            "native_tools = false",
            "native_tools = false\nopen = false",
            1,
        );
        let catalog = Catalog::from_toml_str(&closed, "ollama.toml").unwrap();
        assert_eq!(
            resolve_ceiling(&catalog, &Envelope::unrestricted()),
            Grade::Small
        );
        let nowhere = Envelope::unrestricted().require_tag("region", ["mars"]);
        assert_eq!(resolve_ceiling(&catalog, &nowhere), Grade::Small);
        let router = ModelRouter::with_headroom_picker(catalog, nowhere);
        let err = router
            .resolve(Grade::Ceiling, None, &MemoryBudgets::new())
            .unwrap_err();
        assert!(err.to_string().contains("grade `small`"), "{err}");
    }
}
