//! Downloads a run keeps instead of refusing: what a provider catches below the page
//! ([`CaughtDownload`]) within [`DownloadLimits`]. The browser never writes them to disk: a
//! provider reads a download's bytes from the network, then aborts it.

/// How much a run's page may download.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DownloadLimits {
    /// Most bytes of one file: a larger one is refused unread (by its declared length) or
    /// dropped once read.
    pub max_bytes: u64,
    /// Most files a run: later ones are refused unread.
    pub max_count: usize,
}

/// Why a provider refused a download.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DownloadRefused {
    /// Over [`DownloadLimits::max_bytes`].
    TooLarge,
    /// Past [`DownloadLimits::max_count`].
    TooMany,
    /// Its body could not be read from the browser (the page went away meanwhile).
    Unread,
}

/// A file a page downloaded, caught from the network: its bytes, or why it was refused.
#[derive(Clone, PartialEq, Eq)]
pub struct CaughtDownload {
    /// The name the site gave it (`Content-Disposition`, else the URL's last part), as
    /// sent: the caller checks it.
    pub name: String,
    /// Its size (the bytes read, or the declared length of one refused unread).
    pub size: u64,
    /// Its bytes, or why there are none.
    pub bytes: Result<Vec<u8>, DownloadRefused>,
}

impl std::fmt::Debug for CaughtDownload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaughtDownload")
            .field("size", &self.size)
            .field("refused", &self.bytes.as_ref().err())
            .finish_non_exhaustive()
    }
}

/// Whether a document's response is a download rather than a page: it says `attachment`
/// (`Content-Disposition`), or its type is one a browser does not show as a page. A
/// response without a type is a page (the browser sniffs it).
pub fn is_download(content_disposition: Option<&str>, content_type: Option<&str>) -> bool {
    let attachment = content_disposition.is_some_and(|v| {
        v.trim_start()
            .get(..10)
            .is_some_and(|head| head.eq_ignore_ascii_case("attachment"))
    });
    if attachment {
        return true;
    }
    let Some(kind) = content_type
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .filter(|v| !v.is_empty())
    else {
        return false;
    };
    let shown = ["text/", "image/", "audio/", "video/", "multipart/"]
        .iter()
        .any(|prefix| kind.starts_with(prefix))
        || matches!(
            kind.as_str(),
            "application/xhtml+xml"
                | "application/xml"
                | "application/json"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/rss+xml"
                | "application/atom+xml"
                | "application/manifest+json"
        );
    !shown
}

/// The file name a download names: `filename*` (RFC 5987, UTF-8), else `filename` of its
/// `Content-Disposition`, else the URL path's last part; `download` when none is usable.
pub fn download_name(content_disposition: Option<&str>, url: &str) -> String {
    let from_header = content_disposition.and_then(|header| {
        let params: Vec<(String, String)> = header
            .split(';')
            .skip(1)
            .filter_map(|p| {
                let (k, v) = p.split_once('=')?;
                Some((k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            })
            .collect();
        let star = params
            .iter()
            .find(|(k, _)| k == "filename*")
            .and_then(|(_, v)| {
                let (charset, rest) = v.split_once('\'')?;
                let (_, encoded) = rest.split_once('\'')?;
                charset
                    .eq_ignore_ascii_case("utf-8")
                    .then(|| percent_decode(encoded))
                    .flatten()
            });
        star.or_else(|| {
            params
                .iter()
                .find(|(k, _)| k == "filename")
                .map(|(_, v)| v.trim_matches('"').to_owned())
        })
    });
    let from_url = || {
        let path = url.split(['?', '#']).next().unwrap_or_default();
        path.rsplit('/')
            .next()
            .and_then(percent_decode)
            .filter(|n| !n.is_empty())
    };
    let name = from_header.or_else(from_url).unwrap_or_default();
    // The last part of a path a site put in the name, never the path.
    let name = name.rsplit(['/', '\\']).next().unwrap_or_default().trim();
    crate::artifact::checked_name(name).unwrap_or_else(|_| "download".to_owned())
}

/// `text` with its `%XX` escapes decoded, if that is UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .ok()
        .map(std::borrow::Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_and_types_no_page_shows_are_downloads() {
        assert!(is_download(
            Some("attachment; filename=a.txt"),
            Some("text/plain")
        ));
        assert!(is_download(Some("Attachment"), None));
        assert!(is_download(None, Some("application/pdf")));
        assert!(is_download(None, Some("application/octet-stream; x=1")));
        assert!(!is_download(None, Some("text/html; charset=utf-8")));
        assert!(!is_download(Some("inline"), Some("image/png")));
        assert!(!is_download(None, Some("application/json")));
        assert!(!is_download(None, None));
    }

    #[test]
    fn names_come_from_the_header_then_the_url_and_are_never_paths() {
        let url = "https://site.example/files/inv%20oice.pdf?x=1";
        assert_eq!(
            download_name(Some("attachment; filename=\"a b.pdf\""), url),
            "a b.pdf"
        );
        assert_eq!(
            download_name(
                Some("attachment; filename=\"x.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf"),
                url
            ),
            "résumé.pdf"
        );
        assert_eq!(download_name(None, url), "inv oice.pdf");
        assert_eq!(
            download_name(Some("attachment; filename=\"../../etc/passwd\""), url),
            "passwd"
        );
        assert_eq!(download_name(None, "https://site.example/"), "download");
        assert_eq!(
            download_name(Some("attachment; filename=\"..\""), url),
            "download"
        );
    }
}
