//! One runner per data directory: a second runner on a directory in use (an `abr mcp` or a
//! second `abr serve` started by mistake) is refused before it touches the records, instead
//! of ending the first one's running posts and tasks as unfinished at its start.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use crate::common;

use std::sync::Arc;

use abr_core::DynSessionProvider;
use abr_core::testing::{FakeContext, FakeProvider};
use abr_service::runner::RunnerBuilder;
use common::fake::fake_config;

const KEY: &str = "4b0b7f1c2d3e4f5061728394a5b6c7d8e9fa0b1c2d3e4f5061728394a5b6c7d8";

fn build(dir: &std::path::Path) -> Result<abr_service::runner::Runner<FakeContext>, String> {
    let mut config = fake_config();
    config.store.data_dir = Some(dir.to_owned());
    config.store.session_key = Some(KEY.to_owned().into());
    let provider: DynSessionProvider<FakeContext> = Arc::new(FakeProvider::new());
    RunnerBuilder::with_providers(config, provider.clone(), provider)
        .build()
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_second_runner_on_a_data_directory_in_use_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let first = build(dir.path()).unwrap();
    let Err(second) = build(dir.path()) else {
        panic!("the second runner must be refused");
    };
    assert!(second.contains("ABR_DATA_DIR"), "{second}");
    assert!(second.contains("another abr runner"), "{second}");
    // Another directory is fine, and the lock goes with the runner.
    let other = tempfile::tempdir().unwrap();
    build(other.path()).unwrap();
    first.shutdown().await;
    drop(first);
    build(dir.path()).unwrap();
}
