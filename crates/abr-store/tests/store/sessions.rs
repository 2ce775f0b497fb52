//! Sessions at rest: encrypted with the key, readable only with it, never stored without
//! one (outside insecure-dev), and durable across a `kill -9` of the process that wrote
//! them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use abr_core::SessionKey as Key;
use abr_core::SessionStore;
use abr_protocol::{AgentSessionState, Cookie};
use abr_store::{SealingKey, SqliteStore};

const CANARY: &str = "canary-session-cookie-5f1d2c";

fn state() -> AgentSessionState {
    AgentSessionState {
        cookies: vec![Cookie::new("sid", CANARY, "example.com")],
        ..AgentSessionState::default()
    }
}

fn key() -> SealingKey {
    SealingKey::from_hex(&"4a".repeat(32)).unwrap()
}

fn files_contain(dir: &std::path::Path, needle: &str) -> bool {
    std::fs::read_dir(dir).unwrap().any(|entry| {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap_or_default();
        bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
    })
}

#[tokio::test]
async fn a_session_is_encrypted_at_rest_and_reads_back_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    let k = Key::new("ws", "acct", "demo");
    {
        let store = SqliteStore::open(&path, Some(key()), false).unwrap();
        store.save(&k, state()).await.unwrap();
        assert_eq!(store.load(&k).await.unwrap(), Some(state()));
    }
    assert!(
        !files_contain(dir.path(), CANARY),
        "the cookie value is on disk in the clear"
    );
    // Reopened: still there, only with the right key.
    let store = SqliteStore::open(&path, Some(key()), false).unwrap();
    assert_eq!(store.load(&k).await.unwrap(), Some(state()));
    let wrong = SqliteStore::open(&path, Some(SealingKey::from_bytes([1; 32])), false).unwrap();
    let e = wrong.load(&k).await.unwrap_err();
    assert_eq!(e.code(), "store_failed");
    // A row that does not open with this key is not a failure that goes away.
    assert!(
        matches!(&e, abr_core::CoreError::Store(f)
            if f.kind() == abr_core::error::StoreFailureKind::Corrupt),
        "{e:?}"
    );
    assert!(!e.is_retryable(), "{e:?}");
    assert!(!e.to_string().contains(CANARY));
    // Another row's key does not open it either (rows are bound to their key).
    assert_eq!(
        store.load(&Key::new("ws", "other", "demo")).await.unwrap(),
        None
    );
    assert!(store.delete(&k).await.unwrap());
    assert_eq!(store.load(&k).await.unwrap(), None);
}

#[tokio::test]
async fn without_a_key_sessions_are_refused_unless_insecure_dev() {
    let dir = tempfile::tempdir().unwrap();
    let k = Key::new("ws", "acct", "demo");
    let strict = SqliteStore::open(&dir.path().join("a.db"), None, false).unwrap();
    let e = strict.save(&k, state()).await.unwrap_err();
    assert!(e.to_string().contains("ABR_SESSION_KEY"), "{e}");
    // Set up wrong, not down: no retry can succeed (the relay example of issue 37 answered
    // this `store_failed` marked retryable).
    assert!(
        matches!(&e, abr_core::CoreError::Store(f)
            if f.kind() == abr_core::error::StoreFailureKind::Misconfigured),
        "{e:?}"
    );
    assert!(!e.is_retryable(), "{e:?}");
    assert_eq!(
        strict.load(&k).await.unwrap(),
        None,
        "nothing stored half-way"
    );
    let dev = SqliteStore::open(&dir.path().join("b.db"), None, true).unwrap();
    dev.save(&k, state()).await.unwrap();
    assert_eq!(dev.load(&k).await.unwrap(), Some(state()));
}

/// The child half of the kill -9 test: writes, says so, then waits to be killed.
#[tokio::test]
async fn child_writes_then_waits_to_be_killed() {
    let Ok(path) = std::env::var("ABR_STORE_KILL_TEST_DB") else {
        return;
    };
    let store = SqliteStore::open(std::path::Path::new(&path), Some(key()), false).unwrap();
    store
        .save(&Key::new("ws", "acct", "demo"), state())
        .await
        .unwrap();
    println!("WRITTEN");
    use std::io::Write as _;
    std::io::stdout().flush().unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
}

#[test]
fn a_write_that_returned_survives_kill_9() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abr.db");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sessions::child_writes_then_waits_to_be_killed",
            "--nocapture",
        ])
        .env("ABR_STORE_KILL_TEST_DB", &path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let written = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.contains("WRITTEN"));
    assert!(written, "the child never wrote");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = SqliteStore::open(&path, Some(key()), false).unwrap();
    let loaded = runtime
        .block_on(store.load(&Key::new("ws", "acct", "demo")))
        .unwrap();
    assert_eq!(loaded, Some(state()));
}
