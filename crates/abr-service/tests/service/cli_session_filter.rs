//! `abr session filter`, end to end: the real binary, real files, real stdin.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a panic is a test failure with a message"
)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

const CANARY: &str = "canary-secret-123";

/// A scope allowing `example.com` (and subdomains), `localhost`, and one exact origin.
const SCOPE: &str = r#"{
  "cookieDomains": ["example.com", "localhost"],
  "origins": ["https://app.example.com"]
}"#;

/// A state with one item per rule. Every value carries the canary so a leak would show.
fn mixed_state() -> String {
    json!({
        "cookies": [
            {"name": "host", "value": format!("{CANARY}-1"), "domain": "app.example.com",
             "path": "/", "expires": -1, "httpOnly": true, "secure": true, "sameSite": "Lax"},
            {"name": "dom", "value": format!("{CANARY}-2"), "domain": ".example.com",
             "path": "/", "expires": 1798675200, "httpOnly": false, "secure": true,
             "sameSite": "None"},
            {"name": "evil", "value": format!("{CANARY}-3"), "domain": ".evil.com",
             "path": "/", "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Lax"},
            {"name": "lookalike", "value": format!("{CANARY}-4"), "domain": "notexample.com",
             "path": "/", "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Lax"},
            {"name": "psl", "value": format!("{CANARY}-5"), "domain": ".com",
             "path": "/", "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Lax"},
            {"name": "local", "value": format!("{CANARY}-6"), "domain": "localhost",
             "path": "/", "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Strict"},
            {"name": "sub-local", "value": format!("{CANARY}-7"), "domain": "a.localhost",
             "path": "/", "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Lax"}
        ],
        "origins": [
            {"origin": "https://app.example.com",
             "localStorage": [{"name": "token", "value": format!("{CANARY}-8")}]},
            {"origin": "https://example.com",
             "localStorage": [{"name": "token", "value": format!("{CANARY}-9")}]},
            {"origin": "http://app.example.com",
             "localStorage": [{"name": "token", "value": format!("{CANARY}-10")}]},
            {"origin": "https://app.example.com:8443",
             "localStorage": [{"name": "token", "value": format!("{CANARY}-11")}]},
            {"origin": "not an origin",
             "localStorage": [{"name": "token", "value": format!("{CANARY}-12")}]}
        ],
        "credentials": [{"username": "u", "password": format!("{CANARY}-13")}]
    })
    .to_string()
}

/// What [`mixed_state`] filtered by [`SCOPE`] must be: the kept items, unchanged.
fn mixed_state_filtered() -> Value {
    json!({
        "cookies": [
            {"name": "host", "value": format!("{CANARY}-1"), "domain": "app.example.com",
             "path": "/", "expires": -1, "httpOnly": true, "secure": true, "sameSite": "Lax"},
            {"name": "dom", "value": format!("{CANARY}-2"), "domain": ".example.com",
             "path": "/", "expires": 1798675200, "httpOnly": false, "secure": true,
             "sameSite": "None"},
            {"name": "local", "value": format!("{CANARY}-6"), "domain": "localhost",
             "path": "/", "expires": -1, "httpOnly": false, "secure": false, "sameSite": "Strict"}
        ],
        "origins": [
            {"origin": "https://app.example.com",
             "localStorage": [{"name": "token", "value": format!("{CANARY}-8")}]}
        ]
    })
}

fn mixed_state_report() -> Value {
    json!({
        "keptCookies": 3,
        "keptOrigins": 1,
        "dropped": {
            "cookieOutOfScope": 3,
            "cookiePublicSuffix": 1,
            "originOutOfScope": 3,
            "originInvalid": 1,
            "unscopedField": 1
        }
    })
}

