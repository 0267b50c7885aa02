// `Resources` are made by the dispatcher's attempt loop only, around the permit admission minted
// for the attempt: no constructor is public, so a model call (`converse_bound`, which spends a
// seat the resources hold) can never be handed a fabricated admission.
use thinkers::dispatch::Permit;
use thinkers::job::{AttemptInfo, Resources};

fn forge(permit: Permit) -> Resources {
    Resources::new(permit, AttemptInfo::default())
}

fn main() {}
