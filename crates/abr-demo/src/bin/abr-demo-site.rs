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
    // Handlers first: a Ctrl-C sent right after the announcement must stop it cleanly.
    let stop = Stop::install();
    let mut stdout = std::io::stdout().lock();
    let announced =
        writeln!(stdout, "listening on http://{}", site.local_addr()).and_then(|()| stdout.flush());
    drop(stdout);
    if let Err(e) = announced {
        eprintln!("abr-demo-site: cannot write to stdout: {e}");
        return ExitCode::FAILURE;
    }
    stop.wait().await;
    site.shutdown().await;
    ExitCode::SUCCESS
}

/// Ctrl-C, or SIGTERM on Unix, with the handlers installed when built (a signal that arrives
/// before [`Stop::wait`] is polled is not lost, nor does it kill the process).
struct Stop {
    #[cfg(unix)]
    signals: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Stop {
    fn install() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let signals = signal(SignalKind::interrupt())
                .and_then(|int| Ok((int, signal(SignalKind::terminate())?)))
                .ok();
            Self { signals }
        }
        #[cfg(not(unix))]
        Self {}
    }

    async fn wait(self) {
        #[cfg(unix)]
        if let Some((mut int, mut term)) = self.signals {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}
