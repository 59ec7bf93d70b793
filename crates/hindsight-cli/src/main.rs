//! `hindsight`: run a node, or talk to one.

mod bank;
mod bench;
mod cli;
mod cluster;
mod eval;
mod fleet_bench;
mod json;
mod keys;
mod learning;
mod mcp;
mod moment;
mod output;
mod partition;
mod progress;
mod recall;
mod records;
mod review;
mod serve;
mod status;
mod table;
mod target;
mod write;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

/// jemalloc instead of glibc's allocator: resident memory that follows the live heap when banks
/// load and unload by the thousand (see `hindsight_node::allocator`).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read once when it starts: freed pages go back to the system within about
/// a second, by a background thread, instead of after ten seconds and only when something else
/// allocates. The memory budget is measured in resident memory every half second.
#[export_name = "_rjem_malloc_conf"]
static JEMALLOC_OPTIONS: &[u8; 60] =
    b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

fn main() -> ExitCode {
    hindsight_node::allocator::declare_jemalloc_global();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: the cause chain joined, so scripts can show or grep it.
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Serve(args) => serve::run(args).await,
        Command::Completion(args) => {
            use clap::CommandFactory;
            use std::io::Write;
            let mut script = vec![];
            clap_complete::generate(args.shell, &mut Cli::command(), "hindsight", &mut script);
            // A closed pipe (`| head`) is the reader's choice, not a failure worth a panic.
            match std::io::stdout().write_all(&script) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => Ok(other?),
            }
        }
        Command::Write(args) => write::run(args).await,
        Command::Recall(args) => recall::run(args).await,
        Command::Get(args) => records::get(args).await,
        Command::Trace(args) => records::trace(args).await,
        Command::Forget(args) => records::forget(args).await,
        Command::Release(args) => records::release(args).await,
        Command::Review(args) => review::run(args).await,
        Command::Reflect(args) => review::reflect(args).await,
        Command::Conflicts(command) => review::conflicts(command).await,
        Command::Bank(command) => bank::run(command).await,
        Command::Status(args) => status::run(args).await,
        Command::Cluster(args) => cluster::status(args).await,
        Command::Init(args) => cluster::init(args).await,
        Command::Join(args) => cluster::join(args).await,
        Command::Leave(args) => cluster::leave(args).await,
        Command::Partition(command) => partition::run(command).await,
        Command::Feedback(args) => learning::feedback(args).await,
        Command::Log(command) => learning::log(command).await,
        Command::Key(command) => keys::run(command).await,
        Command::Eval(args) => eval::run(args).await,
        Command::Bench(args) => bench::run(args).await,
        Command::Mcp(args) => mcp::run(args).await,
    }
}
