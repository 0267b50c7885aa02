//! The chat host of [`thinkers`]: [`ChatHost`] serves [`ChatThinker`]s over HTTP — a JSON API,
//! server-sent events for each chat's turns, and a web page — and the runs explorer (`/runs`),
//! with the chat list kept in the runtime's database (SQLite, or PostgreSQL shared by several hosts) so chats
//! survive a restart. It is its own crate so that only it depends on axum; `thinkers serve`
//! runs it.
//!
//! | method and path | what it does |
//! |---|---|
//! | `GET /` | the web page (chat list, conversation, streamed answers, tool activity, errors) |
//! | `POST /api/chats` | create a chat (`{"title": …}` optional) |
//! | `GET /api/chats` | list chats, the most recently changed first |
//! | `GET /api/chats/{id}` | a chat and its messages |
//! | `POST /api/chats/{id}/messages` | `{"text": …}`: joins the open turn, or starts one (202) |
//! | `GET /api/chats/{id}/events` | server-sent events of the chat's turns, numbered from 1 |
//!
//! Events are `message`, `token`, `tool_call`, `tool_result`, `answer` and `error`, each with an
//! `id:` that increases by one per event of the chat and JSON data (the [`ChatEvent`](thinkers::thinker::ChatEvent) with its
//! `type`). A subscriber receives events after its `Last-Event-ID` header (a reconnecting
//! browser sends it) or `?after=N` (the history's `last_event_id`), else only new ones. Bad input is answered with a 4xx and `{"error": …, "field": …}` naming what
//! was wrong: `chat_id` (404), `body` (malformed JSON, 400), `text` (missing or empty, 422;
//! too long, 413), `title` (422).
//!
//! The chat list lives in the runtime's store ([`ChatStore`]: SQLite or PostgreSQL) and each
//! chat's messages in its durable conversation, so a host started again on the same database
//! serves the same chats. Turns of one chat run one at a time: a message arriving after a turn
//! closed starts the next, which waits until the last has saved.
//!
//! # Who is let in
//!
//! * **Without a token** (the default; [`ChatHost::start`] then binds a loopback address only)
//!   a request must name a loopback host: its `Host` (and the authority of an absolute or
//!   HTTP/2 target) is `localhost`, a `*.localhost` name, an address in `127.0.0.0/8` or
//!   `[::1]`, with or without a port. Anything else, or no host at all (HTTP/1.0), is a 421
//!   with a short plain-text reason. Listening on the loopback does not keep a browser's pages
//!   out: a page the person visits can point its own domain at 127.0.0.1 (DNS rebinding) and
//!   then read and write this host as its own origin, under its own name; that name is what
//!   gives it away.
//! * **With a token** the name is not checked. A rebound page still reaches the port, but it
//!   cannot authenticate: it does not know the token, and the browser keeps the host's
//!   cookie for the host's own name, never sending it to the rebound one, so every request is
//!   a 401. And a host other machines reach (behind a proxy, under a LAN or public name) is
//!   addressed by names it cannot know in advance.
//! * **Writes from another site** are refused (403, naming `origin`) token or not: a `POST`
//!   (any method but `GET`, `HEAD`, `OPTIONS`) whose `Origin` is present and is neither the
//!   origin its `Host` names nor, for a host listening on a loopback address, a loopback origin
//!   with the port it listens on. With a token this is a second wall behind the
//!   `SameSite=Strict` cookie. Clients that send no `Origin` (curl, scripts) are not affected.
//! * A token has at least [`HostToken::MIN_CHARS`] characters; [`HostToken::generate`] makes
//!   one.
//!
//! On PostgreSQL several hosts may serve the same chats. A turn then also holds the chat's lock
//! in the database ([`ChatStore::lock_turn`]) and, once it holds it, continues the conversation
//! as stored (another host may have added a turn since). A turn waits for another host's turn
//! at most [`HostConfig::turn_wait`]; past that it is given up and an `error` event says the
//! chat was busy and the message was not answered. Events are streamed by the host that runs
//! the turn, so route a chat's requests to one host when you can; the lock keeps turns apart
//! when they do reach two.

mod api;
mod auth;
mod config;
mod explorer;
mod running;
mod session;
mod turn;

pub use config::{HostConfig, HostToken, TOKEN_COOKIE};
pub use running::RunningHost;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, PoisonError};

