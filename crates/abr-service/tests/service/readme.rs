//! The docs say what the code does. README.md is the front door (at most 250 lines), and
//! the tables of `docs/` are the code's own: the error table is `abr_protocol::codes`, the
//! settings table names the variables the runner reads, the MCP table the tools `/mcp`
//! lists; the platform file shown is a valid platform file, and the embedding snippet is the
//! code of the compiled example (`examples/embed.rs`).

#![allow(clippy::unwrap_used, clippy::panic, reason = "test code")]

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use axum::body::Body;
use axum::http::{Method, header};
use common::fake::*;
use serde_json::json;

const README: &str = include_str!("../../../../README.md");
const HTTP_API: &str = include_str!("../../../../docs/http-api.md");
const PLATFORMS: &str = include_str!("../../../../docs/platforms.md");
const CONFIGURATION: &str = include_str!("../../../../docs/configuration.md");
const MCP: &str = include_str!("../../../../docs/mcp.md");
const EMBEDDING: &str = include_str!("../../../../docs/embedding.md");
const EMBED_EXAMPLE: &str = include_str!("../../../../examples/embed.rs");

/// The text of `doc` between `<!-- {name}:begin -->` and `<!-- {name}:end -->`.
fn marked<'a>(doc: &'a str, name: &str) -> &'a str {
    let begin = format!("<!-- {name}:begin -->\n");
    let end = format!("<!-- {name}:end -->");
    let start = doc
        .find(&begin)
        .unwrap_or_else(|| panic!("no {begin:?} marker"))
        + begin.len();
    let stop = doc
        .find(&end)
        .unwrap_or_else(|| panic!("no {end:?} marker"));
    &doc[start..stop]
}

/// The backticked names in the first column of a markdown table's rows.
fn first_column(table: &str) -> Vec<String> {
    table
        .lines()
        .filter(|line| line.starts_with("| `"))
        .flat_map(|line| {
            let cell = line.split('|').nth(1).unwrap_or_default();
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn the_readme_is_a_front_door() {
    let lines = README.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines: it is the front door (at most 250); the reference \
         belongs in docs/"
    );
}

#[test]
fn the_error_table_is_the_code_table() {
    let expected = abr_protocol::codes::markdown_table();
    assert!(
        marked(HTTP_API, "error-codes") == expected,
        "docs/http-api.md's error table differs from abr_protocol::codes; paste this between \
         the markers:\n\n{expected}"
    );
}

/// Every `ABR_` (and OpenTelemetry `OTEL_`) variable the runner's source names is on the
/// configuration page, and every variable of its settings table is read by the runner.
#[test]
fn the_settings_table_is_what_the_runner_reads() {
    let mut read = BTreeSet::new();
    let mut pending = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let source = std::fs::read_to_string(&path).unwrap();
                // Names read are string literals: `"ABR_BIND"`.
                for literal in source.split('"').skip(1).step_by(2) {
                    if (literal.starts_with("ABR_") || literal.starts_with("OTEL_"))
                        && literal
                            .bytes()
                            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
                    {
                        read.insert(literal.to_owned());
                    }
                }
            }
        }
    }
    assert!(read.contains("ABR_API_TOKEN"), "{read:?}");
    let undocumented: Vec<_> = read
        .iter()
        .filter(|name| !CONFIGURATION.contains(&format!("`{name}`")))
        .collect();
    assert!(
        undocumented.is_empty(),
        "the runner reads {undocumented:?}, which docs/configuration.md does not name"
    );
    let table = first_column(marked(CONFIGURATION, "settings"));
    assert!(table.len() > 40, "{table:?}");
    let unread: Vec<_> = table
        .iter()
        .filter(|name| !read.contains(*name) && *name != "RUST_LOG")
        .collect();
    assert!(
        unread.is_empty(),
        "docs/configuration.md's settings table names {unread:?}, which the runner never reads"
    );
}

/// The MCP table lists the tools `/mcp` lists, in its order.
#[tokio::test]
async fn the_mcp_table_is_the_tool_list() {
    let s = fake_stack();
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let request = authed(Method::POST, "/mcp")
        .header(header::HOST, "localhost")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::CONTENT_TYPE, "application/json")
        .header("mcp-protocol-version", "2025-06-18")
        .body(Body::from(message.to_string()))
        .unwrap();
    let reply = call(&s.app, request).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let listed: Vec<String> = reply.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed.len(), 11, "{listed:?}");
    assert_eq!(
        first_column(marked(MCP, "mcp-tools")),
        listed,
        "docs/mcp.md's tool table is not the tool list"
    );
}

/// The platform file shown under "Platforms as data" is a valid platform file.
#[test]
fn the_platform_file_is_valid() {
    let toml = PLATFORMS
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/platforms.md shows a TOML platform file");
    let vars =
        std::collections::BTreeMap::from([("base".to_owned(), "http://127.0.0.1:8788".to_owned())]);
    let parsed = abr_engine::DeclaredStrategy::parse_toml(toml, &vars);
    assert!(parsed.is_ok(), "{:?}", parsed.err());
}

/// The Rust the embedding page shows is the compiled example's code, region by region
/// (`// docs:embed:begin` … `// docs:embed:end`, without the region's indentation), in the
/// order the page shows it.
#[test]
fn the_embedding_snippets_are_the_compiled_example() {
    let mut regions = Vec::new();
    let mut rest = EMBED_EXAMPLE;
    while let Some(at) = rest.find("// docs:embed:begin\n") {
        let indent = at - rest[..at].rfind('\n').map_or(0, |n| n + 1);
        let body = &rest[at + "// docs:embed:begin\n".len()..];
        let end = body.find("// docs:embed:end").unwrap();
        let region: Vec<&str> = body[..end]
            .lines()
            .map(|line| line.get(indent..).unwrap_or(line.trim_start()))
            .collect();
        regions.push(region.join("\n").trim_end().to_owned());
        rest = &body[end..];
    }
    let shown: Vec<String> = EMBEDDING
        .split("```rust\n")
        .skip(1)
        .map(|block| block.split("```").next().unwrap().trim_end().to_owned())
        .collect();
    assert_eq!(regions.len(), 2, "{regions:?}");
    assert_eq!(
        shown, regions,
        "docs/embedding.md shows other code than examples/embed.rs between its markers"
    );
}
