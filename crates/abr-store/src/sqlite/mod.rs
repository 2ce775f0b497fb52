//! [`SqliteStore`]: every store contract on one embedded SQLite file, the default with
//! nothing to install.

mod artifacts;
mod counters;
mod db;
mod events;
mod frames;
mod keys;
mod links;
mod profiles;
mod records;
mod retention;
mod screenshots;
mod sessions;
mod sites;

pub use db::SqliteStore;

crate::ledger::ledger_record_stores!(SqliteStore);
