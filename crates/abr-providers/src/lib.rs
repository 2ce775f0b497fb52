//! Browser session providers for ABR (local Chromium, CDP attach, Steel, Kernel).
//!
//! Not built yet: this crate is filled by the providers issue. It will implement
//! `abr_core::SessionProvider` for each backend.
