//! The single-instance lock: an exclusive advisory lock (`flock`, through
//! [`std::fs::File::try_lock`]) on the account's lock file, held by the runner for as long
//! as its process lives. The kernel releases it when the process ends, however it ends, so
//! a crashed runner never leaves a stale lock behind.

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::time::{Duration, Instant};

use super::LocalError;

/// How often a waiter looks at the lock again.
const POLL: Duration = Duration::from_millis(100);

/// The held lock. Dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct InstanceLock {
    _file: File,
}

/// Takes the lock at `path` if nobody holds it: `None` when another process (or another
/// open of the file in this one) does.
///
/// # Errors
/// [`LocalError::Io`] when the lock file cannot be opened or locked for another reason.
pub(crate) fn try_acquire(path: &Path) -> Result<Option<InstanceLock>, LocalError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(|e| LocalError::io("open", path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(InstanceLock { _file: file })),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(e)) => Err(LocalError::io("lock", path, e)),
    }
}

/// Whether a runner holds the lock at `path` now. A missing lock file is not held.
///
/// # Errors
/// [`LocalError::Io`] when the lock file exists but cannot be opened or locked.
pub(crate) fn is_held(path: &Path) -> Result<bool, LocalError> {
    if !path.exists() {
        return Ok(false);
    }
    // Taken and released at once when free.
    Ok(try_acquire(path)?.is_none())
}

/// Waits until the lock at `path` can be taken, up to `limit`, and takes it: `None` when
/// it was still held at the end.
///
/// # Errors
/// As [`try_acquire`].
pub(crate) fn acquire_within(
    path: &Path,
    limit: Duration,
) -> Result<Option<InstanceLock>, LocalError> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(lock) = try_acquire(path)? {
            return Ok(Some(lock));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(POLL);
    }
}

/// Waits until nobody holds the lock at `path`, up to `limit`: whether it was released.
///
/// # Errors
/// As [`try_acquire`].
pub(crate) fn released_within(path: &Path, limit: Duration) -> Result<bool, LocalError> {
    Ok(acquire_within(path, limit)?.is_some())
}

/// Whether process `pid` still runs, as `/proc` tells (a zombie has ended); `false` where
/// there is no `/proc` (the lock is then all there is to go by).
pub(crate) fn process_runs(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) S ...`: the state follows the last `)`.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// Waits until process `pid` has ended, up to `limit`: whether it did.
pub(crate) fn ended_within(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while process_runs(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_taker_is_refused_until_the_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runner-local.lock");
        assert!(!is_held(&path).unwrap(), "no file yet");
        let held = try_acquire(&path).unwrap().expect("free");
        // Another open of the same file (as another process would) is refused.
        assert!(try_acquire(&path).unwrap().is_none());
        assert!(is_held(&path).unwrap());
        assert!(
            acquire_within(&path, Duration::from_millis(250))
                .unwrap()
                .is_none()
        );
        drop(held);
        assert!(!is_held(&path).unwrap());
        assert!(released_within(&path, Duration::ZERO).unwrap());
    }

    #[test]
    fn this_process_runs_and_an_ended_child_does_not() {
        assert!(process_runs(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!process_runs(pid));
        assert!(ended_within(pid, Duration::ZERO));
    }

    #[test]
    fn the_lock_file_is_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runner-local.lock");
        let _held = try_acquire(&path).unwrap().unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }
}
