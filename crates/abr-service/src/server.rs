//! Running the HTTP runner: bind, serve, shut down gracefully.
//!
//! The accept loop is ours (on hyper's HTTP/1 connection, with upgrades for the live view)
//! rather than `axum::serve`, for what a server exposed to untrusted clients needs: a
//! connection that has not sent a whole request head within the header-read timeout is
//! closed (idle keep-alive connections too), and at most `max_connections` are served at
//! once (more wait in the listen backlog instead of holding memory and tasks).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use abr_core::LiveSurface;
use abr_core::context::TaskContext;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, oneshot, watch};
use tokio::task::JoinHandle;

use crate::config::Limits;
use crate::runner::Runner;

/// A runner serving HTTP in the background.
pub struct RunningServer<C: TaskContext = abr_providers::BrowserSession> {
    addr: SocketAddr,
    runner: Arc<Runner<C>>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl<C: TaskContext> std::fmt::Debug for RunningServer<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl<C: TaskContext + LiveSurface> RunningServer<C> {
    /// Serves `runner` on `listener` until [`RunningServer::shutdown`].
    ///
    /// # Errors
    /// When the listener has no local address.
    pub fn start(runner: Arc<Runner<C>>, listener: TcpListener) -> std::io::Result<Self> {
        let app = crate::http::app(Arc::clone(&runner));
        Self::start_app(runner, listener, app)
    }

    /// Serves `app` (the router of `runner`, e.g. [`crate::http::app`] with routes merged
    /// in) on `listener` until [`RunningServer::shutdown`].
    ///
    /// # Errors
    /// When the listener has no local address.
    pub fn start_app(
        runner: Arc<Runner<C>>,
        listener: TcpListener,
        app: axum::Router,
    ) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let limits = runner.config.limits.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, app, limits, stopped));
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
    pub async fn bind(runner: Arc<Runner<C>>, addr: SocketAddr) -> std::io::Result<Self> {
        Self::start(runner, TcpListener::bind(addr).await?)
    }
}

impl<C: TaskContext> RunningServer<C> {
    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The runner behind it.
    pub fn runner(&self) -> &Arc<Runner<C>> {
        &self.runner
    }

    /// Graceful shutdown: stop accepting, let in-flight requests finish (each is bounded by
    /// the request deadline), then release every capture and close the browsers.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Err(e) = (&mut self.task).await {
            tracing::warn!(error = %e, "the server task failed");
        }
        self.runner.shutdown().await;
    }

    /// Drains, then shuts down: stops accepting, lets in-flight requests finish, waits until
    /// every job slot is free again (background tasks already admitted run to their end;
    /// a task still waiting for a slot when the gate closes stays queued and is ended
    /// honestly at the next start), then shuts the runner down as
    /// [`RunningServer::shutdown`] does.
    pub async fn drain(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Err(e) = (&mut self.task).await {
            tracing::warn!(error = %e, "the server task failed");
        }
        self.runner.drain().await;
    }

    /// Stops at once: no new connection, in-flight requests and running jobs are cut (their
    /// records are ended honestly at the next start), captures released, browsers closed.
    pub async fn stop_now(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.abort();
        self.runner.shutdown().await;
    }

    /// Serves until Ctrl-C or SIGTERM, then shuts down gracefully. A replica of a fleet
    /// drains instead: `/v1/ready` answers `draining` and new work is refused
    /// (`runner_draining`) for the drain grace, so that the balancer takes it out, then it
    /// stops accepting and waits until what it runs has ended; a second signal stops it at
    /// once (what it ran is ended honestly by the next replica that sweeps).
    pub async fn run_until_signal(self) {
        self.run_until(Signals::install()).await;
    }

    /// [`RunningServer::run_until_signal`] with signals installed earlier (before the
    /// address was announced).
    pub async fn run_until(self, mut signals: Signals) {
        signals.next().await;
        if self.runner.status().node_id().is_none() {
            tracing::info!("shutting down: finishing in-flight requests");
            self.shutdown().await;
            return;
        }
        let grace = self.runner.config.fleet.drain_grace;
        tracing::info!(
            grace_secs = grace.as_secs(),
            "draining: no new work; finishing what runs"
        );
        self.runner.status().begin_draining();
        tokio::select! {
            () = tokio::time::sleep(grace) => {}
            () = signals.next() => {
                tracing::warn!("stopping now: a second signal");
                self.stop_now().await;
                return;
            }
        }
        let runner = Arc::clone(&self.runner);
        let drain = self.drain();
        tokio::pin!(drain);
        tokio::select! {
            () = &mut drain => tracing::info!("drained"),
            () = signals.next() => {
                tracing::warn!("stopping now: a second signal");
                runner.shutdown().await;
            }
        }
    }
}

/// Accepts connections until `stop`, then lets the open ones finish their requests.
async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: Limits,
    mut stop: oneshot::Receiver<()>,
) {
    let max = limits.max_connections.clamp(1, 65_535);
    let slots = Arc::new(Semaphore::new(max));
    let (closing, closing_rx) = watch::channel(false);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    loop {
        let permit = tokio::select! {
            biased;
            _ = &mut stop => break,
            permit = Arc::clone(&slots).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let stream = tokio::select! {
            biased;
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, say: back off rather than spin.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let connection = http
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades();
        let mut closing = closing_rx.clone();
        tokio::spawn(async move {
            let mut connection = std::pin::pin!(connection);
            let finished = tokio::select! {
                result = connection.as_mut() => Some(result),
                _ = closing.wait_for(|closing| *closing) => None,
            };
            let result = match finished {
                Some(result) => result,
                None => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = result {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    closing.send_replace(true);
    // Every connection gives its slot back when it is done.
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
}

/// The process's stop signals, Ctrl-C (SIGINT) and SIGTERM, listened to from the moment
/// they are installed: install them before announcing an address, so that a signal sent
/// right after the announcement stops the process the way it should instead of killing it
/// (or being dropped before anything listens).
pub struct Signals {
    #[cfg(unix)]
    unix: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signals").finish_non_exhaustive()
    }
}

impl Signals {
    /// Installs the handlers (inside a Tokio runtime). Where they cannot be installed,
    /// [`Signals::next`] falls back to Tokio's Ctrl-C alone.
    #[must_use]
    pub fn install() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let unix = signal(SignalKind::interrupt())
                .and_then(|int| Ok((int, signal(SignalKind::terminate())?)))
                .map_err(|e| tracing::warn!(error = %e, "cannot listen for SIGINT/SIGTERM"))
                .ok();
            Self { unix }
        }
        #[cfg(not(unix))]
        Self {}
    }

    /// Resolves at the next Ctrl-C or SIGTERM (one received since the last call counts).
    pub async fn next(&mut self) {
        #[cfg(unix)]
        if let Some((int, term)) = &mut self.unix {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}
