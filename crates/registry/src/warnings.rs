//! Warnings collected while serving a request (deduplicated, as kube-apiserver does). The
//! HTTP layer sends them back as `Warning: 299 - "<text>"` headers with whatever response
//! the request gets, an error's too.

use std::sync::{Arc, Mutex};

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

    /// The collected warnings, in the order they were first pushed.
    pub fn texts(&self) -> Vec<String> {
        self.0.lock().map(|w| w.clone()).unwrap_or_default()
    }
}
