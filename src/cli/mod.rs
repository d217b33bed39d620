//! The command-line adapters over the core.

pub mod render;
