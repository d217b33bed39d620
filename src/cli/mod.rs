//! The command-line adapters over the core.

mod input_file;
pub mod render;
pub mod size;
pub(crate) mod whole_number;
