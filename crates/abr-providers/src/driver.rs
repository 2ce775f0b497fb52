//! One Playwright driver per tokio runtime (in a service: one per process), started on
//! first use.
//!
//! Starting the driver (a Node process loading playwright-core) costs about 350 ms, and one
//! driver serves any number of browsers and concurrent jobs, so every provider shares it.
//! playwright-rs binds a driver's channels to the runtime that started it (using it from
//! another runtime deadlocks), hence one per runtime rather than one per process.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use abr_core::{ProviderError, ProviderErrorKind};
use playwright_rs::Playwright;
use tokio::runtime::{Handle, Id};
use tokio::sync::OnceCell;

use crate::error::{SETUP_HINT, from_playwright};

// `Arc<Playwright>`, never a clone of `Playwright`: dropping any clone shuts the driver down.
type Drivers = Mutex<HashMap<Id, Arc<OnceCell<Arc<Playwright>>>>>;

static DRIVERS: LazyLock<Drivers> = LazyLock::new(Drivers::default);

/// The Playwright driver of the current tokio runtime, started on first call.
///
/// # Errors
/// [`ProviderErrorKind::Misconfigured`] naming the setup command when the driver (Node and
/// playwright-core) cannot be found or started, or when called outside a tokio runtime.
pub async fn playwright() -> Result<Arc<Playwright>, ProviderError> {
    let runtime = Handle::try_current()
        .map_err(|_| ProviderError::new(ProviderErrorKind::Misconfigured, "no tokio runtime"))?
        .id();
    let cell = {
        let mut drivers = DRIVERS.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(drivers.entry(runtime).or_default())
    };
    cell.get_or_try_init(|| async {
        check_driver_path()?;
        Playwright::launch()
            .await
            .map(Arc::new)
            .map_err(|e| from_playwright("starting Playwright", e))
    })
    .await
    .cloned()
}

/// A clearer error than the driver's own when `PLAYWRIGHT_DRIVER_PATH` points nowhere.
fn check_driver_path() -> Result<(), ProviderError> {
    let Some(dir) = std::env::var_os("PLAYWRIGHT_DRIVER_PATH") else {
        return Ok(());
    };
    let dir = Path::new(&dir);
    if dir.join("node").exists() && dir.join("package/cli.js").exists() {
        Ok(())
    } else {
        Err(ProviderError::new(
            ProviderErrorKind::Misconfigured,
            format!(
                "PLAYWRIGHT_DRIVER_PATH={} holds no Playwright driver (node, package/cli.js); \
                 {SETUP_HINT}",
                dir.display()
            ),
        ))
    }
}