/// Written by Playwright 1.64 `context.storageState({ indexedDB: true })`, trimmed; the same
/// sample abr-protocol round-trips byte for byte.
const PLAYWRIGHT_STATE: &str = r#"{
  "cookies": [
    {
      "name": "sid",
      "value": "s3cr3t",
      "domain": ".example.com",
      "path": "/",
      "expires": 1798675200.123456,
      "httpOnly": true,
      "secure": true,
      "sameSite": "None",
      "partitionKey": "https://example.com",
      "_crHasCrossSiteAncestor": false
    },
    {
      "name": "pref",
      "value": "dark",
      "domain": "app.example.com",
      "path": "/settings",
      "expires": -1,
      "httpOnly": false,
      "secure": false,
      "sameSite": "Lax"
    }
  ],
  "origins": [
    {
      "origin": "https://app.example.com",
      "localStorage": [
        {
          "name": "token",
          "value": "abc"
        }
      ],
      "indexedDB": [
        {
          "name": "db",
          "version": 1,
          "stores": []
        }
      ]
    }
  ]
}"#;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("abr-cli-{test}-{}-{nanos}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn write(&self, name: &str, content: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, content).unwrap();
        path
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `abr` with `args` in `dir`, feeding `stdin` (empty when `None`).
fn abr(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_abr"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.unwrap_or_default().to_owned();
    // From a thread, so a large input cannot deadlock against a full stdout pipe.
    let writer = std::thread::spawn(move || match pipe.write_all(input.as_bytes()) {
        // abr may exit without reading stdin (e.g. after an invalid scope).
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other.unwrap(),
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn stdout(out: &Output) -> &str {
    std::str::from_utf8(&out.stdout).unwrap()
}

fn stderr(out: &Output) -> &str {
    std::str::from_utf8(&out.stderr).unwrap()
}

/// Success: exit 0, stdout is the filtered state as pretty JSON with one trailing newline,
/// stderr is the report on one line. Returns both parsed.
fn assert_success(out: &Output) -> (Value, Value) {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
    let text = stdout(out);
    assert!(text.ends_with("}\n") && !text.ends_with("\n\n"), "{text:?}");
    let state: Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        text,
        format!("{}\n", serde_json::to_string_pretty(&state).unwrap()),
        "stdout is pretty JSON"
    );

    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "one report line: {err:?}");
    assert!(err.ends_with('\n'));
    let report: Value = serde_json::from_str(err).unwrap();
    assert!(!err.contains(CANARY), "report holds counts only: {err}");
    (state, report)
}

/// Failure: exit 2, nothing on stdout, exactly one `abr: error: ` line on stderr, no canary.
/// Returns the message after the prefix.
fn assert_failure(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(out));
    assert!(out.stdout.is_empty(), "stdout: {:?}", stdout(out));
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "exactly one line: {err:?}");
    assert!(err.ends_with('\n'), "{err:?}");
    assert!(!err.contains(CANARY), "leaked a value: {err}");
    err.strip_prefix("abr: error: ")
        .unwrap_or_else(|| panic!("no `abr: error: ` prefix: {err:?}"))
        .trim_end()
        .to_owned()
}

#[test]
fn filters_a_state_file() {
    let dir = TempDir::new("file");
    dir.write("scope.json", SCOPE);
    dir.write("state.json", &mixed_state());

    let out = abr(
        dir.path(),
        &["session", "filter", "--scope", "scope.json", "state.json"],
        None,
    );
    let (state, report) = assert_success(&out);

    assert_eq!(state, mixed_state_filtered());
    assert_eq!(report, mixed_state_report());
    // Host-only stays host-only, the leading dot stays.
    assert_eq!(state["cookies"][0]["domain"], "app.example.com");
    assert_eq!(state["cookies"][1]["domain"], ".example.com");
    // Unknown top-level fields are dropped.
    assert!(state.get("credentials").is_none());
}

#[test]
fn filters_stdin_when_the_path_is_absent_or_dash() {
    let dir = TempDir::new("stdin");
    dir.write("scope.json", SCOPE);
    let input = mixed_state();

    for args in [
        &["session", "filter", "--scope", "scope.json"][..],
        &["session", "filter", "--scope", "scope.json", "-"][..],
        &["session", "filter", "-", "--scope", "scope.json"][..],
    ] {
        let out = abr(dir.path(), args, Some(&input));
        let (state, report) = assert_success(&out);
        assert_eq!(state, mixed_state_filtered(), "{args:?}");
        assert_eq!(report, mixed_state_report(), "{args:?}");
    }
}

