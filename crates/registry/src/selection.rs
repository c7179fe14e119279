//! Label and field selection of objects for list, watch and deletecollection, with the
//! per-type rules on which field labels exist.

use kplane_types::fields::{self, FieldSelector};
use kplane_types::labels::LabelSelector;
use serde_json::Value;

use super::catalog::ResourceType;
use super::field_labels;
use crate::error::{ApiError, ApiResult};
use crate::strategy::FieldValues;

/// A compiled selection. Matches everything when both selectors and the annotation
/// requirement are absent.
#[derive(Debug, Default)]
pub struct Selection {
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
    /// An annotation that must have exactly this value (`ListParams::annotation`).
    annotation: Option<(String, String)>,
    /// How the type's objects answer field selector labels (`None`: generic paths only).
    values: Option<FieldValues>,
}

impl Selection {
    pub fn new(
        rt: &ResourceType,
        label: Option<&str>,
        field: Option<&str>,
    ) -> ApiResult<Selection> {
        let labels = match label {
            Some(s) => {
                Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?)
            }
            None => None,
        };
        let fields = match field {
            Some(s) => Some(
                FieldSelector::parse(s)
                    .map_err(|e| ApiError::bad_request(e.to_string()))?
                    .transform(|label| field_labels::convert(rt, label))
                    .map_err(ApiError::bad_request)?,
            ),
            None => None,
        };
        Ok(Selection {
            labels,
            fields,
            annotation: None,
            values: Some(rt.strategy.field_values()),
        })
    }

    /// The selection a list or watch with `p` makes: its selectors and its annotation
    /// requirement.
    pub fn for_params(rt: &ResourceType, p: &crate::options::ListParams) -> ApiResult<Selection> {
        let mut s = Selection::new(rt, p.label_selector.as_deref(), p.field_selector.as_deref())?;
        s.annotation = p.annotation.clone();
        Ok(s)
    }

    fn annotation_matches(&self, annotations: Option<&serde_json::Map<String, Value>>) -> bool {
        match &self.annotation {
            None => true,
            Some((k, v)) => annotations
                .and_then(|a| a.get(k))
                .and_then(Value::as_str)
                .is_some_and(|got| got == v),
        }
    }

    fn field_value(&self, obj: &Value, label: &str) -> Option<String> {
        match self.values {
            Some(values) => values(obj, label),
            None => fields::object_field(obj, label),
        }
    }

    pub fn is_everything(&self) -> bool {
        self.labels.is_none() && self.fields.is_none() && self.annotation.is_none()
    }

    /// Whether a decoded object matches.
    pub fn matches(&self, obj: &Value) -> bool {
        let annotations = obj
            .pointer("/metadata/annotations")
            .and_then(Value::as_object);
        if !self.annotation_matches(annotations) {
            return false;
        }
        if let Some(l) = &self.labels {
            let empty = serde_json::Map::new();
            let labels = obj
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            if !l.matches(labels) {
                return false;
            }
        }
        if let Some(f) = &self.fields {
            if !f.matches(|path| self.field_value(obj, path)) {
                return false;
            }
        }
        true
    }

    /// Whether stored bytes match. Runs per object of a LIST and per event per watcher, so
    /// it decodes only what the selectors need: nothing without selectors, just
    /// `metadata.labels` and `metadata.annotations` for a label selector or an annotation
    /// requirement alone, the whole object for field selectors.
    pub fn matches_bytes(&self, bytes: &[u8]) -> bool {
        match (&self.labels, &self.fields) {
            (None, None) if self.annotation.is_none() => true,
            (labels, None) => match serde_json::from_slice::<LabelsOnly>(bytes) {
                Ok(o) => {
                    self.annotation_matches(o.metadata.annotations.as_ref())
                        && labels.as_ref().is_none_or(|l| {
                            l.matches(o.metadata.labels.as_ref().unwrap_or(&Default::default()))
                        })
                }
                Err(_) => false,
            },
            _ => match serde_json::from_slice::<Value>(bytes) {
                Ok(v) => self.matches(&v),
                Err(_) => false,
            },
        }
    }
}

/// An object decoded only as far as its labels and annotations (other fields are skipped,
/// not built).
#[derive(serde::Deserialize)]
struct LabelsOnly {
    #[serde(default)]
    metadata: LabelsMeta,
}

