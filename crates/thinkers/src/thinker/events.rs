//! Content stream events: a directly submitted thinker publishes its accepted answer for a
//! frontend watching the run. A thinker started by another thinker returns its answer to that
//! caller instead and publishes nothing.

use tokio::sync::broadcast;

use crate::job::JobId;

/// The metadata key under which a directly submitted thinker also publishes its answer.
pub const META_CONTENT: &str = "thinker.content";

/// One published answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ContentStreamEvent {
    /// The thinker job that answered.
    pub job: JobId,
    /// The thinker's job class.
    pub class: String,
    /// The answer: its text for a string answer, its JSON otherwise.
    pub content: String,
}

/// A broadcast channel of [`ContentStreamEvent`]s. Register one as a dispatcher service (every
/// thinker publishes to it) or hand one to a thinker. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ContentStream {
    sender: broadcast::Sender<ContentStreamEvent>,
}

impl ContentStream {
    /// A stream keeping up to `capacity` events for slow subscribers.
    pub fn new(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity.max(1));
        Self { sender }
    }

    /// A new subscriber, receiving events published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<ContentStreamEvent> {
        self.sender.subscribe()
    }

    /// Publish an event (dropped when nobody listens).
    pub fn publish(&self, event: ContentStreamEvent) {
        let _ = self.sender.send(event);
    }
}

impl Default for ContentStream {
    fn default() -> Self {
        Self::new(64)
    }
}
