//! The `function-inference` binary: serves Crossplane's FunctionRunnerService
//! when run with no subcommand, and offers `render` and `size` for a laptop.

use std::io::{ErrorKind, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use function_inference::cli::render::{self, RenderArgs};
use function_inference::cli::size::{self, SizeArgs};
use function_inference::server::{self, ServeArgs};

// A call builds and frees many small JSON and protobuf trees; glibc's
// allocator made a third of a call's CPU, which the 3x-the-transport budget
// of docs/performance.md does not leave room for.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A Crossplane composition function that sizes and composes vLLM inference runtimes.
#[derive(Parser, Debug)]
#[command(
    name = "function-inference",
    version,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Render what the function composes for an XR, without a cluster.
    Render(RenderArgs),
    /// Size a model on a GPU type: GPUs, parallelism, MIG, dtype, context, CPU and memory, with the reasons.
    Size(Box<SizeArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Render(args)) => {
            let mut out = std::io::stdout().lock();
            let outcome = render::run(&args, &mut out, &mut std::io::stderr());
            let _ = out.flush();
            match outcome {
                Ok(()) => ExitCode::SUCCESS,
                // The reader stopped reading (`| head`): it had what it wanted.
                Err(render::RenderError::Output(e)) if e.kind() == ErrorKind::BrokenPipe => {
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("function-inference render: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some(Command::Size(args)) => {
            let mut out = std::io::stdout().lock();
            let outcome = size::run(&args, &mut out);
            let _ = out.flush();
            match outcome {
                Ok(()) => ExitCode::SUCCESS,
                Err(size::SizeError::Io(e)) if e.kind() == ErrorKind::BrokenPipe => {
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("function-inference size: {e}");
                    // 2: the request cannot be sized, as distinct from a crash.
                    ExitCode::from(2)
                }
            }
        }
        None => serve(cli.serve),
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    server::init_logging(&args);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("function-inference: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(server::serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("function-inference: {e:#}");
            ExitCode::FAILURE
        }
    }
}
