//! Audit annotations that admission adds to a request (`admission.Attributes.AddAnnotation`):
//! a ValidatingAdmissionPolicy's `auditAnnotations` (`<policy>/<key>`) and its failures under
//! the `Audit` action (`validation.policy.admission.k8s.io/validation_failure`), an
//! admission webhook's `auditAnnotations` (`<webhook>/<key>`), and what each mutating
//! webhook call did (`mutation.webhook.admission.k8s.io/...`, and its patch, kept only for
//! audit levels `Request` and above: `AddAnnotationWithLevel`). The HTTP layer creates one
//! recorder per request and writes what it holds into the request's audit events.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// A request's audit annotations, each with whether it needs the `Request` audit level;
/// cheap to clone and share with the registry.
#[derive(Clone, Debug, Default)]
pub struct AuditAnnotations(Arc<Mutex<BTreeMap<String, (String, bool)>>>);

impl AuditAnnotations {
    /// Adds `key: value`, as upstream's `AddAnnotation`: the key must be a qualified name
    /// (`[prefix/]name`), and an annotation already there keeps its value (an error names
    /// the key when `value` differs).
    pub fn add(&self, key: &str, value: &str) -> Result<(), String> {
        self.add_at(key, value, false)
    }

    /// [`Self::add`] for an annotation that only events at the `Request` audit level or
    /// above carry (upstream's `AddAnnotationWithLevel(..., LevelRequest)`).
    pub fn add_at_request_level(&self, key: &str, value: &str) -> Result<(), String> {
        self.add_at(key, value, true)
    }

    fn add_at(&self, key: &str, value: &str, request_level: bool) -> Result<(), String> {
        let invalid = kplane_types::validation::is_qualified_name(key);
        if !invalid.is_empty() {
            return Err(format!(
                "invalid admission annotation key {key:?}: {}",
                invalid.join("; ")
            ));
        }
        let mut m = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match m.get(key) {
            Some((v, _)) if v == value => Ok(()),
            Some((v, _)) => Err(format!(
                "admission annotations are not allowed to be overwritten, key:{key:?}, old value: {v:?}, new value:{value:?}"
            )),
            None => {
                m.insert(key.to_string(), (value.to_string(), request_level));
                Ok(())
            }
        }
    }

    /// Adds `key: value`, logging (debug) when upstream would refuse it.
    pub fn record(&self, key: &str, value: &str) {
        if let Err(e) = self.add(key, value) {
            tracing::debug!(error = %e, "audit annotation not recorded");
        }
    }

    /// Everything recorded.
    pub fn all(&self) -> BTreeMap<String, String> {
        self.at_level(true)
    }

    /// What an audit event carries: everything at the `Request` level and above
    /// (`request_level`), else only the annotations that need no more than `Metadata`.
    pub fn at_level(&self, request_level: bool) -> BTreeMap<String, String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, (_, needs_request))| request_level || !needs_request)
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_qualified_names_and_values_are_never_overwritten() {
        let a = AuditAnnotations::default();
        a.add("p/k", "v").unwrap();
        a.add("p/k", "v").unwrap();
        assert!(a
            .add("p/k", "w")
            .unwrap_err()
            .contains("not allowed to be overwritten"));
        assert!(a.add("bad key/x/y", "v").is_err());
        assert_eq!(
            a.all().into_iter().collect::<Vec<_>>(),
            [("p/k".to_string(), "v".to_string())]
        );
    }
}
