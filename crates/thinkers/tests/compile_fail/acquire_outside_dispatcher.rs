// Only the dispatcher's attempt loop acquires a permit.
use thinkers::Dispatcher;

async fn hold_a_seat(dispatcher: &Dispatcher) {
    let _permit = dispatcher.admission().acquire(Vec::new()).await;
}

fn main() {}
