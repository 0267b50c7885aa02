// The resources an attempt runs with (and the permit inside them) are made only by the
// dispatcher, so `converse_bound` cannot be handed a fabricated admission.
use thinkers::dispatch::Permit;
use thinkers::job::{AttemptInfo, Resources};

fn forge(permit: Permit) -> Resources {
    Resources::new(permit, AttemptInfo::default())
}

fn main() {}
