//! Command-line commands, thin adapters over the library.

pub mod size;
