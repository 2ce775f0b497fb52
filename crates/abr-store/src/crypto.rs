//! Sessions at rest: XChaCha20-Poly1305 with a 32-byte key from the environment
//! (`ABR_SESSION_KEY`, 64 hex characters) and a random 192-bit nonce per write. The
//! associated data binds a ciphertext to its row, so a row copied onto another key does
//! not decrypt.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use secrecy::{ExposeSecret, SecretBox};

use crate::StoreError;

/// Length of a nonce.
const NONCE_LEN: usize = 24;

/// The key sessions are encrypted with.
pub struct SealingKey(SecretBox<[u8; 32]>);

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealingKey(<redacted>)")
    }
}

impl SealingKey {
    /// Parses 64 hex characters (32 bytes).
    ///
    /// # Errors
    /// [`StoreError::InvalidKey`] for anything else (the value is never echoed).
    pub fn from_hex(hex: &str) -> Result<Self, StoreError> {
        let hex = hex.trim();
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(StoreError::InvalidKey);
        }
        let mut key = Box::new([0u8; 32]);
        for (i, byte) in key.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
                .map_err(|_| StoreError::InvalidKey)?;
        }
        Ok(Self(SecretBox::new(key)))
    }

    /// A key from 32 raw bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(SecretBox::new(Box::new(bytes)))
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(self.0.expose_secret().into())
    }

    /// `nonce || ciphertext` of `plaintext`, bound to `aad`.
    pub(crate) fn seal(&self, plaintext: &[u8], aad: &[u8]) -> Result<Vec<u8>, StoreError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|_| StoreError::Crypto)?;
        let sealed = self
            .cipher()
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: plaintext,
                    aad,
                },
            )
            .map_err(|_| StoreError::Crypto)?;
        let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// The plaintext of `sealed` (from [`SealingKey::seal`] with the same `aad`).
    pub(crate) fn open(&self, sealed: &[u8], aad: &[u8]) -> Result<Vec<u8>, StoreError> {
        if sealed.len() < NONCE_LEN {
            return Err(StoreError::Crypto);
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| StoreError::Crypto)?;
        self.cipher()
            .decrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: ciphertext,
                    aad,
                },
            )
            .map_err(|_| StoreError::Crypto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_with_their_key_and_row() {
        let key = SealingKey::from_bytes([7; 32]);
        let sealed = key.seal(b"cookie=secret", b"row-1").unwrap_or_default();
        assert!(!sealed.windows(6).any(|w| w == b"secret"), "not plaintext");
        assert_eq!(
            key.open(&sealed, b"row-1").ok().as_deref(),
            Some(&b"cookie=secret"[..])
        );
        assert!(key.open(&sealed, b"row-2").is_err(), "another row");
        assert!(
            SealingKey::from_bytes([8; 32])
                .open(&sealed, b"row-1")
                .is_err(),
            "another key"
        );
        let mut tampered = sealed.clone();
        if let Some(last) = tampered.last_mut() {
            *last ^= 1;
        }
        assert!(key.open(&tampered, b"row-1").is_err(), "tampered");
        let again = key.seal(b"cookie=secret", b"row-1").unwrap_or_default();
        assert_ne!(sealed, again, "a fresh nonce per write");
    }

    #[test]
    fn keys_parse_from_64_hex_characters_only() {
        assert!(SealingKey::from_hex(&"ab".repeat(32)).is_ok());
        for bad in ["", "ab", &"zz".repeat(32), &"ab".repeat(33)] {
            let e = SealingKey::from_hex(bad).unwrap_err();
            assert!(matches!(e, StoreError::InvalidKey));
            assert!(bad.is_empty() || !e.to_string().contains(bad));
        }
        assert!(!format!("{:?}", SealingKey::from_bytes([9; 32])).contains('9'));
    }
}
