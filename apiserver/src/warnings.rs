//! Warnings collected while serving a request, sent back as `Warning: 299 - "<text>"`
//! headers (deduplicated, as kube-apiserver does).

use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, HeaderValue};

/// A request's warnings; cheap to clone and share with the registry.
#[derive(Clone, Debug, Default)]
pub struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    pub fn push(&self, text: impl Into<String>) {
        let text = text.into();
        if let Ok(mut w) = self.0.lock() {
            if !w.contains(&text) {
                w.push(text);
            }
        }
    }

    /// Adds the collected warnings to response headers.
    pub fn apply(&self, headers: &mut HeaderMap) {
        let Ok(w) = self.0.lock() else { return };
        for text in w.iter() {
            let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
            if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
                headers.append("warning", v);
            }
        }
    }
}
