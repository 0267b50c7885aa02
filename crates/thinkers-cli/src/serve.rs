//! `thinkers serve`: the chat host (JSON API, server-sent events, the web page) over a runtime
//! recording into a SQLite file or a PostgreSQL database (`--db postgres://…`, where several
//! `thinkers serve` may serve the same chats), offline against an in-process sim unless a
//! catalog names real providers. Also the runtime setup `thinkers chat` shares.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use thinkers::Runtime;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::model::{Catalog, Grade, OutputSize};
use thinkers::thinker::{ChatThinker, ThinkerDeclaration};
use thinkers_host::{ChatHost, HostConfig, HostToken};
use thinkers_sim::{Sim, SimConfig};
use thinkers_store::Store;
use thinkers_store::{RuntimeBuilderExt as _, RuntimeExt as _};

/// What a chat is told unless `--objective` says otherwise.
pub(crate) const DEFAULT_OBJECTIVE: &str =
    "You are a helpful assistant. Answer the person's messages clearly and briefly.";

/// Options every chat command shares.
#[derive(Debug, clap::Args)]
pub(crate) struct ChatSetup {
    /// The database: chats, conversations, jobs and model calls. A SQLite file, or a
    /// `postgres://` URL, which several `thinkers serve` processes may share.
    #[arg(long, default_value = "thinkers.db", env = "THINKERS_DB")]
    db: PathBuf,
    /// A model catalog; without one, the bundled catalog served by an in-process sim (calm: no
    /// random faults).
    #[arg(long)]
    catalog: Option<PathBuf>,
    /// The simulated provider to call when the catalog points at one; without it an
    /// in-process one is started.
    #[arg(long, env = "THINKERS_SIM_URL")]
    sim_url: Option<String>,
    /// The grade of the chat's model (`ceiling` for the strongest the catalog serves).
    #[arg(long, default_value = "medium")]
    grade: Grade,
    /// The chat's objective (its system content).
    #[arg(long, default_value = DEFAULT_OBJECTIVE)]
    objective: String,
    #[command(flatten)]
    caps: crate::caps::CapArgs,
}

/// A runtime for chats, and the sim it talks to when offline (kept alive with it).
pub(crate) struct ChatRuntime {
    pub(crate) rt: Runtime,
    pub(crate) _sim: Option<Sim>,
    pub(crate) grade: Grade,
    pub(crate) objective: String,
}

impl ChatRuntime {
    /// A new chat thinker as these options describe it.
    pub(crate) fn thinker(&self) -> ChatThinker {
        ChatThinker::new(
            ThinkerDeclaration::new(self.grade, OutputSize::Standard),
            self.objective.clone(),
        )
    }
}

/// Build the runtime the options describe.
pub(crate) async fn chat_runtime(setup: &ChatSetup) -> anyhow::Result<ChatRuntime> {
    let (catalog, sim) = match (&setup.catalog, &setup.sim_url) {
        (Some(path), url) => crate::simctl::bind_or_use(load(path)?, url.as_deref()).await?,
        (None, Some(url)) => (
            Catalog::bundled().with_sim_url(url.trim_end_matches('/')),
            None,
        ),
        (None, None) => {
            let config = SimConfig::from_catalog_toml(BUNDLED_TOML)?.calm();
            let sim = Sim::start(config)
                .await
                .context("starting the simulated provider")?;
            (Catalog::bundled().with_sim_url(&sim.base_url()), Some(sim))
        }
    };
    let rt = setup
        .caps
        .apply(Runtime::builder(catalog).database(setup.db.to_string_lossy()))
        .build()
        .await
        .context("opening the database given by --db")?;
    crate::lifecycle::register(&rt);
    Ok(ChatRuntime {
        rt,
        _sim: sim,
        grade: setup.grade,
        objective: setup.objective.clone(),
    })
}

