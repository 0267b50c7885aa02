//! One chat's live state in the host: its [`ChatThinker`] (which keeps the conversation between
//! turns) and the numbered log of its [`ChatEvent`]s that SSE subscribers read.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::broadcast;

use thinkers::thinker::{ChatEvent, ChatEvents, ChatThinker};

/// Events kept per chat for subscribers that reconnect (`Last-Event-ID`) or ask from a point.
const KEPT_EVENTS: usize = 4096;

/// An event with its id: ids of one chat increase by one from 1, in the order events happened.
#[derive(Debug, Clone)]
pub(crate) struct Numbered {
    pub(crate) id: u64,
    pub(crate) event: ChatEvent,
}

#[derive(Debug)]
pub(crate) struct EventLog {
    next: u64,
    kept: VecDeque<Numbered>,
    live: broadcast::Sender<Numbered>,
}

impl EventLog {
    fn new() -> Self {
        let (live, _) = broadcast::channel(1024);
        Self {
            next: 1,
            kept: VecDeque::new(),
            live,
        }
    }

    fn push(&mut self, event: ChatEvent) {
        let numbered = Numbered {
            id: self.next,
            event,
        };
        self.next += 1;
        if self.kept.len() == KEPT_EVENTS {
            self.kept.pop_front();
        }
        self.kept.push_back(numbered.clone());
        // Nobody listening is fine: the event is kept for later subscribers.
        let _ = self.live.send(numbered);
    }
}

/// A chat the host has loaded.
pub(crate) struct Session {
    pub(crate) chat_id: String,
    pub(crate) thinker: ChatThinker,
    log: Arc<Mutex<EventLog>>,
    /// Held while deciding whether a message joins the open turn or starts one.
    pub(crate) posting: Mutex<()>,
    /// Held by the running turn, so the next waits until the last has saved.
    pub(crate) turn_lock: Arc<tokio::sync::Mutex<()>>,
}

fn lock(log: &Mutex<EventLog>) -> MutexGuard<'_, EventLog> {
    log.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Session {
    /// A session over `thinker`, whose events it numbers and keeps.
    pub(crate) fn new(chat_id: String, thinker: ChatThinker) -> Self {
        let log = Arc::new(Mutex::new(EventLog::new()));
        let sink = log.clone();
        let thinker = thinker.events(ChatEvents::new(move |e| lock(&sink).push(e)));
        Self {
            chat_id,
            thinker,
            log,
            posting: Mutex::new(()),
            turn_lock: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// Record an event the host itself reports (a turn that could not start).
    pub(crate) fn report(&self, event: ChatEvent) {
        lock(&self.log).push(event);
    }

    /// The kept events after `after` and a receiver of every later one, taken together so none
    /// falls between them.
    pub(crate) fn subscribe(&self, after: u64) -> (Vec<Numbered>, broadcast::Receiver<Numbered>) {
        let log = lock(&self.log);
        let replay = log.kept.iter().filter(|n| n.id > after).cloned().collect();
        (replay, log.live.subscribe())
    }

    /// Whether a turn of the chat is running in this host.
    pub(crate) fn turn_running(&self) -> bool {
        self.turn_lock.try_lock().is_err()
    }

    /// The id of the latest event (0 before any).
    pub(crate) fn last_id(&self) -> u64 {
        lock(&self.log).next - 1
    }
}
