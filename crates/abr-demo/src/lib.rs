//! ABR's demo platform.
//!
//! - [`site`]: a small local social site with a real sign-in (HttpOnly session cookie), a
//!   composer that uploads media at once like real sites, a feed, permalinks, a ground-truth
//!   API (`GET /api/posts`) and one-shot fault injection (`POST /__faults`), so every
//!   outcome row of a post can be produced on demand. Served by the `abr-demo-site` binary.
//!   It also serves pages for the guard rails: a corpus of controls marked with the commit
//!   guard's expected verdict (`/guard`, [`site::GUARD_CORPUS`]), one page per pause
//!   reason (`/pause/...`, [`site::PauseState`]), ordinary pages whose actions write
//!   (`/attack/...`, [`site::ATTACK_PAGES`]), a corpus of harmless controls (`/harmless`,
//!   [`site::HARMLESS_CORPUS`]) and pages a test registers ([`DemoSite::set_page`]). Every
//!   route sits behind a write ledger ([`DemoSite::ledger`]): each request with a method
//!   other than GET, HEAD or OPTIONS, and each WebSocket message, that reached the site.
//! - [`strategy`]: the `demo` [`WebPostStrategy`](abr_core::WebPostStrategy), which posts to
//!   the site through a real browser ([`BrowserSession`](abr_providers::BrowserSession)) and
//!   proves the outcome by toast or by read-back, telling the truth in every fault mode.

pub mod site;
pub mod strategy;

pub use site::{DemoSite, FaultMode, Post};
pub use strategy::{DemoStrategy, DemoStrategyError, DemoTimeouts};
