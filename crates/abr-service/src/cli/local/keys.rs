//! The keys of a foreground `abr up` in a terminal: `q` drains and stops it (as Ctrl-C),
//! `l` hides or shows its log lines. Only when its standard input is a terminal: never in
//! the background, in a service, or with input from a pipe. The terminal's line mode and
//! echo are off while it runs, and restored when it stops.

use std::io::{IsTerminal as _, Read as _};

use rustix::termios::{LocalModes, OptionalActions, Termios, tcgetattr, tcsetattr};
use tokio::sync::watch;

use crate::relay::link::Shutdown;

/// The terminal's settings before, put back when dropped.
pub(crate) struct Keys {
    before: Termios,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys").finish_non_exhaustive()
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &self.before);
    }
}

/// What a key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Stop,
    ToggleLog,
}

fn key(byte: u8) -> Option<Key> {
    match byte {
        b'q' | b'Q' => Some(Key::Stop),
        b'l' | b'L' => Some(Key::ToggleLog),
        _ => None,
    }
}

/// Reads the keys on a thread of its own when standard input is a terminal: `q` asks
/// `shutdown` to drain. `None` (nothing read) otherwise.
pub(crate) fn watch(shutdown: watch::Sender<Shutdown>) -> Option<Keys> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return None;
    }
    let before = tcgetattr(&stdin).ok()?;
    let mut keys_mode = before.clone();
    keys_mode
        .local_modes
        .remove(LocalModes::ICANON | LocalModes::ECHO);
    tcsetattr(&stdin, OptionalActions::Now, &keys_mode).ok()?;
    let spawned = std::thread::Builder::new()
        .name("abr-keys".to_owned())
        .spawn(move || {
            let mut byte = [0u8; 1];
            while let Ok(1) = std::io::stdin().read(&mut byte) {
                match key(byte[0]) {
                    Some(Key::Stop) => {
                        eprintln!("abr: q: draining, then stopping (Ctrl-C again stops at once)");
                        shutdown.send_if_modified(|s| s.advance(Shutdown::Drain));
                    }
                    Some(Key::ToggleLog) => {
                        let shown = crate::logging::toggle_terminal_log();
                        eprintln!(
                            "abr: log lines {} (l {} them)",
                            if shown { "shown" } else { "hidden" },
                            if shown { "hides" } else { "shows" }
                        );
                    }
                    None => {}
                }
            }
        });
    match spawned {
        Ok(_) => {
            eprintln!("abr: keys: q stops (draining first), l hides or shows the log");
            Some(Keys { before })
        }
        Err(_) => {
            let _ = tcsetattr(&stdin, OptionalActions::Now, &before);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_stops_l_toggles_and_every_other_key_is_nothing() {
        assert_eq!(key(b'q'), Some(Key::Stop));
        assert_eq!(key(b'Q'), Some(Key::Stop));
        assert_eq!(key(b'l'), Some(Key::ToggleLog));
        for other in [b'x', b'\n', 0x03, b' ', 0xff] {
            assert_eq!(key(other), None, "{other}");
        }
    }
}
