//! What the runner keeps as an artifact: a file's name checked, its type sniffed from its
//! bytes, its size and the tenant's quota capped ([`ArtifactRules`]); the result is an
//! [`ArtifactInfo`] to store next to the (sealed) bytes.

use abr_protocol::{ArtifactInfo, ArtifactOrigin};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

/// How much one tenant may keep: files and bytes. Checked by the store with the write, so
/// that concurrent uploads cannot pass it together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArtifactQuota {
    /// Most files.
    pub max_count: u64,
    /// Most bytes, all files together.
    pub max_bytes: u64,
}

/// Longest file name, in bytes.
pub const MAX_NAME: usize = 200;

/// The id prefix of an artifact.
pub const ID_PREFIX: &str = "art_";

/// The types kept by default: documents and pictures a form takes (PDF, images, plain text
/// and CSV, office documents, ZIP archives). Never a program or a script: `text/html`,
/// `image/svg+xml` (both run scripts when opened) and executables are not sniffable as
/// these.
pub const DEFAULT_TYPES: &[&str] = &[
    "application/pdf",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "text/plain",
    "application/zip",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "application/vnd.oasis.opendocument.text",
    "application/vnd.oasis.opendocument.spreadsheet",
];

/// What may be kept: one file's size, the types, and a tenant's quota.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactRules {
    /// Most bytes of one file.
    pub max_bytes: u64,
    /// The media types kept (sniffed).
    pub types: Vec<String>,
    /// What one tenant may hold.
    pub quota: ArtifactQuota,
    /// Most files one run's pages may download and keep.
    pub run_max_count: usize,
}

impl Default for ArtifactRules {
    /// 10 MiB a file; [`DEFAULT_TYPES`]; 100 files and 100 MiB a tenant; 10 downloads a
    /// run.
    fn default() -> Self {
        Self {
            max_bytes: 10 * 1024 * 1024,
            types: DEFAULT_TYPES.iter().map(|t| (*t).to_owned()).collect(),
            quota: ArtifactQuota {
                max_count: 100,
                max_bytes: 100 * 1024 * 1024,
            },
            run_max_count: 10,
        }
    }
}

/// Why a file is not kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArtifactRefused {
    /// The name is empty, too long, a path, or has control characters.
    #[error(
        "the file name must be 1 to {MAX_NAME} bytes, without `/`, `\\`, control characters, \
         and not `.` or `..`"
    )]
    Name,
    /// The file is empty.
    #[error("the file is empty")]
    Empty,
    /// The file is over the size cap.
    #[error("the file is {size} bytes, over the cap of {max} bytes")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The cap.
        max: u64,
    },
    /// The sniffed type is not kept.
    #[error("the file's type, sniffed from its bytes, is {media_type}: not one this runner keeps")]
    Type {
        /// The sniffed type.
        media_type: String,
    },
}

/// A file name as a page's file input gets it: trimmed, and refused when it is empty, over
/// [`MAX_NAME`] bytes, a path (`/`, `\`), `.` or `..`, or has a control character.
///
/// # Errors
/// [`ArtifactRefused::Name`].
pub fn checked_name(name: &str) -> Result<String, ArtifactRefused> {
    let name = name.trim();
    let bad = name.is_empty()
        || name.len() > MAX_NAME
        || name == "."
        || name == ".."
        || name
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_control());
    if bad {
        Err(ArtifactRefused::Name)
    } else {
        Ok(name.to_owned())
    }
}

/// The type of `bytes`, from their first bytes: a known signature's type, `text/plain` for
/// UTF-8 text without NUL, `application/octet-stream` otherwise. The uploader's word
/// (`Content-Type`, the name's extension) is not taken.
pub fn sniff(bytes: &[u8]) -> &'static str {
    if let Some(kind) = infer::get(bytes) {
        return kind.mime_type();
    }
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => {
            let head = text.trim_start().get(..64).unwrap_or(text.trim_start());
            let head = head.to_ascii_lowercase();
            // Markup runs scripts when opened: never "plain text".
            if head.starts_with("<!doctype html")
                || head.starts_with("<html")
                || head.starts_with("<svg")
                || head.starts_with("<?xml")
            {
                "text/html"
            } else {
                "text/plain"
            }
        }
        _ => "application/octet-stream",
    }
}

/// The lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    crate::digest::hex(&Sha256::digest(bytes))
}

