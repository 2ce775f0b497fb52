//! The hidden replica mode: this binary run as `abr` (`abr_service::cli::main_with`), every
//! provider of the runner wrapped in the chaos layer ([`ChaosProvider`]), one seed per role
//! (jobs, captures) derived from the replica's. The faults injected so far are written, as
//! JSON, to the injected file every second and once more when the runner stopped, so the
//! run can count them by kind. A replica whose parent (the run) is gone stops itself
//! (SIGTERM to itself, then exit): nothing a run starts outlives it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use abr_core::DynSessionProvider;
use abr_core::chaos::ChaosProvider;
use abr_providers::BrowserSession;
use abr_service::runner::ProviderLayer;

use crate::args::ReplicaArgs;

/// A chaos-wrapped provider of one role.
type Chaotic = Arc<ChaosProvider<DynSessionProvider<BrowserSession>>>;

/// The roles, in the order the runner hands its providers to the layer.
const ROLES: [&str; 2] = ["jobs", "captures"];

/// What a replica injected so far, by role, then by fault name.
pub(crate) type Injected = BTreeMap<String, BTreeMap<String, u64>>;

/// Runs the replica; its exit code is `abr`'s.
pub(crate) fn run(args: ReplicaArgs) -> ExitCode {
    let wrapped: Arc<Mutex<Vec<(&'static str, Chaotic)>>> = Arc::default();
    let layer = chaos_layer(&args, Arc::clone(&wrapped));
    let file = args.injected_file.clone();
    let writer = Arc::clone(&wrapped);
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_secs(1));
            write_injected(&file, &writer);
        }
    });
    watch_parent();
    let mut abr: Vec<OsString> = vec!["abr".into()];
    abr.extend(args.abr);
    let code = abr_service::cli::main_with(abr, layer);
    write_injected(&args.injected_file, &wrapped);
    code
}

/// The layer: each provider the runner would use, wrapped, with the role's own seed.
fn chaos_layer(
    args: &ReplicaArgs,
    wrapped: Arc<Mutex<Vec<(&'static str, Chaotic)>>>,
) -> ProviderLayer {
    let rates = args.chaos_rates.clone();
    let seed = args.chaos_seed;
    Arc::new(move |provider: DynSessionProvider<BrowserSession>| {
        let mut wrapped = wrapped.lock().unwrap_or_else(PoisonError::into_inner);
        let role = wrapped.len();
        let name = ROLES.get(role).copied().unwrap_or("other");
        let chaos = Arc::new(ChaosProvider::new(
            provider,
            rates.config(derive_seed(seed, role as u64 + 1)),
        ));
        wrapped.push((name, Arc::clone(&chaos)));
        chaos as DynSessionProvider<BrowserSession>
    })
}

/// A seed of its own for stream `stream` of `seed` (splitmix64's finaliser).
pub(crate) fn derive_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Writes what was injected so far (a whole file, renamed into place: the run never reads
/// half of one). Best effort: the next second writes it again.
fn write_injected(path: &Path, wrapped: &Mutex<Vec<(&'static str, Chaotic)>>) {
    let mut injected = Injected::new();
    for (role, chaos) in wrapped
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
    {
        let counts = injected.entry((*role).to_owned()).or_default();
        for (fault, n) in chaos.injected() {
            *counts.entry(fault.name().to_owned()).or_default() += n;
        }
    }
    let Ok(json) = serde_json::to_vec(&injected) else {
        return;
    };
    let partial = path.with_extension("partial");
    if std::fs::write(&partial, json).is_ok() {
        let _ = std::fs::rename(&partial, path);
    }
}

/// Stops this replica when its parent is gone (the run was killed without its teardown):
/// SIGTERM to itself (a graceful stop closes its browsers), and an exit 20 s later if that
/// did not end it.
fn watch_parent() {
    let parent = std::os::unix::process::parent_id();
    std::thread::spawn(move || {
        while std::os::unix::process::parent_id() == parent {
            std::thread::sleep(Duration::from_secs(1));
        }
        let _ = Command::new("kill")
            .args(["-TERM", &std::process::id().to_string()])
            .stderr(Stdio::null())
            .status();
        std::thread::sleep(Duration::from_secs(20));
        std::process::exit(1);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_seeds_differ_by_stream_and_repeat() {
        assert_eq!(derive_seed(1, 1), derive_seed(1, 1));
        assert_ne!(derive_seed(1, 1), derive_seed(1, 2));
        assert_ne!(derive_seed(1, 1), derive_seed(2, 1));
    }
}
