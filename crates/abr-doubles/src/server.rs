//! Serving an axum router on 127.0.0.1 with a stoppable background task.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::DoubleError;

/// A running server task.
#[derive(Debug)]
pub(crate) struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `127.0.0.1:<port>`.
    pub(crate) async fn bind(port: u16) -> Result<TcpListener, DoubleError> {
        TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|source| DoubleError::Bind { port, source })
    }

    /// Serves `router` on `listener` until [`Server::stop`].
    pub(crate) fn spawn(listener: TcpListener, router: Router) -> Result<Self, DoubleError> {
        let addr = listener
            .local_addr()
            .map_err(|source| DoubleError::Bind { port: 0, source })?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, router).with_graceful_shutdown(async move {
                let _ = stopped.await;
            });
            if let Err(e) = served.await {
                tracing::warn!(error = %e, "double server ended with an error");
            }
        });
        Ok(Self {
            addr,
            stop: Some(stop),
            task: Some(task),
        })
    }

    pub(crate) fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Signals the server to stop accepting (idempotent).
    pub(crate) fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Stops and waits (bounded) for the server task; aborts it if it lingers.
    pub(crate) async fn join(&mut self) {
        self.stop();
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(Duration::from_secs(3), &mut task)
                .await
                .is_err()
        {
            task.abort();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// A JSON response with a status.
pub(crate) fn json_response(status: u16, body: &Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = (status, body.to_string()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    resp
}

/// An HTML response with a status.
pub(crate) fn html_response(status: u16, body: String) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let mut resp = (status, body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    resp
}