use serde::Serialize;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::session::Session;
use thinkers::conversation::{ConversationId, ConversationService, Message};
use thinkers::dispatch::Dispatcher;
use thinkers::runtime::Runtime;
use thinkers::thinker::{ChatThinker, Delivery};
use thinkers::{Error, Result};
use thinkers_store::RuntimeExt as _;
use thinkers_store::{ChatRecord, ChatStore};

/// The answer recorded in place of a turn the host did not finish: it was stopped (SIGTERM,
/// a shutdown) or killed while the turn ran.
pub const HOST_STOPPED_MARKER: &str =
    "[no answer: the chat host stopped before this turn finished]";

/// Makes the thinker of a chat; the host adds the conversation to resume and its events.
pub type ChatFactory = Arc<dyn Fn() -> ChatThinker + Send + Sync>;

/// Runs after a person decides a workflow's call in the runs explorer, with the decided
/// approval: tells the engine that runs the workflow (the CLI's `thinkers serve --restate`
/// resolves the Restate promise it waits on). See [`ChatHost::on_decided`].
pub type DecisionHook = Arc<
    dyn Fn(thinkers::durable::Approval) -> futures::future::BoxFuture<'static, Result<()>>
        + Send
        + Sync,
>;

pub(crate) struct HostInner {
    dispatcher: Dispatcher,
    conversations: Arc<ConversationService>,
    chats: ChatStore,
    /// The runtime's store, which the runs explorer reads.
    store: thinkers_store::Store,
    /// The approvals of the calls chats wait on (the runtime's store).
    steps: Arc<dyn thinkers::durable::StepStore>,
    factory: ChatFactory,
    config: HostConfig,
    /// Cancelled by [`RunningHost::shutdown`]: event streams end with it.
    stop: CancellationToken,
    /// The running turns, which a shutdown lets finish (and save).
    turns: TaskTracker,
    /// Runs after a workflow's call is decided (see [`ChatHost::on_decided`]).
    on_decided: std::sync::Mutex<Option<DecisionHook>>,
    sessions: tokio::sync::Mutex<HashMap<String, Arc<Session>>>,
}

/// Serves chats over HTTP (see the module docs). Cheap to clone.
#[derive(Clone)]
pub struct ChatHost {
    inner: Arc<HostInner>,
}

impl std::fmt::Debug for ChatHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatHost")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// A chat and its conversation, as `GET /api/chats/{id}` returns it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatHistory {
    /// The chat.
    pub chat: ChatRecord,
    /// Its messages in order (text, tool calls, tool results, rollback markers).
    pub messages: Vec<Message>,
    /// Whether a turn is open (a message posted now joins it).
    pub turn_open: bool,
    /// The id of the chat's latest event: subscribe with `?after=` this id to miss nothing.
    pub last_event_id: u64,
    /// The calls the chat waits on for a person's decision (see [`thinkers::durable`]).
    pub approvals: Vec<thinkers::durable::Approval>,
}

/// What a message post did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Posted {
    /// The message joined the open turn.
    Joined,
    /// The message started a turn.
    Started,
}

