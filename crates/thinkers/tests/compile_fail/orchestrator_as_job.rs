// An orchestrator cannot implement `Job` itself to ask for resources: the blanket
// `impl<T: Orchestrator> Job for T` already answers for it.
use std::borrow::Cow;

use thinkers::job::{Job, JobContext, Orchestrator, Requirements, Resources};

struct Sneaky;

impl Orchestrator for Sneaky {
    type Output = ();

    fn class(&self) -> Cow<'static, str> {
        Cow::Borrowed("sneaky")
    }

    async fn execute(&mut self, _cx: &JobContext) -> thinkers::Result<()> {
        Ok(())
    }
}

impl Job for Sneaky {
    type Output = ();

    fn class(&self) -> Cow<'static, str> {
        Cow::Borrowed("sneaky")
    }

    fn requirements(&mut self, req: &mut Requirements, _cx: &JobContext) -> thinkers::Result<()> {
        req.resource("service:any", None);
        Ok(())
    }

    async fn execute(&mut self, _res: &Resources, _cx: &JobContext) -> thinkers::Result<()> {
        Ok(())
    }
}

fn main() {}
