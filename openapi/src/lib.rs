//! OpenAPI v3 documents for kplane's `/openapi/v3` endpoints.
//!
//! [`OpenApiV3::build`] turns the resources a (logical) cluster serves into one OpenAPI 3.0
//! document per group-version (`api/v1`, `apis/batch/v1`, ...) plus the root index that
//! `GET /openapi/v3` returns. Schemas of built-in kinds are generated from the `k8s-openapi`
//! crate ([`builtin_definitions`]); custom resources bring their CRD structural schema
//! ([`SchemaSource::Custom`]); kplane's own kinds (the Workspace) are declared by hand in
//! [`kplane_kinds`] in the same shape as the generated ones. Documents are serialized
//! once, with sorted keys, and addressed by the uppercase hex SHA-512 of their bytes, as
//! kubectl caches them by that hash.

mod cache;
mod canonical;
mod catalog;
mod convert;
mod custom;
mod document;
mod error;
mod fixtures;
mod kind_schema;
pub mod kplane_kinds;
mod names;
mod paths;
mod served;
pub mod typed;
pub mod v2;
mod v3;

pub use catalog::builtin_definitions;
pub use error::Error;
pub use fixtures::{builtin_served_resources_for_tests, widget_for_tests};
pub use served::{group_version_path, SchemaSource, ServedResource, KUBERNETES_VERSION};
pub use v2::OpenApiV2;
pub use v3::OpenApiV3;
