// Every thinker constructor takes a `ThinkerDeclaration` (grade and output size): there is no
// constructor without one.
use thinkers::thinker::SingleObjectiveThinker;

fn main() {
    let _thinker = SingleObjectiveThinker::<String>::new("Answer the question.");
}
