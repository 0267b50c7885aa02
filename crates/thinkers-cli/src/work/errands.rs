//! `errands` — a thinker that runs errands with a side-effecting tool, for durable steps and
//! human approval: `do_errand` appends the errand to a ledger file (its own counter of how often
//! it ran) and can be made to need a person's approval.
//!
//! Input: `{"errands": ["buy stamps", "post the letter"], "ledger": "/tmp/ledger.txt",
//! "approval": true, "idempotent": false, "pause_ms": 0, "entry": "sim-small-a"}` (all but
//! `errands` and `ledger` optional). `pause_ms` is a wait inside the tool before its side
//! effect. An `idempotent` errand declares that running it again with the same idempotency key
//! does no harm (a service that takes the key would answer the repeat), and notes each start
//! with its key in `<ledger>.keys` before the pause.

use std::borrow::Cow;
use std::io::Write as _;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::Error;
use thinkers::model::{Grade, ModelDependent as _, OutputSize};
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers::tool::{Tool, ToolContext};

/// The input of `errands`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ErrandsInput {
    /// The errands, in order.
    errands: Vec<String>,
    /// The file each errand that runs is appended to.
    ledger: PathBuf,
    /// Whether every errand waits for a person's approval.
    #[serde(default)]
    approval: bool,
    /// Whether `do_errand` declares itself idempotent.
    #[serde(default)]
    idempotent: bool,
    /// Milliseconds the tool waits before its side effect.
    #[serde(default)]
    pause_ms: u64,
    /// Pin the thinker's calls to this catalog entry.
    #[serde(default)]
    entry: Option<String>,
}

/// The thinker's report.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ErrandsReport {
    /// What was done and what was not.
    summary: String,
}

/// `do_errand`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ErrandInput {
    /// The errand, as the list names it.
    errand: String,
}

/// `do_errand`'s output.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ErrandDone {
    /// What was done.
    done: String,
}

/// Runs one errand: appends it to the ledger file.
struct DoErrand {
    ledger: PathBuf,
    approval: bool,
    idempotent: bool,
    pause_ms: u64,
}

/// Append `line` to `path`.
fn append(path: &std::path::Path, line: &str) -> thinkers::Result<()> {
    let line = format!("{}\n", line.replace('\n', " "));
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()).and_then(|()| f.flush()))
        .map_err(|e| Error::external("ledger", "append", format!("{}: {e}", path.display())))
}

impl Tool for DoErrand {
    const NAME: &'static str = "do_errand";
    type Input = ErrandInput;
    type Output = ErrandDone;

    fn description(&self) -> Cow<'static, str> {
        "Run one errand from the list (it changes the world: it is written to the ledger).".into()
    }

    fn needs_approval(&self, _input: &ErrandInput) -> bool {
        self.approval
    }

    fn idempotent(&self) -> bool {
        self.idempotent
    }

    async fn call(
        &self,
        input: &ErrandInput,
        cx: &ToolContext<'_>,
    ) -> thinkers::Result<ErrandDone> {
        if self.idempotent {
            let key = cx.idempotency_key().unwrap_or_default();
            let mut keys = self.ledger.clone().into_os_string();
            keys.push(".keys");
            append(
                std::path::Path::new(&keys),
                &format!("{} {key}", input.errand),
            )?;
        }
        if self.pause_ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(self.pause_ms)).await;
        }
        append(&self.ledger, &input.errand)?;
        Ok(ErrandDone {
            done: input.errand.clone(),
        })
    }
}

/// The thinker of one `errands` workflow.
pub(crate) fn errands(
    input: ErrandsInput,
) -> thinkers::Result<impl thinkers::job::Job<Output = ErrandsReport>> {
    if input.errands.is_empty() {
        return Err(Error::invalid_input(
            "input.errands",
            None,
            "workflow `errands`: name at least one errand",
        ));
    }
    let thinker = Thinker::<ErrandsReport>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "You run errands for a person with the do_errand tool, one call per errand, in the \
         order given, then report what was done.",
    )
    .tool(DoErrand {
        ledger: input.ledger,
        approval: input.approval,
        idempotent: input.idempotent,
        pause_ms: input.pause_ms,
    })
    .class("errands");
    let mut job = thinker.ask(ThinkerInput::query(format!(
        "Errands: {}",
        input.errands.join("; ")
    )));
    if let Some(entry) = input.entry {
        job.pin_model(entry);
    }
    Ok(job)
}
