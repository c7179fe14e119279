//! Test support for storage backends (the `testing` feature): the backend-independent
//! conformance suite every [`crate::Storage`] must pass.

#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod conformance;
