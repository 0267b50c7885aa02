// A `JobContext` is made by the submission door only: its lineage, scope and dispatcher cannot be
// assembled by hand to run a job outside the record or under another scope.
use thinkers::job::JobContext;

fn forge(cx: &JobContext) -> JobContext {
    JobContext {
        node: cx.node.clone(),
    }
}

fn main() {}
