//! The [`Error`] of building OpenAPI documents.

use std::fmt;

/// Why documents could not be built.
#[derive(Debug)]
pub enum Error {
    /// A [`SchemaSource::BuiltIn`](crate::SchemaSource::BuiltIn) name that is not in
    /// [`builtin_definitions`](crate::builtin_definitions).
    UnknownDefinition { resource: String, name: String },
    /// A resource with an empty version, kind or plural, or an unusable group.
    InvalidResource { resource: String, reason: String },
    /// Two resources with the same group, version and plural.
    DuplicateResource(String),
    /// A custom schema that is not a JSON object.
    InvalidCustomSchema { resource: String, reason: String },
    /// Serializing a document failed.
    Serialize(serde_json::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownDefinition { resource, name } => {
                write!(
                    f,
                    "resource {resource}: unknown built-in definition {name:?}"
                )
            }
            Error::InvalidResource { resource, reason } => {
                write!(f, "resource {resource}: {reason}")
            }
            Error::DuplicateResource(resource) => write!(f, "resource {resource} is listed twice"),
            Error::InvalidCustomSchema { resource, reason } => {
                write!(f, "resource {resource}: invalid custom schema: {reason}")
            }
            Error::Serialize(e) => write!(f, "serializing an OpenAPI document: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Serialize(e) => Some(e),
            _ => None,
        }
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Serialize(e)
    }
}
