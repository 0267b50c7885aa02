// An orchestrator holds nothing: `Orchestrator` has no `timeout` to declare.
use std::borrow::Cow;
use std::time::Duration;

use thinkers::job::{JobContext, Orchestrator};

struct Hurried;

impl Orchestrator for Hurried {
    type Output = ();

    fn class(&self) -> Cow<'static, str> {
        Cow::Borrowed("hurried")
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(1))
    }

    async fn execute(&mut self, _cx: &JobContext) -> thinkers::Result<()> {
        Ok(())
    }
}

fn main() {}
