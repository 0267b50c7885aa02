//! `thinkers demo`: the main job. Runs offline and shows the runtime at work.

mod dispatch_stage;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use thinkers::Dispatcher;
use thinkers::record::Recorder;
use thinkers::store::{SqliteRecorder, SqliteStore};

/// Options of `thinkers demo`.
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    /// The database file every job and model call is recorded in.
    #[arg(long, default_value = "thinkers.db", env = "THINKERS_DB")]
    db: PathBuf,
}

pub(crate) async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let wall = Instant::now();
    let store = SqliteStore::open(&args.db.to_string_lossy())
        .await
        .with_context(|| format!("opening the database {}", args.db.display()))?;
    let recorder: Arc<dyn Recorder> = Arc::new(SqliteRecorder::new(&store)?);
    let dispatcher = Dispatcher::builder().recorder(recorder.clone()).build();

    println!(
        "thinkers demo — offline, recorded in {}\n",
        args.db.display()
    );
    let workflow = dispatch_stage::run(&dispatcher).await?;
    recorder.flush().await?;

    println!("\nTrajectory of workflow {workflow}:");
    let jobs = store.workflow_jobs(workflow).await?;
    print!(
        "{}",
        thinkers::record::trajectory::Trajectory::build(jobs).render()
    );

    println!(
        "\nDone in {:.1} s. Explore what was stored:",
        wall.elapsed().as_secs_f64()
    );
    let db = args.db.display();
    println!("  cargo run -p thinkers-cli -- trace --list --db {db}");
    println!("  cargo run -p thinkers-cli -- trace {workflow} --db {db}");
    Ok(())
}