/// The artifact `bytes` named `name` make under `rules`, with `id`, kept at `now`.
///
/// # Errors
/// Why it is not kept: its name, emptiness, size or sniffed type. (The tenant's quota is the
/// store's to check, with the write.)
pub fn describe(
    id: String,
    name: &str,
    bytes: &[u8],
    origin: ArtifactOrigin,
    rules: &ArtifactRules,
    now: OffsetDateTime,
) -> Result<ArtifactInfo, ArtifactRefused> {
    let name = checked_name(name)?;
    let size = bytes.len() as u64;
    if size == 0 {
        return Err(ArtifactRefused::Empty);
    }
    if size > rules.max_bytes {
        return Err(ArtifactRefused::TooLarge {
            size,
            max: rules.max_bytes,
        });
    }
    let media_type = sniff(bytes);
    if !rules.types.iter().any(|t| t == media_type) {
        return Err(ArtifactRefused::Type {
            media_type: media_type.to_owned(),
        });
    }
    Ok(ArtifactInfo {
        id,
        name,
        media_type: media_type.to_owned(),
        size,
        sha256: sha256_hex(bytes),
        origin,
        run_id: None,
        created_at: now,
    })
}

/// Whether `id` is shaped like an artifact's id (`art_` and 1 to 64 of `A-Za-z0-9-_`).
pub fn is_artifact_id(id: &str) -> bool {
    id.strip_prefix(ID_PREFIX).is_some_and(|rest| {
        (1..=64).contains(&rest.len())
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PDF: &[u8] = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n";

    fn rules() -> ArtifactRules {
        ArtifactRules::default()
    }

    #[test]
    fn a_pdf_is_described_by_its_bytes_not_its_name() {
        let info = describe(
            "art_x".into(),
            " invoice.txt ",
            PDF,
            ArtifactOrigin::Upload,
            &rules(),
            OffsetDateTime::UNIX_EPOCH,
        )
        .unwrap();
        assert_eq!(info.media_type, "application/pdf");
        assert_eq!(info.name, "invoice.txt");
        assert_eq!(info.size, PDF.len() as u64);
        assert_eq!(info.sha256, sha256_hex(PDF));
        assert_eq!(info.sha256.len(), 64);
    }

    #[test]
    fn programs_and_markup_are_refused_whatever_they_are_called() {
        let mut elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x02\0\x3e\0".to_vec();
        elf.resize(64, 0);
        for (bytes, sniffed) in [
            (&elf[..], "application/x-executable"),
            (
                b"<!DOCTYPE html><script>alert(1)</script>".as_slice(),
                "text/html",
            ),
            (b"  <svg onload=alert(1)>".as_slice(), "text/html"),
            (b"\x00\x01\x02binary".as_slice(), "application/octet-stream"),
        ] {
            let refused = describe(
                "art_x".into(),
                "photo.png",
                bytes,
                ArtifactOrigin::Upload,
                &rules(),
                OffsetDateTime::UNIX_EPOCH,
            );
            assert_eq!(
                refused,
                Err(ArtifactRefused::Type {
                    media_type: sniffed.to_owned()
                })
            );
        }
    }

    #[test]
    fn names_that_are_paths_or_empty_and_oversized_files_are_refused() {
        for name in [
            "",
            "  ",
            "../etc/passwd",
            "a\\b",
            ".",
            "..",
            "a\nb",
            &"x".repeat(201),
        ] {
            assert_eq!(checked_name(name), Err(ArtifactRefused::Name), "{name:?}");
        }
        let small = ArtifactRules {
            max_bytes: 8,
            ..rules()
        };
        let at = OffsetDateTime::UNIX_EPOCH;
        let origin = ArtifactOrigin::Upload;
        assert_eq!(
            describe("art_x".into(), "a.txt", b"123456789", origin, &small, at),
            Err(ArtifactRefused::TooLarge { size: 9, max: 8 })
        );
        assert_eq!(
            describe("art_x".into(), "a.txt", b"", origin, &small, at),
            Err(ArtifactRefused::Empty)
        );
        assert!(describe("art_x".into(), "a.txt", b"12345678", origin, &small, at).is_ok());
    }

    #[test]
    fn ids_are_checked_by_shape() {
        assert!(is_artifact_id("art_abc-_09"));
        for bad in [
            "art_",
            "abc",
            "art_a/b",
            "art_a b",
            &format!("art_{}", "a".repeat(65)),
        ] {
            assert!(!is_artifact_id(bad), "{bad}");
        }
    }
}
