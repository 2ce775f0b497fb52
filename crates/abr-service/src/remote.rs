//! Building the remote providers (Steel, Kernel) from the runner configuration.

use std::sync::Arc;
use std::time::Duration;

use abr_core::DynSessionProvider;
use abr_providers::{
    BrowserSession, KernelProviderConfig, KernelSessionProvider, SteelFlavor, SteelProviderConfig,
    SteelSessionProvider,
};
use secrecy::ExposeSecret;

use crate::config::RunnerConfig;

/// Steel: Steel Cloud when an API key is set, else self-hosted (serialized: it holds one
/// session at a time).
pub(crate) fn steel(config: &RunnerConfig) -> DynSessionProvider<BrowserSession> {
    let base = config
        .steel_url
        .as_ref()
        .map(|u| u.as_str().trim_end_matches('/').to_owned());
    match &config.steel_api_key {
        Some(key) => {
            let mut steel = SteelProviderConfig::cloud(key.expose_secret().to_owned());
            if let Some(base) = base {
                steel.base_url = base;
            }
            steel.egress = Some(config.egress.clone());
            debug_assert_eq!(steel.flavor, SteelFlavor::Cloud);
            Arc::new(SteelSessionProvider::new(steel))
        }
        None => {
            let mut steel =
                SteelProviderConfig::oss(base.unwrap_or_else(|| "http://127.0.0.1:3000".into()));
            steel.egress = Some(config.egress.clone());
            Arc::new(SteelSessionProvider::oss_serialized(
                steel,
                config.limits.request_timeout / 2,
            ))
        }
    }
}

/// Kernel (a browser per lease).
pub(crate) fn kernel(config: &RunnerConfig) -> DynSessionProvider<BrowserSession> {
    let key = config
        .kernel_api_key
        .as_ref()
        .map(|k| k.expose_secret().to_owned())
        .unwrap_or_default();
    let mut kernel = KernelProviderConfig::new(key);
    if let Some(url) = &config.kernel_url {
        kernel.base_url = url.as_str().trim_end_matches('/').to_owned();
    }
    kernel.rest_timeout = kernel.rest_timeout.min(Duration::from_secs(60));
    kernel.egress = Some(config.egress.clone());
    Arc::new(KernelSessionProvider::new(kernel))
}
