//! Wire-faithful local test doubles of two remote-browser services, for ABR's tests.
//!
//! * [`SteelDouble`]: the self-hosted Steel OSS server (`steel-dev/steel-browser`): single
//!   session slot, `/v1/sessions…` REST surface, raw CDP proxy on `ws://<host>/`.
//! * [`KernelDouble`]: Kernel's `/browsers` API with bearer auth, one Chromium per browser and a
//!   `cdp_ws_url` of the form `ws://127.0.0.1:<p>/browser/cdp?jwt=<token>`.
//!
//! Both are real HTTP + WebSocket servers bound on `127.0.0.1:0`, and their CDP URLs proxy to a
//! real local Chromium ([`LocalChromium`]). Each handle exposes fault knobs
//! (`fail_next_create`, `expire_session`, `drop_sockets`) and records
//! ([`calls`](SteelDouble::calls), counters, leak checks); the same controls are served over
//! HTTP under the reserved `/__mock/…` prefix, which neither real service has.
//!
//! The crate depends on no other ABR crate so providers can use it as a dev-dependency.
//!
//! ```no_run
//! use abr_doubles::{CdpClient, KernelDouble, KernelOptions, SteelDouble, SteelOptions};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! // Steel OSS: point the provider at `steel.base_url()`; CDP goes to `ws://127.0.0.1:<p>/`.
//! let steel = SteelDouble::start(SteelOptions::default()).await?;
//! steel.fail_next_create(500); // the next POST /v1/sessions answers 500
//!
//! // Kernel: `KERNEL_BASE_URL = kernel.base_url()`, bearer key `kernel.api_key()`.
//! let kernel = KernelDouble::start(KernelOptions::with_api_key("sk_test")).await?;
//! // ... drive the provider under test, then:
//! assert_eq!(kernel.assert_all_released(), Ok(()));
//! let calls = kernel.calls(); // every request, with status and auth-header presence
//! # let _ = (calls, CdpClient::connect(&steel.ws_url()).await?);
//! steel.shutdown().await;
//! kernel.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod browser;
pub mod cdp;
pub mod chromium;
pub mod kernel;
pub mod proxy;
mod record;
mod server;
pub mod steel;
mod storage;
mod util;

pub use cdp::{CdpClient, CdpError};
pub use chromium::{ChromiumError, ChromiumOptions, LocalChromium, process_exists};
pub use kernel::{KernelDouble, KernelOptions, ProfileState};
pub use record::{HeadersOfInterest, RecordedCall};
pub use steel::{SteelDouble, SteelOptions};

/// Errors starting a double (or relaunching its browser).
#[derive(Debug, thiserror::Error)]
pub enum DoubleError {
    /// Binding the listening socket failed.
    #[error("could not bind 127.0.0.1:{port}: {source}")]
    Bind {
        /// Requested port (0 = ephemeral).
        port: u16,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// Launching Chromium failed.
    #[error(transparent)]
    Chromium(#[from] ChromiumError),
    /// Talking CDP to the fresh Chromium failed.
    #[error(transparent)]
    Cdp(#[from] CdpError),
}
