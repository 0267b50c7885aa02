// A child's scope is its parent's sealed one or narrower. A job reaches no submission door but
// its context's, and the one of those that takes a scope (`FanOut::narrowed`) narrows
// the parent's, refusing a wider one at run time (`tests/foundation/scope.rs`): the dispatcher,
// whose root doors take any scope, is not reachable from a context.
use thinkers::job::{JobContext, ScopeGuard, doer};

fn escape(cx: &JobContext) {
    let job = doer("escapee", |_| async { Ok(()) });
    let _ = cx.dispatcher().submit_scoped(job, ScopeGuard::unbound());
}

fn main() {}
