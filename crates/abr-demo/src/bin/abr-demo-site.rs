//! `abr-demo-site`: serves the ABR demo site until Ctrl-C.
//!
//! Prints `listening on http://ADDR` (the real bound address) on stdout once it accepts
//! connections.

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;

use abr_demo::DemoSite;
use clap::Parser;

/// Serves the ABR demo site: sign-in, composer with media upload, feed, ground truth
/// (`/api/posts`) and fault injection (`/__faults`).
#[derive(Debug, Parser)]
#[command(name = "abr-demo-site", version)]
struct Args {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8788")]
    bind: SocketAddr,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = Args::parse();
    let site = match DemoSite::start(args.bind).await {
        Ok(site) => site,
        Err(e) => {
            eprintln!("abr-demo-site: cannot listen on {}: {e}", args.bind);
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout().lock();
    let announced =
        writeln!(stdout, "listening on http://{}", site.local_addr()).and_then(|()| stdout.flush());
    drop(stdout);
    if let Err(e) = announced {
        eprintln!("abr-demo-site: cannot write to stdout: {e}");
        return ExitCode::FAILURE;
    }
    stopped().await;
    site.shutdown().await;
    ExitCode::SUCCESS
}

/// Ctrl-C, or SIGTERM on Unix.
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