fn load(path: &Path) -> anyhow::Result<Catalog> {
    Catalog::load(path).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Options of `thinkers serve`.
#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// The port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// The address to listen on. Anything but a loopback address needs --token.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// A bearer token every request must carry (`Authorization: Bearer …`; a browser opens
    /// `/?token=…` once and keeps a cookie), at least 16 characters. Never printed or logged;
    /// `--token generate` makes a random one and prints it once, on stderr. Without a token
    /// the host answers only requests addressed to a loopback name (localhost, 127.0.0.1,
    /// [::1]).
    #[arg(long, env = "THINKERS_SERVE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    #[command(flatten)]
    setup: ChatSetup,
    /// Where the workflows the runs explorer decides on run, when on Restate: a decision then
    /// resolves the promise the workflow waits on, as `thinkers approve --restate` does.
    #[command(flatten)]
    restate: crate::work::RestateArgs,
}

impl std::fmt::Debug for ServeArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeArgs")
            .field("port", &self.port)
            .field("host", &self.host)
            .field("token", &self.token.as_ref().map(|_| "<withheld>"))
            .field("setup", &self.setup)
            .field("restate", &self.restate)
            .finish()
    }
}

/// The `--token` value that asks for a random token (too short to be one itself).
const GENERATE: &str = "generate";

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let addr = SocketAddr::new(args.host, args.port);
    // A generated token is kept apart too: it is shown once, when the host listens.
    let (token, generated) = match args.token.as_deref() {
        None => (None, None),
        Some(GENERATE) => {
            let made = HostToken::generate();
            (Some(made.clone()), Some(made))
        }
        Some(given) => {
            let token = HostToken::new(given).map_err(|e| anyhow::anyhow!("--token: {e}"))?;
            (Some(token), None)
        }
    };
    // Refused before anything starts: a host other machines reach, open to anyone.
    if !addr.ip().is_loopback() && token.is_none() {
        anyhow::bail!(
            "refusing to listen on {addr} without a token: anyone reaching it could read every \
             chat and run turns on your API keys. Pass --token (or set THINKERS_SERVE_TOKEN), \
             or listen on 127.0.0.1"
        );
    }
    let with_token = token.is_some();
    let chat = Arc::new(chat_runtime(&args.setup).await?);
    let made = chat.clone();
    let host = ChatHost::new(
        &chat.rt,
        Arc::new(move || made.thinker()),
        HostConfig {
            token,
            ..HostConfig::default()
        },
    )?;
    // A decision in the runs explorer reaches the engine a workflow runs on (Restate: its
    // promise), as `thinkers approve` does.
    let (db, restate) = (args.setup.db.clone(), args.restate.clone());
    host.on_decided(Arc::new(move |approval| {
        let (db, restate) = (db.clone(), restate.clone());
        Box::pin(async move {
            crate::approvals::resume(&db, &restate, &approval)
                .await
                .map_err(|e| thinkers::Error::external("restate", "decide", format!("{e:#}")))
        })
    }));
    let running = host.start(addr).await?;
    println!("chat host listening on {}", running.url());
    println!("  runs explorer at {}/runs", running.url());
    if with_token {
        println!(
            "  every request needs the token: open {}/?token=<your token> once in a browser",
            running.url()
        );
    }
    if let Some(token) = &generated {
        // The one place a token is shown: the operator has no other way to learn it.
        eprintln!(
            "generated token (shown only now): {}",
            token.expose_secret()
        );
    }
    let kept = match chat.rt.open_store() {
        Some(Store::Postgres(pg)) => pg.location(),
        _ => args.setup.db.display().to_string(),
    };
    println!(
        "  open {} in a browser; chats are kept in {kept}",
        running.url()
    );
    crate::lifecycle::stop_requested().await;
    println!("stopping");
    // Turns still running are cancelled (each leaves the `[no answer: …]` marker in its chat),
    // then the host waits for them to save.
    let recorded = chat.rt.shutdown_because("the chat host stopped").await;
    running.shutdown().await?;
    recorded?;
    Ok(())
}