#[test]
fn accepts_a_platform_policy_as_scope() {
    let dir = TempDir::new("policy");
    dir.write(
        "policy.json",
        &json!({
            "allowInteractiveCapture": true,
            "allowUnattended": false,
            "session": serde_json::from_str::<Value>(SCOPE).unwrap()
        })
        .to_string(),
    );
    dir.write("state.json", &mixed_state());

    let out = abr(
        dir.path(),
        &["session", "filter", "--scope", "policy.json", "state.json"],
        None,
    );
    let (state, report) = assert_success(&out);
    assert_eq!(state, mixed_state_filtered());
    assert_eq!(report, mixed_state_report());
}

#[test]
fn report_lists_only_nonzero_reasons() {
    let dir = TempDir::new("report");
    dir.write("scope.json", SCOPE);
    let state = r#"{"cookies":[{"name":"a","value":"b","domain":"example.com"}],"origins":[]}"#;

    let out = abr(
        dir.path(),
        &["session", "filter", "--scope", "scope.json"],
        Some(state),
    );
    let (_, report) = assert_success(&out);
    assert_eq!(
        stderr(&out),
        "{\"keptCookies\":1,\"keptOrigins\":0,\"dropped\":{}}\n"
    );
    assert_eq!(report["dropped"], json!({}));
}

#[test]
fn playwright_state_round_trips_unchanged_under_a_scope_allowing_everything() {
    let dir = TempDir::new("playwright");
    dir.write(
        "scope.json",
        r#"{"cookieDomains":["example.com"],"origins":["https://app.example.com"]}"#,
    );
    dir.write("state.json", PLAYWRIGHT_STATE);

    let out = abr(
        dir.path(),
        &["session", "filter", "--scope", "scope.json", "state.json"],
        None,
    );
    let (_, report) = assert_success(&out);
    // Byte for byte: partitionKey, _crHasCrossSiteAncestor, indexedDB, the fractional expiry.
    assert_eq!(stdout(&out), format!("{PLAYWRIGHT_STATE}\n"));
    assert_eq!(
        report,
        json!({"keptCookies": 2, "keptOrigins": 1, "dropped": {}})
    );

    // With a top-level field Playwright may add, only that field goes.
    let mut with_credentials: Value = serde_json::from_str(PLAYWRIGHT_STATE).unwrap();
    with_credentials["credentials"] = json!([]);
    let out = abr(
        dir.path(),
        &["session", "filter", "--scope", "scope.json"],
        Some(&with_credentials.to_string()),
    );
    let (state, report) = assert_success(&out);
    let original: Value = serde_json::from_str(PLAYWRIGHT_STATE).unwrap();
    assert_eq!(state, original);
    assert_eq!(report["dropped"], json!({"unscopedField": 1}));
}

