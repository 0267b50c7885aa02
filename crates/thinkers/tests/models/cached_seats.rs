//! A seat asks admission for the input its provider will count: on an Anthropic entry (cache
//! reads left out of its input limits), a turn extending a prefix an earlier call left in the
//! prompt cache asks only for what it adds; the usage reported then settles it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use thinkers::Runtime;
use thinkers::conversation::Message;
use thinkers::dispatch::{
    AxisRate, BudgetStore, Lease, Limits, MemoryBudgets, RateObservation, Reservation,
};
use thinkers::job::{Ask, SeatUse};
use thinkers::llm::{ChatRequest, LlmCall};
use thinkers::model::{Catalog, Grade, OutputSize};
use thinkers_sim::{Sim, SimConfig, SimModel};

/// The in-process store, keeping the input tokens of every ask it grants.
#[derive(Default)]
struct Asks {
    inner: MemoryBudgets,
    input: Mutex<Vec<u64>>,
}

impl BudgetStore for Asks {
    fn configure(&self, budget: &str, limits: Limits) {
        self.inner.configure(budget, limits);
    }
    fn limits(&self, budget: &str) -> Option<Limits> {
        self.inner.limits(budget)
    }
    fn try_reserve<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, thinkers::Result<Reservation>> {
        Box::pin(async move {
            let r = self.inner.try_reserve(ask).await;
            if matches!(r, Ok(Reservation::Granted(_))) {
                self.input.lock().unwrap().push(ask.input_tokens);
            }
            r
        })
    }
    fn settle(&self, lease: &Lease, used: SeatUse) {
        self.inner.settle(lease, used);
    }
    fn release(&self, lease: &Lease) {
        self.inner.release(lease);
    }
    fn pause(&self, budget: &str, wait: Duration) {
        self.inner.pause(budget, wait);
    }
    fn observe(&self, budget: &str, obs: RateObservation) {
        self.inner.observe(budget, obs);
    }
    fn headroom(&self, budget: &str) -> Option<f64> {
        self.inner.headroom(budget)
    }
    fn rates(&self, budget: &str) -> Vec<AxisRate> {
        self.inner.rates(budget)
    }
}

fn catalog(base: &str, reads_count: bool) -> Catalog {
    let toml = format!(
        "[providers.claude]\ndialect = \"anthropic\"\nbase_url = \"{base}\"\n\
         api_key_env = \"THINKERS_SIM_KEY\"\n\n[[entries]]\nid = \"claude\"\nprovider = \"claude\"\n\
         model = \"claude-cached\"\ngrade = \"small\"\ncontext_window = 200000\n\
         output_ceiling = 4096\nitpm = 1000000\nprice_in = 3\nprice_out = 15\nprice_cached = 0.3\n\
         currency = \"USD\"\ncache_reads_count = {reads_count}\n"
    );
    Catalog::from_toml_str(&toml, "cached.toml").unwrap()
}

/// Three turns of one conversation under a long system prompt; the input each turn's seat asked
/// for, and the cache reads each reported.
async fn three_turns(reads_count: bool) -> (Vec<u64>, Vec<(u64, u64)>) {
    let sim = Sim::start(
        SimConfig::builder()
            .model(
                SimModel::new("claude-cached")
                    .prompt_cache(true)
                    .cache_min_tokens(1024),
            )
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let asks = Arc::new(Asks::default());
    let rt = Runtime::builder(catalog(&sim.base_url(), reads_count))
        .budgets(asks.clone())
        .build()
        .await
        .unwrap();
    let system: String = (0..300)
        .map(|i| format!("Rule {i}: answer in plain words, and cite clause {i} when it applies. "))
        .collect();
    let mut messages = vec![Message::user_text("Where is my order?")];
    let mut usage = Vec::new();
    for turn in 0..3 {
        let request = ChatRequest::new(system.clone(), messages.clone());
        let call = LlmCall::new(Grade::Small, OutputSize::Compact, request).pinned("claude");
        let outcome = rt.run(call).await.unwrap();
        let u = outcome.response.usage;
        usage.push((u.input, u.cached));
        messages.push(Message::assistant_text(outcome.response.text()));
        messages.push(Message::user_text(format!("And turn {turn}?")));
    }
    rt.shutdown().await.unwrap();
    let asked = asks.input.lock().unwrap().clone();
    (asked, usage)
}

#[tokio::test]
async fn a_turn_extending_a_cached_prefix_asks_only_for_what_it_adds() {
    let (asked, usage) = three_turns(false).await;
    assert_eq!(asked.len(), 3, "{asked:?} {usage:?}");
    // The provider read the earlier turns' prefix from its cache.
    assert!(usage[1].1 > 2_000 && usage[2].1 > usage[1].1, "{usage:?}");
    // The first turn asks for its whole input; the next ones for what they add, a small part.
    assert!(asked[0] > 2_000, "{asked:?}");
    for turn in 1..3 {
        let (input, read) = usage[turn];
        assert!(
            asked[turn] < input / 5,
            "turn {turn} asked {} of its {input} input tokens ({read} read from the cache)",
            asked[turn]
        );
    }
}

#[tokio::test]
async fn where_cache_reads_count_the_seat_asks_for_the_whole_input() {
    let (asked, usage) = three_turns(true).await;
    assert!(usage[2].1 > 2_000, "{usage:?}");
    for turn in 0..3 {
        assert!(asked[turn] * 10 > usage[turn].0 * 8, "{asked:?} {usage:?}");
    }
}
