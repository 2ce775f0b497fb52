//! The ABR runner: the `abr` binary's HTTP API, live view and command line, as a library
//! for embedders and tests.
//!
//! - [`config::RunnerConfig`]: configuration from environment variables (and a TOML file);
//!   the only place ABR reads the environment.
//! - [`runner::RunnerBuilder`]: register your strategies, build a [`runner::Runner`] on the
//!   configured providers.
//! - [`http::app`]: the axum router; [`server::RunningServer`]: serve it.
//! - [`mcp`]: the MCP server (`abr mcp` on stdio, `/mcp` on `abr serve`).
//! - [`relay`]: the outbound relay between a hub and runners on users' machines.
//! - [`cli`]: `abr session filter`, `abr serve`, `abr up` / `status` / `logs` / `down`,
//!   `abr mcp`, `abr demo`.

mod api_error;
mod approve_page;
mod artifacts;
mod auth;
mod browse;
mod callback;
pub mod cli;
pub mod config;
mod enrollment;
mod events;
mod fleet;
pub mod http;
mod json_detail;
mod keys;
mod lists;
mod live;
pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod openapi;
mod owner;
mod placement;
mod posts;
mod profiles;
pub mod relay;
mod remote;
mod replica;
mod run_evidence;
pub mod runner;
mod runners;
mod scrape;
pub mod server;
mod sessions;
mod sites;
mod state;
pub mod status;
mod tasks;
mod tenant;
mod timed_provider;
mod tokens;
pub mod traces;
mod webhook;
