//! Named on-disk profiles of the local provider: one folder per tenant's profile, opened
//! as a persistent browser context (its own Chromium process, closed on release), one lease
//! at a time (Chromium locks a profile folder to one process).

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use abr_core::{ProviderError, ProviderErrorKind};
use tokio::sync::{Mutex, OwnedMutexGuard};

/// The folder `relative` (from [`abr_core::guard::profile_folder`]) under `root`, created
/// owner-only. Refuses anything but plain names (no `..`, no root, no prefix).
///
/// # Errors
/// `Rejected` for a folder that would leave `root`; `Misconfigured` when it cannot be
/// created.
pub(crate) fn profile_path(root: &Path, relative: &str) -> Result<PathBuf, ProviderError> {
    let plain = !relative.is_empty()
        && Path::new(relative)
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
    if !plain {
        return Err(ProviderError::new(
            ProviderErrorKind::Rejected,
            "a profile folder is a relative path of plain names",
        ));
    }
    let path = root.join(relative);
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(&path).map_err(|e| {
        ProviderError::new(
            ProviderErrorKind::Misconfigured,
            format!(
                "creating the profile folder under the profile root: {}",
                e.kind()
            ),
        )
    })?;
    Ok(path)
}

/// One lock per profile folder: a lease holds its folder's until it is released.
#[derive(Debug, Default)]
pub(crate) struct ProfileLocks {
    locks: std::sync::Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>,
}

impl ProfileLocks {
    /// Waits up to `wait` for `path`'s lock.
    ///
    /// # Errors
    /// `Busy` (retryable) when another lease holds the profile past `wait`.
    pub(crate) async fn take(
        &self,
        path: &Path,
        wait: Duration,
    ) -> Result<OwnedMutexGuard<()>, ProviderError> {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(locks.entry(path.to_owned()).or_default())
        };
        tokio::time::timeout(wait, lock.lock_owned())
            .await
            .map_err(|_| {
                ProviderError::new(
                    ProviderErrorKind::Busy,
                    "the profile is open in another run: one run at a time uses a profile",
                )
                .with_retry_after(Duration::from_secs(5))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_never_leaves_the_root() {
        let root = tempfile::tempdir().unwrap();
        for bad in ["", "../x", "/etc", "a/../../b", "a/./b/.."] {
            let refused = profile_path(root.path(), bad).unwrap_err();
            assert_eq!(refused.kind(), ProviderErrorKind::Rejected, "{bad}");
        }
        let path = profile_path(root.path(), "t7431/jobs").unwrap();
        assert!(path.starts_with(root.path()) && path.is_dir());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }

    #[tokio::test]
    async fn a_profile_is_leased_once_at_a_time() {
        let locks = ProfileLocks::default();
        let held = locks
            .take(Path::new("/p/a"), Duration::from_millis(10))
            .await
            .unwrap();
        let busy = locks
            .take(Path::new("/p/a"), Duration::from_millis(20))
            .await
            .unwrap_err();
        assert_eq!(busy.kind(), ProviderErrorKind::Busy);
        assert!(busy.is_retryable());
        // Another profile is free meanwhile; the first is once released.
        let other = locks
            .take(Path::new("/p/b"), Duration::from_millis(10))
            .await;
        assert!(other.is_ok());
        drop(held);
        assert!(
            locks
                .take(Path::new("/p/a"), Duration::from_millis(10))
                .await
                .is_ok()
        );
    }
}
