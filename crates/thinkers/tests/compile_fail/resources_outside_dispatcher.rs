// The permit an attempt's resources must hold for a model call is minted only by the
// dispatcher's admission: it has no constructor and private fields, so `converse_bound` cannot
// be handed a fabricated admission (resources around any other grant are refused at run time,
// `tests/models/admitted.rs`).
use thinkers::dispatch::Permit;

fn forge() -> Permit {
    Permit {
        admission: None,
        requirements: Vec::new(),
        leases: Vec::new(),
    }
}

fn main() {}
