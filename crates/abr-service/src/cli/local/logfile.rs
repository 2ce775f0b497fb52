//! The background runner's log: rotated at start (over [`ROTATE_AT`] it becomes `.1`, the
//! one old file kept), read from its end, followed.

use std::fs::{File, OpenOptions};
use std::io::{self, Read as _, Seek as _, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::LocalError;

/// A log larger than this is moved to `.1` at the next start.
pub(crate) const ROTATE_AT: u64 = 5 * 1024 * 1024;

/// The rotated file of `log`: `<log>.1`.
pub(crate) fn rotated(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".1");
    PathBuf::from(name)
}

/// Moves `log` to `<log>.1` (replacing an older one) when it is larger than `limit`:
/// whether it did.
///
/// # Errors
/// [`LocalError::Io`] when the log exists but cannot be inspected or moved.
pub(crate) fn rotate_if_larger(log: &Path, limit: u64) -> Result<bool, LocalError> {
    let size = match std::fs::metadata(log) {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(LocalError::io("inspect", log, e)),
    };
    if size <= limit {
        return Ok(false);
    }
    std::fs::rename(log, rotated(log)).map_err(|e| LocalError::io("rotate", log, e))?;
    Ok(true)
}

/// Opens `log` for appending (created mode 0600).
///
/// # Errors
/// [`LocalError::Io`] when it cannot be opened.
pub(crate) fn open_for_append(log: &Path) -> Result<File, LocalError> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(log)
        .map_err(|e| LocalError::io("open", log, e))
}

/// The last `n` lines of `file` (a last line without a newline counts), read from its end
/// in blocks: the whole file is never loaded.
///
/// # Errors
/// The I/O error of reading it.
pub(crate) fn tail(file: &mut File, n: usize) -> io::Result<Vec<u8>> {
    const BLOCK: u64 = 64 * 1024;
    let len = file.seek(SeekFrom::End(0))?;
    if n == 0 || len == 0 {
        return Ok(Vec::new());
    }
    let mut start = len;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let read_from = start.saturating_sub(BLOCK);
        let mut block = vec![0; usize::try_from(start - read_from).unwrap_or(0)];
        file.seek(SeekFrom::Start(read_from))?;
        file.read_exact(&mut block)?;
        block.extend_from_slice(&buf);
        buf = block;
        start = read_from;
        // Newlines that end a line: a final newline ends the last line, not a new one.
        let body = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let newlines = body.iter().filter(|&&b| b == b'\n').count();
        if newlines >= n || start == 0 {
            let cut = body
                .iter()
                .enumerate()
                .rev()
                .filter(|&(_, &b)| b == b'\n')
                .nth(n - 1)
                .map_or(0, |(i, _)| i + 1);
            return Ok(buf.split_off(cut));
        }
    }
}

/// The last `n` lines of the log at `path`.
///
/// # Errors
/// [`LocalError::Io`] when it cannot be read (it does not exist, say).
pub(crate) fn tail_of(path: &Path, n: usize) -> Result<Vec<u8>, LocalError> {
    let mut file = File::open(path).map_err(|e| LocalError::io("read", path, e))?;
    tail(&mut file, n).map_err(|e| LocalError::io("read", path, e))
}

/// Copies what is appended to the log at `path` after `from` to `out`, forever (until
/// writing fails or the process is stopped); a log rotated or truncated under it is
/// followed from the new file's start.
///
/// # Errors
/// Writing to `out` failed (a closed pipe, say), or the log cannot be read.
pub(crate) fn follow(path: &Path, from: u64, out: &mut dyn Write) -> Result<(), FollowError> {
    const POLL: Duration = Duration::from_millis(250);
    let read = |e| FollowError::Read(LocalError::io("read", path, e));
    let mut file = File::open(path).map_err(read)?;
    let mut inode = file.metadata().map_err(read)?.ino();
    let mut pos = from;
    let mut chunk = vec![0; 64 * 1024];
    loop {
        file.seek(SeekFrom::Start(pos)).map_err(read)?;
        let n = file.read(&mut chunk).map_err(read)?;
        if n > 0 {
            out.write_all(&chunk[..n]).map_err(FollowError::Write)?;
            out.flush().map_err(FollowError::Write)?;
            pos += n as u64;
            continue;
        }
        std::thread::sleep(POLL);
        // Rotated (a new file at the path) or truncated: start over on the current file.
        match std::fs::metadata(path) {
            Ok(meta) if meta.ino() != inode || meta.len() < pos => {
                file = File::open(path).map_err(read)?;
                inode = meta.ino();
                pos = 0;
            }
            _ => {}
        }
    }
}

/// Why following a log ended.
#[derive(Debug)]
pub(crate) enum FollowError {
    /// The log could not be read.
    Read(LocalError),
    /// The output could not be written.
    Write(io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail_str(text: &str, n: usize) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, text).unwrap();
        String::from_utf8(tail_of(&path, n).unwrap()).unwrap()
    }

    #[test]
    fn tail_gives_the_last_lines() {
        assert_eq!(tail_str("a\nb\nc\n", 2), "b\nc\n");
        assert_eq!(tail_str("a\nb\nc", 2), "b\nc");
        assert_eq!(tail_str("a\nb\n", 5), "a\nb\n");
        assert_eq!(tail_str("a\nb\n", 0), "");
        assert_eq!(tail_str("", 3), "");
        assert_eq!(tail_str("\n\n\n", 2), "\n\n");
    }

    #[test]
    fn tail_reads_across_blocks() {
        let lines: Vec<String> = (0..20_000).map(|i| format!("line {i:05}")).collect();
        let text = lines.join("\n") + "\n";
        let expected = lines[19_990..].join("\n") + "\n";
        assert_eq!(tail_str(&text, 10), expected);
        assert_eq!(tail_str(&text, 20_000), text);
    }

    #[test]
    fn a_log_over_the_limit_is_rotated_once_keeping_one_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("runner-local.log");
        assert!(!rotate_if_larger(&log, 10).unwrap(), "no log yet");
        std::fs::write(&log, b"0123456789").unwrap();
        assert!(!rotate_if_larger(&log, 10).unwrap(), "at the limit");
        std::fs::write(&log, b"0123456789A").unwrap();
        assert!(rotate_if_larger(&log, 10).unwrap());
        assert!(!log.exists());
        assert_eq!(std::fs::read(rotated(&log)).unwrap(), b"0123456789A");
        std::fs::write(&log, b"second generation").unwrap();
        assert!(rotate_if_larger(&log, 10).unwrap());
        assert_eq!(std::fs::read(rotated(&log)).unwrap(), b"second generation");
        assert_eq!(rotated(&log), dir.path().join("runner-local.log.1"));
    }
}
