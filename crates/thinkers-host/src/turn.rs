//! A chat turn's run on the host: the chat's turn locks (this host's and the shared store's),
//! the conversation as stored, the link from the chat to it, and the marker a turn the host did
//! not finish leaves.

use std::sync::Arc;
use std::time::Duration;

use super::session::Session;
use super::{ChatHost, HOST_STOPPED_MARKER};
use thinkers::conversation::{ConversationId, Message, Role};
use thinkers::thinker::{ChatEvent, ReactiveTurn};
use thinkers::{Error, Result};
use thinkers_store::ChatTurnLock;

impl ChatHost {
    /// Run `job`, a turn of `session`'s chat, once no other turn of the chat runs: not here (the
    /// session's lock) and not on another host sharing the store (the store's lock, after
    /// which the turn continues the conversation as stored). Then record the chat's change.
    pub(super) async fn run_turn(self, session: Arc<Session>, job: ReactiveTurn) {
        let _here = session.turn_lock.clone().lock_owned().await;
        let chat = session.chat_id.as_str();
        let held = match self
            .inner
            .chats
            .lock_turn(chat, self.inner.config.turn_wait)
            .await
        {
            Ok(held) => held,
            Err(e) => return Self::give_up(&session, job, &e),
        };
        let job = match self.stored_turn(chat, job).await {
            Ok(job) => job,
            Err((job, e)) => {
                Self::give_up(&session, job, &e);
                return Self::release(chat, held).await;
            }
        };
        // Linked already when this host ran a turn of the chat (its copy is stored).
        let linked = session
            .thinker
            .observer()
            .stored_conversation_id()
            .is_some();
        let mut handle = std::pin::pin!(self.inner.dispatcher.submit(job));
        let outcome = if linked {
            handle.await
        } else {
            // A chat's first turn: link the chat to its conversation as soon as the person's
            // message is stored, so a host that dies during the turn still shows it.
            let mut poll = tokio::time::interval(Duration::from_millis(25));
            loop {
                tokio::select! {
                    out = &mut handle => break out,
                    _ = poll.tick() => {
                        if self.link_stored_conversation(&session).await {
                            break handle.await;
                        }
                    }
                }
            }
        };
        match &outcome {
            Err(Error::Cancelled) => {
                // The host is stopping: the turn's own rollback did not run, so its answer's
                // place gets the marker in the store.
                if let Some(cid) = session.thinker.observer().stored_conversation_id()
                    && let Err(e) = self.close_interrupted_turn(&cid).await
                {
                    tracing::warn!(chat, error = %e, "could not mark the stopped turn");
                }
            }
            Err(e) => tracing::info!(chat, error = %e, "chat turn failed"),
            Ok(_) => {}
        }
        let cid = session.thinker.conversation_id().map(|c| c.to_string());
        if let Err(e) = self.inner.chats.touch(chat, cid.as_deref()).await {
            tracing::warn!(chat, error = %e, "could not update the chat row");
            session.report(ChatEvent::Error {
                message: format!("the chat list could not be updated: {e}"),
            });
        }
        Self::release(chat, held).await;
    }

    /// `job` set to continue the chat's conversation as stored, when other hosts may have
    /// continued it (a shared store); unchanged otherwise.
    async fn stored_turn(
        &self,
        chat: &str,
        job: ReactiveTurn,
    ) -> std::result::Result<ReactiveTurn, (ReactiveTurn, Error)> {
        if !self.inner.chats.is_shared() {
            return Ok(job);
        }
        let stored = match self.inner.chats.get(chat).await {
            Ok(Some(record)) => record.conversation_id,
            Ok(None) => return Err((job, Self::unknown_chat(chat))),
            Err(e) => return Err((job, e)),
        };
        match stored.as_deref().map(ConversationId::parse).transpose() {
            Ok(Some(cid)) => match self.close_interrupted_turn(&cid).await {
                Ok(_) => Ok(job.resume_stored(cid)),
                Err(e) => Err((job, e)),
            },
            Ok(None) => Ok(job),
            Err(e) => Err((job, e)),
        }
    }

    /// Link the chat to its conversation once the turn has stored it; `false` while it has not.
    async fn link_stored_conversation(&self, session: &Session) -> bool {
        let Some(cid) = session.thinker.observer().stored_conversation_id() else {
            return false;
        };
        let chat = session.chat_id.as_str();
        if let Err(e) = self.inner.chats.touch(chat, Some(cid.as_ref())).await {
            tracing::warn!(chat, error = %e, "could not link the chat to its conversation");
        }
        true
    }

    /// When the stored conversation `cid` ends with anything but the model's reply (a turn
    /// that a stopped or killed host left open: the person's message, or tool results), add
    /// [`HOST_STOPPED_MARKER`] as the reply and save. Returns whether it did.
    pub(super) async fn close_interrupted_turn(&self, cid: &ConversationId) -> Result<bool> {
        let mut conv = self.inner.conversations.resume(cid).await?;
        let open = conv
            .messages()
            .last()
            .is_some_and(|m| m.role != Role::Assistant);
        if !open {
            return Ok(false);
        }
        conv.push(Message::assistant_text(HOST_STOPPED_MARKER));
        self.inner.conversations.save(&mut conv).await?;
        tracing::info!(conversation = %cid, "closed a chat turn the host did not finish");
        Ok(true)
    }

    /// Close a turn that cannot run, telling the chat's subscribers why.
    fn give_up(session: &Session, job: ReactiveTurn, why: &Error) {
        let lost = job.abandon();
        tracing::warn!(chat = %session.chat_id, error = %why, "chat turn given up");
        session.report(ChatEvent::Error {
            message: format!(
                "{} message(s) were not answered; send again: {why}",
                lost.len()
            ),
        });
    }

    async fn release(chat: &str, held: ChatTurnLock) {
        if let Err(e) = held.release().await {
            // The lock went with its connection: nothing stays held.
            tracing::warn!(chat, error = %e, "could not release the chat's turn lock cleanly");
        }
    }
}