impl ChatHost {
    /// A host running chats made by `factory` on `runtime`, whose store (SQLite or PostgreSQL)
    /// keeps the chat list (a runtime without a database is refused, naming `database`).
    pub fn new(runtime: &Runtime, factory: ChatFactory, config: HostConfig) -> Result<Self> {
        let store = runtime.open_store().ok_or_else(|| {
            Error::invalid_input(
                "database",
                None,
                "the chat host keeps its chats in the runtime's database; build the runtime \
                 with one (thinkers_store::RuntimeBuilderExt::database)",
            )
        })?;
        Ok(Self {
            inner: Arc::new(HostInner {
                dispatcher: runtime.dispatcher().clone(),
                conversations: runtime.conversations().clone(),
                chats: ChatStore::of(store),
                store: store.clone(),
                steps: store.steps(),
                factory,
                config,
                stop: CancellationToken::new(),
                turns: TaskTracker::new(),
                on_decided: std::sync::Mutex::new(None),
                sessions: tokio::sync::Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The axum router of the page and the API, with the access checks of the module docs.
    /// Served by its embedder, it does not know the address it listens on: a write's `Origin`
    /// must then be exactly the origin its `Host` names.
    pub fn router(&self) -> axum::Router {
        api::router(self.clone(), None)
    }

    /// Serve on `addr` (port 0 picks a free one) until [`RunningHost::shutdown`], which ends
    /// this host's event streams too (a host is started once). A non-loopback address without
    /// a [`HostConfig::token`] is refused naming `addr`: anyone reaching it could read every
    /// chat and spend the operator's model budget.
    pub async fn start(&self, addr: SocketAddr) -> Result<RunningHost> {
        if !addr.ip().is_loopback() && self.inner.config.token.is_none() {
            return Err(Error::invalid_input(
                "addr",
                Some(addr.to_string()),
                "a host reachable from other machines needs a token (HostConfig::token; \
                 `thinkers serve --token` or THINKERS_SERVE_TOKEN); bind 127.0.0.1 to serve \
                 without one",
            ));
        }
        let listener = TcpListener::bind(addr).await.map_err(|e| {
            Error::invalid_input(
                "addr",
                Some(addr.to_string()),
                format!("cannot listen there: {e}"),
            )
        })?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::system("chat host", format!("no local address after bind: {e}")))?;
        let stop = self.inner.stop.clone();
        let shutdown = stop.clone();
        let app = api::router(self.clone(), Some(addr));
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move { shutdown.cancelled().await })
                .await
        });
        tracing::info!(%addr, "chat host listening");
        Ok(RunningHost::new(addr, stop, task, self.inner.turns.clone()))
    }

    /// Create a chat.
    pub async fn create_chat(&self, title: &str) -> Result<ChatRecord> {
        self.inner.chats.create(title).await
    }

    /// Every chat, the most recently changed first.
    pub async fn list_chats(&self) -> Result<Vec<ChatRecord>> {
        self.inner.chats.list().await
    }

    fn unknown_chat(id: &str) -> Error {
        Error::invalid_input("chat_id", Some(id.to_owned()), "no chat has this id")
    }

    /// The chat's record and its messages (an unknown id is an error naming `chat_id`).
    pub async fn history(&self, id: &str) -> Result<ChatHistory> {
        let record = self
            .inner
            .chats
            .get(id)
            .await?
            .ok_or_else(|| Self::unknown_chat(id))?;
        // Loading the session closes a turn a stopped host left open (own store only).
        if !self.inner.chats.is_shared() {
            self.session(id).await?;
        }
        let session = self.inner.sessions.lock().await.get(id).cloned();
        // The event id first: every event up to it changed the conversation before it was
        // reported, so the messages read next already show it (a later one may show twice).
        let last_event_id = session.as_ref().map_or(0, |s| s.last_id());
        // The thinker's copy is the freshest while a turn runs here; otherwise, when other
        // hosts share the store, the stored conversation may be newer.
        if let Some(s) = &session
            && s.thinker.observer().conversation().is_some()
            && (!self.inner.chats.is_shared() || s.turn_running())
        {
            let conversation = s.thinker.conversation_id().map(|c| c.to_string());
            let approvals = self
                .waiting(
                    conversation
                        .as_deref()
                        .or(record.conversation_id.as_deref()),
                )
                .await?;
            return Ok(ChatHistory {
                chat: record,
                messages: s.thinker.observer().messages(),
                turn_open: s.thinker.is_turn_open(),
                last_event_id,
                approvals,
            });
        }
        let messages = match &record.conversation_id {
            Some(cid) => {
                let cid = ConversationId::parse(cid)?;
                self.inner
                    .conversations
                    .resume(&cid)
                    .await?
                    .messages()
                    .to_vec()
            }
            None => Vec::new(),
        };
        // The chat row links its conversation when a turn ends; the session knows it sooner.
        let conversation = session
            .as_ref()
            .and_then(|s| s.thinker.conversation_id())
            .map(|c| c.to_string());
        let approvals = self
            .waiting(
                conversation
                    .as_deref()
                    .or(record.conversation_id.as_deref()),
            )
            .await?;
        Ok(ChatHistory {
            chat: record,
            messages,
            turn_open: session.is_some_and(|s| s.thinker.is_turn_open()),
            last_event_id,
            approvals,
        })
    }

    /// The pending approvals of the chat whose conversation is `conversation`.
    async fn waiting(
        &self,
        conversation: Option<&str>,
    ) -> Result<Vec<thinkers::durable::Approval>> {
        let Some(cid) = conversation else {
            return Ok(Vec::new());
        };
        let run = format!("conversation:{cid}");
        let mut pending = self.inner.steps.approvals(true).await?;
        pending.retain(|a| a.run == run);
        Ok(pending)
    }

    /// The loaded session of a chat, loading it (and the conversation it resumes) when needed.
    pub(crate) async fn session(&self, id: &str) -> Result<Arc<Session>> {
        let mut sessions = self.inner.sessions.lock().await;
        if let Some(s) = sessions.get(id) {
            return Ok(s.clone());
        }
        let record = self
            .inner
            .chats
            .get(id)
            .await?
            .ok_or_else(|| Self::unknown_chat(id))?;
        let mut thinker = (self.inner.factory)();
        if let Some(cid) = &record.conversation_id {
            let cid = ConversationId::parse(cid)?;
            // Only this host serves the chat (a store of its own): a turn left open in the
            // store was cut short by a host that stopped or died. Shared stores check under
            // the chat's turn lock instead (`stored_turn`).
            if !self.inner.chats.is_shared() {
                self.close_interrupted_turn(&cid).await?;
            }
            thinker = thinker.resume(cid);
        }
        let session = Arc::new(Session::new(record.id.clone(), thinker));
        sessions.insert(record.id, session.clone());
        Ok(session)
    }

    /// Hand a message to the chat: it joins the open turn, or starts a new one that runs after
    /// the previous turn has finished saving.
    pub(crate) async fn post(&self, id: &str, text: String) -> Result<Posted> {
        let session = self.session(id).await?;
        let _posting = session
            .posting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if session.thinker.add_message(text) == Delivery::Joined {
            return Ok(Posted::Joined);
        }
        let job = session.thinker.turn();
        let host = self.clone();
        let running = session.clone();
        self.inner
            .turns
            .spawn(async move { host.run_turn(running, job).await });
        Ok(Posted::Started)
    }

    /// Decide a call the chat `id` waits on (the approval's id as its `approval` event named
    /// it). When no call of the chat waits any more, the stopped turn goes on: the approved
    /// calls run, the denied ones are answered with the reason, and the model continues. An
    /// approval of another chat, or an unknown one, is refused naming it.
    pub async fn decide(
        &self,
        id: &str,
        approval: &str,
        decision: &thinkers::durable::Decision,
    ) -> Result<thinkers::durable::Approval> {
        let session = self.session(id).await?;
        let run = session
            .thinker
            .conversation_id()
            .map(|c| format!("conversation:{c}"));
        let known = self
            .inner
            .steps
            .approvals(false)
            .await?
            .into_iter()
            .find(|a| a.id == approval.trim());
        let Some(known) = known else {
            return Err(thinkers::durable::unknown_approval(approval));
        };
        if run.as_deref() != Some(known.run.as_str()) {
            return Err(Error::invalid_input(
                "approval",
                Some(approval.to_owned()),
                "this call belongs to another chat",
            ));
        }
        let decided = self.inner.steps.decide(&known.id, decision).await?;
        let waiting = self
            .inner
            .steps
            .approvals(true)
            .await?
            .iter()
            .any(|a| a.run == known.run);
        if !waiting {
            let job = session.thinker.continue_turn();
            let host = self.clone();
            let running = session.clone();
            self.inner
                .turns
                .spawn(async move { host.run_turn(running, job).await });
        }
        Ok(decided)
    }

    pub(crate) fn config(&self) -> &HostConfig {
        &self.inner.config
    }

    pub(crate) fn store(&self) -> &thinkers_store::Store {
        &self.inner.store
    }

    /// Run `hook` after each decision of a workflow's call made in the runs explorer (the
    /// decision is stored first; a hook that fails is reported to the person, who may decide
    /// again the same way to retry it). Replaces an earlier hook.
    pub fn on_decided(&self, hook: DecisionHook) -> &Self {
        *self
            .inner
            .on_decided
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(hook);
        self
    }

    pub(crate) fn decision_hook(&self) -> Option<DecisionHook> {
        self.inner
            .on_decided
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn steps(&self) -> &Arc<dyn thinkers::durable::StepStore> {
        &self.inner.steps
    }

    pub(crate) fn stopping(&self) -> CancellationToken {
        self.inner.stop.clone()
    }
}
