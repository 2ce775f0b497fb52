//! Browser session providers for ABR.
//!
//! Each implements [`abr_core::SessionProvider`] with [`BrowserSession`] as its context, so a
//! strategy written once runs on every provider with the full Playwright API:
//!
//! - [`LocalBrowserSessionProvider`]: Chromium on this machine (Debian's headless shell for
//!   jobs, full Chromium for capture), a warm shared browser with a fresh context per job;
//! - [`CdpSessionProvider`]: attach to a running browser by CDP URL;
//! - [`SteelSessionProvider`], [`KernelSessionProvider`]: remote browsers, one
//!   [`RemoteSessionProvider`] lifecycle over each service's [`RemoteBackend`];
//!
//! Every browser the providers drive is held to an [`abr_core::EgressPolicy`] (default:
//! public addresses only): local and CDP contexts go through an [`EgressProxy`], remote ones
//! (Steel, Kernel) through a weaker URL gate; see the `egress` module.
//!
//! State goes in with cookies through the cookie API and localStorage through an init script
//! (no navigation per origin), and comes out through Playwright's `storageState`.
//!
//! Setup: `driver/setup` installs Chromium from Debian and the npm-pinned playwright-core; no
//! browser or Node is ever downloaded.

mod cdp;
mod chromium;
#[cfg(feature = "conformance")]
pub mod conformance;
mod downloads;
pub mod driver;
mod egress;
mod error;
mod kernel;
mod live;
mod live_state;
mod local;
mod probe;
mod probe_script;
mod process;
mod profiles;
mod remote;
mod router;
mod session;
mod shared;
mod sockets;
pub mod state;
mod steel;
mod steps;
mod unload;

pub use cdp::{CdpProviderConfig, CdpSessionProvider};
pub use chromium::{ChromiumBinary, base_args, display_available, running_as_root};
pub use egress::{EgressProxy, ProxyLimits};
pub use error::SETUP_HINT;
pub use kernel::{KERNEL_API_URL, KernelBackend, KernelProviderConfig, KernelSessionProvider};
pub use local::{
    DEFAULT_RECYCLE_AFTER, Isolation, LocalBrowserSessionProvider, LocalProviderConfig,
};
pub use process::BrowserProcess;
pub use remote::{Attached, RemoteBackend, RemoteSession, RemoteSessionProvider, RemoteSettings};
pub use session::{BrowserSession, LostCheck};
pub use steel::{
    STEEL_CLOUD_URL, SteelBackend, SteelFlavor, SteelProviderConfig, SteelSessionProvider,
};
