//! Content stream events: a directly submitted thinker publishes its accepted answer for a
//! frontend watching the run. A thinker started by another thinker returns its answer to that
//! caller instead and publishes nothing. A chat's answer carries the conversation's artifacts,
//! as its [`super::ChatEvent::Answer`] does.

use tokio::sync::broadcast;

use super::chat::ChatArtifact;
use super::declaration::parent_thinker_depth;
use crate::job::{JobContext, JobId};

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
    /// The artifacts that go with the answer: for a chat (a reactive thinker), every artifact
    /// registered in its conversation so far, as on its answer's [`super::ChatEvent::Answer`];
    /// empty for the other families, whose answer names the refs it relies on itself.
    pub artifacts: Vec<ChatArtifact>,
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
    pub(crate) fn publish(&self, event: ContentStreamEvent) {
        let _ = self.sender.send(event);
    }
}

impl Default for ContentStream {
    fn default() -> Self {
        Self::new(64)
    }
}

/// Publish an accepted answer of a directly submitted thinker (its JSON; the text of a string
/// answer), without artifacts: see [`publish`].
pub(crate) fn publish_answer(
    stream: Option<&ContentStream>,
    json: &serde_json::Value,
    cx: &JobContext,
) {
    let content = match json {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    publish(stream, content, Vec::new(), cx);
}

/// Publish an accepted answer of a directly submitted thinker: on the job's metadata under
/// [`META_CONTENT`] and as an event, with `artifacts`, on `stream` (or on the
/// [`ContentStream`] registered as a dispatcher service, if any). A thinker running under
/// another thinker publishes nothing.
pub(crate) fn publish(
    stream: Option<&ContentStream>,
    content: String,
    artifacts: Vec<ChatArtifact>,
    cx: &JobContext,
) {
    if parent_thinker_depth(cx).is_some() {
        return;
    }
    let registered = stream
        .is_none()
        .then(|| cx.services().get::<ContentStream>())
        .flatten();
    let stream = stream.or(registered.as_deref());
    // The event gets a copy only when there is a stream to publish it on; the metadata is set
    // before the event goes out.
    let event = stream.map(|_| ContentStreamEvent {
        job: cx.id(),
        class: cx.class().to_owned(),
        content: content.clone(),
        artifacts,
    });
    cx.set_metadata(META_CONTENT, serde_json::Value::String(content));
    if let (Some(stream), Some(event)) = (stream, event) {
        stream.publish(event);
    }
}
