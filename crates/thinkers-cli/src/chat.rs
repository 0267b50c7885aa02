//! `thinkers chat`: a chat in the terminal over the same machinery as the host. Lines read from
//! stdin are messages (a line typed while an answer is being written joins that turn); answers
//! are printed as they stream. The conversation is durable: `--resume ID` continues it.

use std::io::{IsTerminal as _, Write as _};
use std::sync::Arc;

use anyhow::Context as _;
use thinkers::conversation::ConversationId;
use thinkers::thinker::{ChatEvent, ChatEvents, Delivery};
use tokio::io::AsyncBufReadExt as _;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::serve::{ChatSetup, chat_runtime};

/// Options of `thinkers chat`.
#[derive(Debug, clap::Args)]
pub(crate) struct ChatArgs {
    /// Continue the conversation saved under this id.
    #[arg(long)]
    resume: Option<String>,
    #[command(flatten)]
    setup: ChatSetup,
}

type Turn = JoinHandle<thinkers::Result<String>>;

pub(crate) async fn run(args: ChatArgs) -> anyhow::Result<()> {
    let chat = chat_runtime(&args.setup).await?;
    let (events, mut rx) = ChatEvents::channel();
    let mut thinker = chat.thinker().events(events);
    if let Some(id) = &args.resume {
        let id = ConversationId::parse(id).map_err(|e| anyhow::anyhow!("--resume: {e}"))?;
        thinker = thinker.resume(id);
        eprintln!(
            "resuming conversation {}",
            args.resume.as_deref().unwrap_or("")
        );
    }
    let thinker = Arc::new(thinker);
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        eprintln!("Type a message and press Enter; ctrl-d ends the chat.");
    }
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut running: Option<Turn> = None;
    let mut stdin_open = true;
    let mut printer = Printer::default();
    // Why the latest finished turn gave no answer (`None` once a turn answers).
    let mut last_failure = None;
    loop {
        tokio::select! {
            line = lines.next_line(), if stdin_open => {
                match line.context("reading stdin")? {
                    Some(text) if text.trim().is_empty() => {}
                    Some(text) => {
                        if thinker.add_message(text) == Delivery::Waiting {
                            // No turn holds it: let the last one finish saving, then start the
                            // next, which answers it.
                            if let Some(last) = running.take() {
                                last_failure = failure(last.await);
                            }
                            let job = thinker.turn();
                            let rt = chat.rt.clone();
                            running = Some(tokio::spawn(async move { rt.run(job).await }));
                        }
                    }
                    None => stdin_open = false,
                }
            }
            Some(event) = rx.recv() => printer.print(event),
            else => break,
        }
        if !stdin_open {
            if let Some(last) = running.take() {
                last_failure = failure(last.await);
            }
            drain(&mut rx, &mut printer);
            break;
        }
    }
    if let Some(id) = thinker.conversation_id() {
        eprintln!("conversation {id} (continue it with --resume {id})");
    }
    chat.rt.shutdown().await?;
    match last_failure {
        // The failure was printed as it happened; the exit code says it too.
        Some(why) => anyhow::bail!("the last turn gave no answer: {why}"),
        None => Ok(()),
    }
}

/// Why a finished turn gave no answer, if it gave none.
fn failure(joined: Result<thinkers::Result<String>, tokio::task::JoinError>) -> Option<String> {
    match joined {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(e) => Some(format!("the turn's task ended abnormally: {e}")),
    }
}

fn drain(rx: &mut mpsc::UnboundedReceiver<ChatEvent>, printer: &mut Printer) {
    while let Ok(event) = rx.try_recv() {
        printer.print(event);
    }
}

/// Prints events as they come: tokens inline, tool activity and failures on their own lines.
#[derive(Default)]
struct Printer {
    /// Answer text printed since the last answer or tool call.
    streamed: String,
}

impl Printer {
    fn print(&mut self, event: ChatEvent) {
        let mut out = std::io::stdout().lock();
        match event {
            ChatEvent::Message { .. } => {}
            ChatEvent::Token { text } => {
                if self.streamed.is_empty() {
                    let _ = write!(out, "assistant: ");
                }
                self.streamed.push_str(&text);
                let _ = write!(out, "{text}");
            }
            ChatEvent::ToolCall {
                name, arguments, ..
            } => {
                if !self.streamed.is_empty() {
                    let _ = writeln!(out);
                    self.streamed.clear();
                }
                let _ = writeln!(out, "  -> {name} {arguments}");
            }
            ChatEvent::ToolResult {
                name,
                content,
                is_error,
                ..
            } => {
                let mark = if is_error { "failed" } else { "ok" };
                let short: String = content.chars().take(120).collect();
                let _ = writeln!(out, "  <- {name} ({mark}): {short}");
            }
            ChatEvent::Answer { text, artifacts } => {
                if self.streamed.is_empty() {
                    let _ = write!(out, "assistant: {text}");
                } else if self.streamed != text {
                    // What streamed was not the whole answer: show the answer as kept.
                    let _ = write!(out, "\nassistant: {text}");
                }
                let _ = writeln!(out);
                if !artifacts.is_empty() {
                    let refs: Vec<String> = artifacts
                        .iter()
                        .map(|a| format!("{} ({})", a.reference, a.tool))
                        .collect();
                    let _ = writeln!(out, "  artifacts: {}", refs.join(", "));
                }
                self.streamed.clear();
            }
            ChatEvent::Approval { id, tool, .. } => {
                if !self.streamed.is_empty() {
                    let _ = writeln!(out);
                    self.streamed.clear();
                }
                let _ = writeln!(
                    out,
                    "  [{tool} waits for a decision: thinkers approve {id} / thinkers deny {id} \
                     --reason …]"
                );
            }
            ChatEvent::Error { message } => {
                if !self.streamed.is_empty() {
                    let _ = writeln!(out);
                    self.streamed.clear();
                }
                drop(out);
                eprintln!("no answer: {message}");
            }
        }
        let _ = std::io::stdout().flush();
    }
}
