//! The API answers what its description says, checked from outside by a property-based
//! tester driven by the description: Schemathesis (pinned in
//! `tests/api-contract/requirements.txt`) generates requests for every operation from
//! `docs/openapi.json`, valid and invalid, and sends them to a real runner with the demo
//! site, as an operator. Every answer must be no 5xx, a status the operation declares, of
//! its declared media type, with its declared headers, and match its declared schema.
//!
//! Bounded for CI: `ABR_CONTRACT_EXAMPLES` examples per operation (default 12), one worker,
//! a fixed seed. The event streams, the live view's socket, the relay's connect and `/mcp`
//! are left to their own tests (a stream never ends; a socket needs a handshake; MCP is
//! JSON-RPC). Examples run per operation are printed.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::tools::python_venv;
use crate::common::{self, TOKEN};

/// Operations Schemathesis leaves to other tests (a regex on the path).
const LEFT_OUT: &str = "^/(mcp|live/.*/ws|v1/relay/[^/]+/connect|v1/events|v1/tasks/[^/]+/events)$";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_answers_within_its_description_for_generated_requests() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let venv = python_venv(
        "api-contract-venv",
        &here.join("tests/api-contract/requirements.txt"),
    )
    .await;
    let examples = std::env::var("ABR_CONTRACT_EXAMPLES").unwrap_or_else(|_| "12".into());
    // Named profiles on: their routes answer as a local runner's do.
    let profiles = tempfile::tempdir().unwrap();
    let dir = profiles.path().to_owned();
    let stack = common::stack_with(|c| c.providers.profile_dir = Some(dir), |b| b).await;
    let report = tempfile::tempdir().unwrap();
    let events = report.path().join("events.ndjson");
    let output = tokio::process::Command::new(venv.join("bin/schemathesis"))
        .arg("run")
        .arg(here.join("../../docs/openapi.json"))
        .args(["--url", &stack.server.base_url()])
        .args(["--header", &format!("Authorization: Bearer {TOKEN}")])
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,\
             response_headers_conformance,response_schema_conformance",
        ])
        .args(["--max-examples", &examples])
        .args(["--phases", "examples,coverage,fuzzing"])
        .args(["--workers", "1", "--seed", "20261206", "--no-color"])
        .args(["--request-timeout", "30"])
        .args(["--exclude-path-regex", LEFT_OUT])
        .args(["--generation-database", "none"])
        .args(["--report", "ndjson", "--report-ndjson-path"])
        .arg(&events)
        .current_dir(report.path())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .expect("schemathesis runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let _ = std::fs::copy(
        &events,
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("api-contract.ndjson"),
    );
    println!("{stdout}");
    let report = std::fs::read_to_string(&events).unwrap_or_default();
    let per_operation = examples_per_operation(&report);
    let seen = statuses_seen(&report);
    println!(
        "examples run per operation ({} operations), statuses answered:",
        per_operation.len()
    );
    for (operation, count) in &per_operation {
        let statuses = seen
            .get(operation)
            .map(|s| format!("{s:?}"))
            .unwrap_or_default();
        println!("  {count:>4}  {operation}  {statuses}");
    }
    let (declared, reached) = declared_statuses_reached(&seen);
    println!("declared answers reached: {reached} of {declared} (operation, status) pairs");
    stack.server.shutdown().await;
    stack.site.shutdown().await;
    assert!(
        output.status.success(),
        "Schemathesis found answers outside the description:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        per_operation.len() >= 60,
        "every operation but the streams was exercised: {per_operation:?}\n{stdout}"
    );
}

/// How many requests Schemathesis sent to each operation (its label, `POST /v1/post`), from
/// its NDJSON event report: the cases recorded by each finished scenario.
fn examples_per_operation(ndjson: &str) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for line in ndjson.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let recorder = &event["ScenarioFinished"]["recorder"];
        if let (Some(label), Some(cases)) =
            (recorder["label"].as_str(), recorder["cases"].as_object())
        {
            *counts.entry(label.to_owned()).or_default() += cases.len() as u64;
        }
    }
    counts
}

/// The statuses each operation answered, from the report's recorded interactions.
fn statuses_seen(ndjson: &str) -> BTreeMap<String, std::collections::BTreeSet<u64>> {
    let mut seen: BTreeMap<String, std::collections::BTreeSet<u64>> = BTreeMap::new();
    for line in ndjson.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let recorder = &event["ScenarioFinished"]["recorder"];
        let (Some(label), Some(interactions)) = (
            recorder["label"].as_str(),
            recorder["interactions"].as_object(),
        ) else {
            continue;
        };
        for interaction in interactions.values() {
            if let Some(status) = interaction["response"]["status_code"].as_u64() {
                seen.entry(label.to_owned()).or_default().insert(status);
            }
        }
    }
    seen
}

/// How many `(operation, status)` answers the description declares for the operations
/// tested, and how many of them the run saw.
fn declared_statuses_reached(
    seen: &BTreeMap<String, std::collections::BTreeSet<u64>>,
) -> (usize, usize) {
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let (mut declared, mut reached) = (0, 0);
    for (label, statuses) in seen {
        let Some((method, path)) = label.split_once(' ') else {
            continue;
        };
        let answers = &doc["paths"][path][method.to_ascii_lowercase()]["responses"];
        for status in answers.as_object().into_iter().flat_map(|a| a.keys()) {
            declared += 1;
            if status.parse::<u64>().is_ok_and(|s| statuses.contains(&s)) {
                reached += 1;
            }
        }
    }
    (declared, reached)
}
