//! Injectable time and randomness, so orchestration is deterministic in tests.

use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use time::OffsetDateTime;

/// Wall-clock time and sleeping.
#[async_trait]
pub trait Clock: Send + Sync + 'static {
    /// Now.
    fn now(&self) -> OffsetDateTime;
    /// Waits for `duration`.
    async fn sleep(&self, duration: Duration);
}

/// The system clock and tokio's timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

#[async_trait]
impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }

    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}

/// A source of random numbers for pacing (not for credentials: those always come from the
/// OS, see [`new_token`]).
pub trait RandomSource: Send + Sync + 'static {
    /// A uniformly distributed `u64`.
    fn next_u64(&self) -> u64;
}

/// Randomness from the operating system.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsRandom;

impl RandomSource for OsRandom {
    fn next_u64(&self) -> u64 {
        let mut bytes = [0u8; 8];
        // A failing OS RNG only makes pacing deterministic (zero jitter): harmless here.
        if getrandom::fill(&mut bytes).is_err() {
            tracing::warn!("OS random source failed; pacing jitter disabled");
        }
        u64::from_le_bytes(bytes)
    }
}

/// A new unguessable token: 256 bits from the OS CSPRNG, base64url without padding
/// (43 characters).
///
/// # Errors
/// When the OS random source fails; then no credential may be issued.
pub fn new_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_distinct_and_url_safe() {
        let a = new_token().unwrap();
        let b = new_token().unwrap();
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
    }
}
