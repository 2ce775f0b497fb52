//! Typed HTTP client for the ABR runner.
//!
//! Not built yet: this crate is filled by the runner issue. It depends on `abr-protocol`
//! only, never on a browser library or `abr-core`.
pub use abr_protocol as protocol;
