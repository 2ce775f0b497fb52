//! The description is complete, not only valid: clients generated from `docs/openapi.json`
//! by well-known generators, in Python (openapi-python-client) and TypeScript
//! (openapi-typescript types with openapi-fetch calls, type-checked by `tsc`), each run the
//! demo's round trip against a real runner and the demo site: keys, a capture's status, a
//! stored session, a post with an idempotency key and its record, a task proposed and
//! approved by an approver's key, the task list, the event stream. The generators are pinned
//! (`clients/python/requirements.txt`, `clients/typescript/package-lock.json`) and installed
//! when missing; nothing generated is committed.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::tools::{python_venv, run};
use crate::common::{self, TOKEN};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The environment of a round trip against `stack`.
async fn round_trip_env(stack: &common::Stack, tenant: &str) -> Vec<(&'static str, String)> {
    let session = common::signed_in_session(&stack.site, "alice").await;
    vec![
        ("ABR_URL", stack.server.base_url()),
        ("ABR_TOKEN", TOKEN.to_owned()),
        ("DEMO_URL", stack.site.base_url()),
        ("ABR_SESSION", serde_json::to_string(&session).unwrap()),
        ("ABR_TENANT", tenant.to_owned()),
    ]
}

/// Checks a round trip's output: every step answered, then `done`.
fn check_round_trip(language: &str, stdout: &str) {
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("{language}: {l}")))
        .collect();
    let steps: Vec<&str> = lines.iter().filter_map(|l| l["step"].as_str()).collect();
    assert_eq!(
        steps,
        [
            "keys", "capture", "session", "post", "task", "list", "events"
        ],
        "{language}: {stdout}"
    );
    assert_eq!(lines.last().unwrap()["done"], true, "{language}: {stdout}");
    let post = lines.iter().find(|l| l["step"] == "post").unwrap();
    assert_eq!(post["state"], "succeeded", "{language}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_client_generated_from_the_description_runs_the_round_trip() {
    let clients = repo().join("clients/python");
    // The generator, pinned, in a virtual environment kept with the build.
    let venv = python_venv("clients-python-venv", &clients.join("requirements.txt")).await;
    let generated = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        venv.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    run(
        "openapi-python-client generate",
        tokio::process::Command::new(venv.join("bin/openapi-python-client"))
            .args(["generate", "--meta", "none", "--path"])
            .arg(repo().join("docs/openapi.json"))
            .arg("--output-path")
            .arg(generated.path().join("abr_api"))
            .env("PATH", &path),
    )
    .await;
    let stack = common::stack().await;
    let stdout = run(
        "the Python round trip",
        tokio::process::Command::new(venv.join("bin/python"))
            .arg(clients.join("roundtrip.py"))
            .envs(round_trip_env(&stack, "py-clients").await)
            .env("PYTHONPATH", generated.path()),
    )
    .await;
    check_round_trip("python", &stdout);
    stack.server.shutdown().await;
    stack.site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typescript_client_generated_from_the_description_runs_the_round_trip() {
    let clients = repo().join("clients/typescript");
    if !clients
        .join("node_modules/openapi-fetch/package.json")
        .exists()
    {
        run(
            "npm ci in clients/typescript",
            tokio::process::Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(&clients),
        )
        .await;
    }
    // Generated types, then every call of the round trip type-checked against them.
    run(
        "openapi-typescript",
        tokio::process::Command::new("npm")
            .args(["run", "--silent", "generate"])
            .current_dir(&clients),
    )
    .await;
    run(
        "tsc",
        tokio::process::Command::new("npm")
            .args(["run", "--silent", "build"])
            .current_dir(&clients),
    )
    .await;
    let stack = common::stack().await;
    let stdout = run(
        "the TypeScript round trip",
        tokio::process::Command::new("node")
            .arg(clients.join("dist/roundtrip.js"))
            .envs(round_trip_env(&stack, "ts-clients").await),
    )
    .await;
    check_round_trip("typescript", &stdout);
    stack.server.shutdown().await;
    stack.site.shutdown().await;
}