#[derive(serde::Deserialize, Default)]
struct LabelsMeta {
    #[serde(default)]
    labels: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    annotations: Option<serde_json::Map<String, Value>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm_type() -> ResourceType {
        super::super::builtin_types::builtin()
            .into_iter()
            .find(|r| r.kind == "ConfigMap")
            .unwrap()
    }

    #[test]
    fn label_only_decoding_agrees_with_full_decoding() {
        let rt = cm_type();
        let objs = [
            json!({"metadata": {"name": "a", "labels": {"app": "x", "tier": "web"}}, "data": {"k": "v"}}),
            json!({"metadata": {"name": "b", "labels": {"app": "y"}}}),
            json!({"metadata": {"name": "c", "labels": null}}),
            json!({"metadata": {"name": "d"}}),
            json!({"kind": "ConfigMap"}),
        ];
        for sel in ["app=x", "app!=x", "!app", "tier", "app in (x,y)"] {
            let s = Selection::new(&rt, Some(sel), None).unwrap();
            for o in &objs {
                let bytes = serde_json::to_vec(o).unwrap();
                assert_eq!(s.matches_bytes(&bytes), s.matches(o), "{sel} on {o}");
            }
        }
        let s = Selection::new(&rt, Some("app=x"), None).unwrap();
        assert!(s.matches_bytes(&serde_json::to_vec(&objs[0]).unwrap()));
        assert!(!s.matches_bytes(&serde_json::to_vec(&objs[1]).unwrap()));
        assert!(!s.matches_bytes(b"not json"));
    }

    #[test]
    fn annotation_requirement_matches_exact_values_only() {
        let rt = cm_type();
        let p = crate::options::ListParams {
            annotation: Some(("sync.kplane.io/target".into(), "root/east".into())),
            ..Default::default()
        };
        let s = Selection::for_params(&rt, &p).unwrap();
        assert!(!s.is_everything());
        let objs = [
            (
                json!({"metadata": {"name": "a", "annotations": {"sync.kplane.io/target": "root/east"}}}),
                true,
            ),
            (
                json!({"metadata": {"name": "b", "annotations": {"sync.kplane.io/target": "root/west"}}}),
                false,
            ),
            (
                json!({"metadata": {"name": "c", "annotations": {"other": "root/east"}}}),
                false,
            ),
            (
                json!({"metadata": {"name": "d", "annotations": null}}),
                false,
            ),
            (json!({"metadata": {"name": "e"}}), false),
            (
                json!({"metadata": {"name": "f", "annotations": {"sync.kplane.io/target": 1}}}),
                false,
            ),
        ];
        for (o, want) in &objs {
            let bytes = serde_json::to_vec(o).unwrap();
            assert_eq!(s.matches_bytes(&bytes), *want, "{o}");
            assert_eq!(s.matches(o), *want, "{o}");
        }
        // Combined with a label selector and with a field selector.
        let p = crate::options::ListParams {
            label_selector: Some("app=x".into()),
            field_selector: Some("metadata.name=a".into()),
            annotation: Some(("k".into(), "v".into())),
            ..Default::default()
        };
        let a = json!({"metadata": {"name": "a", "namespace": "d", "labels": {"app": "x"}, "annotations": {"k": "v"}}});
        let b = json!({"metadata": {"name": "a", "namespace": "d", "labels": {"app": "x"}, "annotations": {"k": "w"}}});
        for (label, field) in [(true, true), (true, false), (false, false)] {
            let mut q = p.clone();
            if !label {
                q.label_selector = None;
            }
            if !field {
                q.field_selector = None;
            }
            let s = Selection::for_params(&rt, &q).unwrap();
            assert!(s.matches_bytes(&serde_json::to_vec(&a).unwrap()));
            assert!(!s.matches_bytes(&serde_json::to_vec(&b).unwrap()));
        }
    }

    #[test]
    fn field_and_label_selectors_combine() {
        let rt = cm_type();
        let s = Selection::new(&rt, Some("app=x"), Some("metadata.name=a")).unwrap();
        let a = json!({"metadata": {"name": "a", "namespace": "d", "labels": {"app": "x"}}});
        let b = json!({"metadata": {"name": "b", "namespace": "d", "labels": {"app": "x"}}});
        assert!(s.matches_bytes(&serde_json::to_vec(&a).unwrap()));
        assert!(!s.matches_bytes(&serde_json::to_vec(&b).unwrap()));
    }
}
