//! Running the HTTP runner: bind, serve, shut down gracefully.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::runner::Runner;

/// A runner serving HTTP in the background.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    runner: Arc<Runner>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

impl RunningServer {
    /// Serves `runner` on `listener` until [`RunningServer::shutdown`].
    ///
    /// # Errors
    /// When the listener has no local address.
    pub fn start(runner: Arc<Runner>, listener: TcpListener) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let app = crate::http::app(Arc::clone(&runner));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
        });
        Ok(Self {
            addr,
            runner,
            stop: Some(stop),
            task,
        })
    }

    /// Binds `addr` and serves `runner`.
    ///
    /// # Errors
    /// When the address cannot be bound.
    pub async fn bind(runner: Arc<Runner>, addr: SocketAddr) -> std::io::Result<Self> {
        Self::start(runner, TcpListener::bind(addr).await?)
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The runner behind it.
    pub fn runner(&self) -> &Arc<Runner> {
        &self.runner
    }

    /// Graceful shutdown: stop accepting, let in-flight requests finish (each is bounded by
    /// the request deadline), then release every capture and close the browsers.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match (&mut self.task).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the server stopped with an error"),
            Err(e) => tracing::warn!(error = %e, "the server task failed"),
        }
        self.runner.shutdown().await;
    }

    /// Serves until Ctrl-C or SIGTERM, then shuts down gracefully.
    pub async fn run_until_signal(self) {
        wait_for_signal().await;
        tracing::info!("shutting down: finishing in-flight requests");
        self.shutdown().await;
    }
}

async fn wait_for_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => futures::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = futures::future::pending::<()>();
    tokio::select! { () = ctrl_c => {}, () = term => {} }
}
