//! A Chromium process plus the double's own CDP connection to it.

use serde_json::{Value, json};

use crate::DoubleError;
use crate::cdp::CdpClient;
use crate::chromium::{ChromiumOptions, LocalChromium};

/// A browser owned by a double. The CDP connection must stay open for the browser's lifetime:
/// init scripts registered through it (web storage injection) live as long as it does.
#[derive(Debug)]
pub(crate) struct ManagedBrowser {
    pub(crate) chromium: LocalChromium,
    pub(crate) cdp: CdpClient,
    pub(crate) user_agent: String,
    pub(crate) product: String,
}

impl ManagedBrowser {
    /// Launches Chromium, connects CDP and reads the version (`Browser.getVersion`).
    pub(crate) async fn launch(opts: &ChromiumOptions) -> Result<Self, DoubleError> {
        let chromium = LocalChromium::launch(opts).await?;
        let cdp = CdpClient::connect(&chromium.browser_ws_url()).await?;
        let version = cdp.call("Browser.getVersion", json!({})).await?;
        let field = |k: &str| {
            version
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Ok(Self {
            user_agent: field("userAgent"),
            product: field("product"),
            chromium,
            cdp,
        })
    }

    /// Kills the process off the async executor and waits until it is gone.
    pub(crate) async fn terminate(self) {
        let Self { chromium, cdp, .. } = self;
        drop(cdp);
        let _ = tokio::task::spawn_blocking(move || drop(chromium)).await;
    }
}
