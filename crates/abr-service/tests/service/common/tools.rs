//! Tools from outside Rust a test drives (a client generator, a property-based API tester):
//! a pinned Python virtual environment kept with the build, and a command run to its end.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::sync::Mutex;

/// One environment made at a time (tests run in parallel).
static MAKING: Mutex<()> = Mutex::const_new(());

/// A virtual environment named `name` with exactly `requirements` (a pinned
/// `requirements.txt`) installed, made when missing or when the file changed; kept in the
/// build's temporary folder, so a fresh clone makes it once.
pub async fn python_venv(name: &str, requirements: &Path) -> PathBuf {
    let _one = MAKING.lock().await;
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let pinned = std::fs::read_to_string(requirements).unwrap();
    let stamp = venv.join(".requirements");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(pinned.as_str()) {
        return venv;
    }
    let _ = std::fs::remove_dir_all(&venv);
    run(
        "python3 -m venv",
        tokio::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv),
    )
    .await;
    run(
        &format!("pip install -r {}", requirements.display()),
        tokio::process::Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(requirements),
    )
    .await;
    std::fs::write(&stamp, &pinned).unwrap();
    venv
}

/// Runs `command` to its end and answers its standard output; panics naming `what` (with
/// both outputs) when it fails.
pub async fn run(what: &str, command: &mut tokio::process::Command) -> String {
    let output = command
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}
