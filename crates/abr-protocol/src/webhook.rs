//! The events webhook's signature: every delivery carries
//! `abr-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>` and an
//! `abr-delivery` id. A receiver checks it with [`verify`]: the MAC over the exact body
//! (compared in constant time) and the timestamp within a tolerance, so a delivery captured
//! and replayed later is refused; the delivery id lets it drop a retry it already took.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// The header carrying the signature.
pub const SIGNATURE_HEADER: &str = "abr-signature";
/// The header carrying the delivery's id (the same on every retry of one delivery).
pub const DELIVERY_HEADER: &str = "abr-delivery";
/// How far a delivery's timestamp may be from the receiver's clock by default (5 minutes).
pub const DEFAULT_TOLERANCE_SECS: i64 = 300;

/// Why a delivery is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookRejected {
    /// The header is missing or not `t=…,v1=…`.
    Malformed,
    /// The MAC does not match the body.
    BadSignature,
    /// The timestamp is outside the tolerance: a replay, or a clock far off.
    Stale,
}

impl std::fmt::Display for WebhookRejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Malformed => "the signature header is missing or malformed",
            Self::BadSignature => "the signature does not match the body",
            Self::Stale => "the delivery's timestamp is outside the tolerance (a replay?)",
        })
    }
}

impl std::error::Error for WebhookRejected {}

/// The `abr-signature` value of `body` sent at `timestamp` (unix seconds).
pub fn sign(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},v1={}", hex(&mac(secret, timestamp, body)))
}

/// Checks a delivery: `header` (the `abr-signature` value) over `body`, at `now` (unix
/// seconds), within `tolerance_secs`.
///
/// # Errors
/// [`WebhookRejected`].
pub fn verify(
    secret: &[u8],
    header: &str,
    body: &[u8],
    now: i64,
    tolerance_secs: i64,
) -> Result<(), WebhookRejected> {
    let mut timestamp = None;
    let mut signature = None;
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", v)) => signature = Some(v),
            _ => {}
        }
    }
    let (Some(timestamp), Some(signature)) = (timestamp, signature) else {
        return Err(WebhookRejected::Malformed);
    };
    let expected = hex(&mac(secret, timestamp, body));
    if !bool::from(expected.as_bytes().ct_eq(signature.as_bytes())) {
        return Err(WebhookRejected::BadSignature);
    }
    if now.abs_diff(timestamp) > tolerance_secs.unsigned_abs() {
        return Err(WebhookRejected::Stale);
    }
    Ok(())
}

fn mac(secret: &[u8], timestamp: i64, body: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length: `new_from_slice` cannot fail for it.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return Vec::new();
    };
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_verifies_and_a_changed_body_a_wrong_secret_or_a_replay_does_not() {
        let secret = b"a-webhook-secret-of-32-bytes-min";
        let body = br#"{"event":"approval_required","taskId":"task_1"}"#;
        let header = sign(secret, 1_000, body);
        assert!(header.starts_with("t=1000,v1="), "{header}");
        assert_eq!(verify(secret, &header, body, 1_010, 300), Ok(()));
        assert_eq!(
            verify(secret, &header, br#"{"event":"run_ended"}"#, 1_010, 300),
            Err(WebhookRejected::BadSignature)
        );
        assert_eq!(
            verify(b"another-secret", &header, body, 1_010, 300),
            Err(WebhookRejected::BadSignature)
        );
        assert_eq!(
            verify(secret, &header, body, 1_000 + 301, 300),
            Err(WebhookRejected::Stale),
            "replayed after the tolerance"
        );
        // Moving the timestamp forward breaks the MAC.
        let moved = header.replace("t=1000", "t=1301");
        assert_eq!(
            verify(secret, &moved, body, 1_301, 300),
            Err(WebhookRejected::BadSignature)
        );
        assert_eq!(
            verify(secret, "v1=abc", body, 1_000, 300),
            Err(WebhookRejected::Malformed)
        );
    }

    /// Fuzz target (bolero; `cargo test fuzz_`): any header over any body is answered,
    /// never a panic; a signed body verifies; any one byte of it changed, or a header with
    /// another timestamp, does not.
    #[test]
    fn fuzz_webhook_signatures() {
        bolero::check!()
            .with_type::<(Vec<u8>, String, Vec<u8>, i64, i64, u16)>()
            .for_each(|(secret, header, body, now, tolerance, flip)| {
                let _ = verify(secret, header, body, *now, *tolerance);
                let timestamp = now.saturating_sub(i64::from(*flip % 60));
                let signed = sign(secret, timestamp, body);
                assert_eq!(verify(secret, &signed, body, *now, 300), Ok(()));
                if !body.is_empty() {
                    let mut changed = body.clone();
                    let at = usize::from(*flip) % changed.len();
                    changed[at] ^= 0x01;
                    assert_eq!(
                        verify(secret, &signed, &changed, *now, 300),
                        Err(WebhookRejected::BadSignature)
                    );
                }
                let other = sign(secret, timestamp.wrapping_add(1), body);
                let spliced = format!(
                    "t={timestamp},{}",
                    other.split_once(',').map_or("", |(_, v)| v)
                );
                assert_eq!(
                    verify(secret, &spliced, body, *now, 300),
                    Err(WebhookRejected::BadSignature)
                );
            });
    }
}
