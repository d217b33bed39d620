//! The command-line adapters over the core.

pub mod render;
pub mod size;
