//! Helpers shared by the integration tests. Each test crate uses a part of
//! them, so unused items are expected.
#![allow(dead_code)]

pub mod schema;
