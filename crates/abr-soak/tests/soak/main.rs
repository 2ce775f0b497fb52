//! The soak as every test run has it: two minutes of the mixed load with the chaos layer on,
//! one runner and a relayed one, every check holding (`soak` exits 0). A seed of its own each
//! run, printed first: a failure is replayed with it (the faults and the mix, not the
//! timing): `cargo run --release -p abr-soak --bin soak -- --minutes 2 --seed S`.
//!
//! A test rather than a step after the tests: beside the others (one of the two browser
//! slots, started first), most of its time overlaps theirs (`.ci/run` on this machine:
//! 1,164 s instead of 1,300 s with the soak as a step after the tests).

#![allow(clippy::expect_used, reason = "test code")]

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

#[test]
fn two_minutes_of_mixed_load_under_the_chaos_layer_hold_every_check() {
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |now| now.as_secs() % 1_000_000);
    eprintln!("soak seed {seed}");
    let status = Command::new(env!("CARGO_BIN_EXE_soak"))
        .args(["--minutes", "2", "--request-timeout", "30", "--seed"])
        .arg(seed.to_string())
        .status()
        .expect("the soak binary runs");
    assert!(
        status.success(),
        "the soak (seed {seed}) failed: its report is above ({status})"
    );
}
