//! Test support for storage backends (the `testing` feature): the backend-independent
//! conformance suite every [`crate::Storage`] must pass, and a throwaway PostgreSQL server
//! ([`postgres`]) for the tests of the PostgreSQL backend.

#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod conformance;
pub mod postgres;