#[test]
fn invalid_scopes_exit_2_with_one_line() {
    let dir = TempDir::new("bad-scope");
    dir.write("state.json", PLAYWRIGHT_STATE);
    let cases = [
        (r#"{"cookieDomains":[],"origins":[]}"#, "no cookie domains"),
        (r#"{}"#, "no cookie domains"),
        (r#"{"cookieDomains":["com"]}"#, "\"com\" is a public suffix"),
        (r#"{"cookieDomains":["*.example.com"]}"#, "wildcard"),
        (r#"{"cookieDomains":["https://example.com"]}"#, "scheme"),
        (r#"{"cookieDomains":["example.com:443"]}"#, "port"),
        (
            r#"{"cookieDomains":["example.com"],"origins":["https://example.com/path"]}"#,
            "origin \"https://example.com/path\" is invalid",
        ),
        (r#"{"session":{"cookieDomains":["com"]}}"#, "public suffix"),
    ];
    for (scope, expected) in cases {
        dir.write("scope.json", scope);
        let out = abr(
            dir.path(),
            &["session", "filter", "--scope", "scope.json", "state.json"],
            None,
        );
        let message = assert_failure(&out);
        assert!(
            message.starts_with("invalid scope in scope.json: "),
            "{scope}: {message}"
        );
        assert!(message.contains(expected), "{scope}: {message}");
    }
}

#[test]
fn malformed_scope_files_exit_2_with_one_line() {
    let dir = TempDir::new("malformed-scope");
    dir.write("state.json", PLAYWRIGHT_STATE);
    let cases = [
        (
            "",
            "scope.json is not valid JSON: EOF while parsing a value",
        ),
        ("{\"cookieDomains\": [", "scope.json is not valid JSON: "),
        (
            r#"{"cookieDomain":["example.com"]}"#,
            "scope.json is not a valid session scope: unknown field `cookieDomain`, expected \
             `cookieDomains` or `origins` at line 1 column 15",
        ),
        (
            r#"{"cookieDomains":"example.com"}"#,
            "scope.json is not a valid session scope: invalid type: string, expected a sequence",
        ),
        (
            r#"["example.com"]"#,
            "scope.json is not a valid scope: expected a JSON object at the top level, found an \
             array",
        ),
        (
            r#"{"session":{"cookieDomains":["example.com"],"extra":1}}"#,
            "scope.json is not a valid platform policy: unknown field `extra`",
        ),
        (
            r#"[["example.com"], []]"#,
            "scope.json is not a valid scope: expected a JSON object",
        ),
        (
            r#"{"session":null}"#,
            "scope.json is a platform policy without a session scope",
        ),
        (
            r#"{"session":{"cookieDomains":["example.com"]},"cookieDomains":["x.org"]}"#,
            "scope.json mixes a platform policy",
        ),
    ];
    for (scope, expected) in cases {
        dir.write("scope.json", scope);
        let out = abr(
            dir.path(),
            &["session", "filter", "--scope", "scope.json", "state.json"],
            None,
        );
        let message = assert_failure(&out);
        assert!(message.starts_with(expected), "{scope}: {message}");
    }
}

#[test]
fn malformed_states_exit_2_without_echoing_values() {
    let dir = TempDir::new("malformed-state");
    dir.write("scope.json", SCOPE);
    let cases = [
        (
            "{".to_owned(),
            "is not valid JSON: EOF while parsing an object",
        ),
        (
            format!("{{\"x\": \"{CANARY}\",}}"),
            "is not valid JSON: trailing comma",
        ),
        (CANARY.to_owned(), "is not valid JSON: expected value"),
        (
            format!("{{}} {CANARY}"),
            "is not valid JSON: trailing characters",
        ),
        (
            format!("{{\n  \"cookies\": \"{CANARY}\"\n}}"),
            "is not a valid storageState: invalid type: string, expected a sequence at line 2",
        ),
        (
            r#"{"cookies":[{"name":"a","value":1234,"domain":"example.com"}]}"#.to_owned(),
            "is not a valid storageState: invalid type: integer, expected a string",
        ),
        (
            format!(r#"{{"cookies":[{{"name":"a","value":"{CANARY}","domain":["{CANARY}"]}}]}}"#),
            "is not a valid storageState: invalid type: sequence, expected a string",
        ),
        (
            format!(
                r#"{{"cookies":[{{"name":"a","value":"v","domain":"example.com","httpOnly":"{CANARY}"}}]}}"#
            ),
            "is not a valid storageState: invalid type: string, expected a boolean",
        ),
        (
            format!(
                r#"{{"cookies":[{{"name":"a","value":"v","domain":"example.com","sameSite":"{CANARY}"}}]}}"#
            ),
            "is not a valid storageState: unknown variant, expected one of",
        ),
        (
            format!(r#"{{"cookies":[{{"name":"a","value":"{CANARY}"}}]}}"#),
            "is not a valid storageState: missing field `domain`",
        ),
        (
            format!(
                r#"{{"origins":[{{"origin":"https://app.example.com","localStorage":[{{"name":"k","value":{{"v":"{CANARY}"}}}}]}}]}}"#
            ),
            "is not a valid storageState: invalid type: map, expected a string",
        ),
        (
            format!(r#"{{"origins":"{CANARY}"}}"#),
            "is not a valid storageState: invalid type: string, expected a sequence",
        ),
        (
            format!(r#""{CANARY}""#),
            "is not a valid storageState: invalid type: string",
        ),
    ];
    for (state, expected) in cases {
        dir.write("state.json", &state);
        let out = abr(
            dir.path(),
            &["session", "filter", "--scope", "scope.json", "state.json"],
            None,
        );
        let message = assert_failure(&out);
        assert_eq!(
            message.split_once(' ').unwrap().0,
            "state.json",
            "{message}"
        );
        assert!(message.contains(expected), "{state}: {message}");

        let out = abr(
            dir.path(),
            &["session", "filter", "--scope", "scope.json"],
            Some(&state),
        );
        let message = assert_failure(&out);
        assert!(message.starts_with("stdin "), "{message}");
        assert!(message.contains(expected), "{state}: {message}");
    }
}

#[test]
fn non_utf8_state_exits_2() {
    let dir = TempDir::new("non-utf8");
    dir.write("scope.json", SCOPE);
    let path = dir.path().join("state.json");
    std::fs::write(
        &path,
        b"{\"cookies\":[{\"name\":\"a\",\"value\":\"\xff\xfe\"}]}",
    )
    .unwrap();
    let out = abr(
        dir.path(),
        &["session", "filter", "--scope", "scope.json", "state.json"],
        None,
    );
    let message = assert_failure(&out);
    assert!(
        message.starts_with("state.json is not valid JSON: "),
        "{message}"
    );
}

#[test]
fn unreadable_files_exit_2() {
    let dir = TempDir::new("missing");
    dir.write("scope.json", SCOPE);
    dir.write("state.json", PLAYWRIGHT_STATE);
    std::fs::create_dir(dir.path().join("a-directory")).unwrap();

    let cases: [(&[&str], &str); 4] = [
        (
            &["session", "filter", "--scope", "scope.json", "missing.json"],
            "cannot read state file missing.json: ",
        ),
        (
            &["session", "filter", "--scope", "missing.json", "state.json"],
            "cannot read scope file missing.json: ",
        ),
        (
            &["session", "filter", "--scope", "scope.json", "a-directory"],
            "cannot read state file a-directory: ",
        ),
        (
            &["session", "filter", "--scope", "a-directory", "state.json"],
            "cannot read scope file a-directory: ",
        ),
    ];
    for (args, expected) in cases {
        let out = abr(dir.path(), args, None);
        let message = assert_failure(&out);
        assert!(message.starts_with(expected), "{args:?}: {message}");
    }
}

#[test]
fn the_scope_is_checked_before_the_state_is_read() {
    let dir = TempDir::new("order");
    dir.write("scope.json", r#"{"cookieDomains":[]}"#);
    // Stdin is never read: the invalid scope is reported first.
    let out = abr(
        dir.path(),
        &["session", "filter", "--scope", "scope.json"],
        Some("not json"),
    );
    let message = assert_failure(&out);
    assert!(
        message.starts_with("invalid scope in scope.json"),
        "{message}"
    );
}

#[test]
fn usage_errors_exit_2_with_nothing_on_stdout() {
    let dir = TempDir::new("usage");
    dir.write("state.json", PLAYWRIGHT_STATE);
    for args in [
        &["session", "filter", "state.json"][..],
        &["session", "filter", "--scope"][..],
        &[
            "session",
            "filter",
            "--scope",
            "s.json",
            "--bogus",
            "state.json",
        ][..],
        &["session", "filter", "--scope", "s.json", "a.json", "b.json"][..],
        &["session", "frobnicate"][..],
        &[][..],
    ] {
        let out = abr(dir.path(), args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
}

#[test]
fn help_documents_both_scope_shapes_and_exit_codes() {
    let dir = TempDir::new("help");
    let out = abr(dir.path(), &["session", "filter", "--help"], None);
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    for needle in [
        "Usage: abr session filter --scope <SCOPE.json> [STATE.json]",
        "\"cookieDomains\"",
        "\"session\"",
        "stdin",
        "Exit codes:",
    ] {
        assert!(help.contains(needle), "missing {needle:?} in:\n{help}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn an_unwritable_stdout_exits_1() {
    let dir = TempDir::new("dev-full");
    dir.write("scope.json", SCOPE);
    dir.write("state.json", PLAYWRIGHT_STATE);
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_abr"))
        .args(["session", "filter", "--scope", "scope.json", "state.json"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(
        err.starts_with("abr: error: cannot write to stdout: "),
        "{err:?}"
    );
}
