//! The start every command that runs a runner shares (`abr serve`, `abr mcp`, `abr up`,
//! `abr demo`): the configuration read with logging set up from it ([`configuration`]), the
//! runtime ([`runtime`]), and the runner the configuration describes, assembled and built,
//! with what a previous process left unfinished ended before anything is served
//! ([`runner`]).

use std::path::Path;
use std::sync::Arc;

use crate::cli::CliError;
use crate::config::{self, RunnerConfig};
use crate::runner::{ProviderLayer, Runner, RunnerBuilder};

/// The runner's configuration: the environment over the `--config` file (`file`). Logs go
/// to stderr from here on, filtered by `RUST_LOG` (default info; third-party targets that
/// dump secrets stay capped, see [`crate::logging`]); traces to the OTLP endpoint the
/// configuration names, if any ([`crate::traces`]).
///
/// # Errors
/// [`CliError::Config`] naming the setting that is refused.
pub(crate) fn configuration(
    file: Option<&Path>,
    insecure_dev: bool,
) -> Result<RunnerConfig, CliError> {
    let env = config::process_env();
    let loaded = RunnerConfig::load(&env, file, insecure_dev);
    // Traces name this replica (its node id), known once the configuration is read.
    let traces = match loaded
        .as_ref()
        .ok()
        .and_then(|c| c.traces.as_ref().map(|t| (c, t)))
    {
        Some((config, settings)) => Some(
            crate::traces::Traces::start(settings, &crate::fleet::node_id(config))
                .map_err(|e| CliError::Run(e.to_string()))?,
        ),
        None => None,
    };
    crate::logging::init_with_traces(config::log_filter(&env), "info", traces);
    Ok(loaded?)
}

/// The multi-thread runtime a runner runs in.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Run(format!("cannot start the async runtime: {e}")))
}

/// The runner `config` describes ([`RunnerBuilder::from_config`]), built, after the posts
/// and tasks a previous process left unfinished were ended ([`Runner::recover`]). Call it
/// inside [`runtime`], before serving.
///
/// # Errors
/// [`CliError::Config`] for a platform the configuration names that is refused;
/// [`CliError::Run`] when the runner cannot be built or its store cannot be read.
pub(crate) async fn runner(
    config: RunnerConfig,
    layer: Option<ProviderLayer>,
) -> Result<Arc<Runner>, CliError> {
    let shared = crate::runner::open_shared_store(&config)
        .await
        .map_err(|e| CliError::Run(format!("cannot open the database: {e}")))?;
    let membership = match &shared {
        Some(store) => Some(
            crate::fleet::Membership::join(Arc::clone(store), &config)
                .await
                .map_err(|e| CliError::Run(format!("cannot join the fleet: {e}")))?,
        ),
        None => None,
    };
    let mut builder = RunnerBuilder::from_config(config)?;
    if let Some(layer) = layer {
        builder = builder.provider_layer(layer);
    }
    if let Some(store) = &shared {
        builder = builder
            .store(Arc::clone(store) as Arc<dyn abr_engine::EngineStore>)
            .sweep_gate(Arc::new(crate::fleet::LeaseGate(Arc::clone(store))))
            .task_queue(Arc::clone(store) as Arc<dyn abr_core::store::TaskQueue>);
    }
    let runner = builder
        .build()
        .map_err(|e| CliError::Run(format!("cannot build the runner: {e}")))?;
    if let (Some(membership), Some(store)) = (&membership, shared) {
        let places = crate::placement::Places::new(store, membership.node_id().to_owned())
            .map_err(|e| CliError::Run(format!("cannot forward calls to other replicas: {e}")))?;
        runner.status().set_places(places);
    }
    let ended = runner
        .recover()
        .await
        .map_err(|e| CliError::Run(format!("cannot read the store: {e}")))?;
    if ended > 0 {
        tracing::warn!(ended, "ended the tasks the previous run left unfinished");
    }
    let runner = Arc::new(runner);
    if let Some(membership) = membership {
        // Ends with the runner (it holds only a weak reference).
        drop(membership.spawn(Arc::downgrade(&runner)));
    }
    Ok(runner)
}
