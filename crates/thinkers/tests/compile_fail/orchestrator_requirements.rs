// An orchestrator holds nothing: `Orchestrator` has no `requirements` to declare.
use std::borrow::Cow;

use thinkers::job::{JobContext, Orchestrator, Requirements};

struct Greedy;

impl Orchestrator for Greedy {
    type Output = ();

    fn class(&self) -> Cow<'static, str> {
        Cow::Borrowed("greedy")
    }

    fn requirements(&mut self, req: &mut Requirements, _cx: &JobContext) -> thinkers::Result<()> {
        req.resource("service:any", None);
        Ok(())
    }

    async fn execute(&mut self, _cx: &JobContext) -> thinkers::Result<()> {
        Ok(())
    }
}

fn main() {}
