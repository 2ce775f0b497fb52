//! Small helpers shared by the doubles: ids, tokens, timestamps, locks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;

/// Locks a std mutex, ignoring poisoning (a panicking test must not cascade).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

static FALLBACK: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);

/// Random bytes from the OS; falls back to a time-seeded SplitMix64 if the OS source fails
/// (ids of a test double need uniqueness, not secrecy).
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    if getrandom::fill(&mut buf).is_ok() {
        return buf;
    }
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    for chunk in buf.chunks_mut(8) {
        let mut z = FALLBACK
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(nanos);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let bytes = z.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    buf
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// A random RFC 4122 version-4 UUID in lowercase hyphenated form.
pub(crate) fn uuid_v4() -> String {
    let mut b = random_bytes::<16>();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Whether `s` matches Ajv's `uuid` format (optionally `urn:uuid:`-prefixed, any case).
pub(crate) fn is_uuid(s: &str) -> bool {
    let s = s.strip_prefix("urn:uuid:").unwrap_or(s);
    let groups: Vec<&str> = s.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    groups.len() == lens.len()
        && groups
            .iter()
            .zip(lens)
            .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// A random string of `len` lowercase alphanumeric characters (Kernel-style ids).
pub(crate) fn alnum_id(len: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = String::with_capacity(len);
    while out.len() < len {
        for b in random_bytes::<32>() {
            if out.len() == len {
                break;
            }
            out.push(char::from(ALPHABET[usize::from(b) % ALPHABET.len()]));
        }
    }
    out
}

/// A random lowercase hex token of `2 * N` characters.
pub(crate) fn hex_token<const N: usize>() -> String {
    hex(&random_bytes::<N>())
}

/// JavaScript `Date.prototype.toISOString()` style: millisecond precision, `Z` suffix.
pub(crate) fn iso_millis(t: OffsetDateTime) -> String {
    let fmt =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    t.to_offset(time::UtcOffset::UTC)
        .format(&fmt)
        .unwrap_or_default()
}

/// RFC 3339 timestamp (Kernel style).
pub(crate) fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_default()
}

/// Milliseconds elapsed since `t` (saturating at zero).
pub(crate) fn millis_since(t: OffsetDateTime) -> u64 {
    let ms = (OffsetDateTime::now_utc() - t).whole_milliseconds();
    u64::try_from(ms).unwrap_or(0)
}

/// Escapes text for inclusion in HTML attribute values and text.
pub(crate) fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_roundtrip() {
        let u = uuid_v4();
        assert!(is_uuid(&u), "{u}");
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(!is_uuid("not-a-uuid"));
        assert!(!is_uuid("123e4567-e89b-12d3-a456-42661417400"));
        assert!(is_uuid("urn:uuid:123E4567-E89B-12D3-A456-426614174000"));
    }

    #[test]
    fn alnum_ids() {
        let id = alnum_id(24);
        assert_eq!(id.len(), 24);
        assert!(
            id.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        );
        assert_ne!(alnum_id(24), id);
    }

    #[test]
    fn timestamps() {
        let t = OffsetDateTime::UNIX_EPOCH;
        assert_eq!(iso_millis(t), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(t), "1970-01-01T00:00:00Z");
    }
}
