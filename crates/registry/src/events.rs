//! Conversion between core `v1` Events and `events.k8s.io/v1` Events. Both APIs are served
//! over one store holding the core form, as kube-apiserver does.

use serde_json::{Map, Value};

/// Field renames: (core v1 name, events.k8s.io/v1 name).
const RENAMES: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

fn rename(obj: &Value, from_core: bool, api_version: &str) -> Value {
    let Some(o) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    for (k, v) in o {
        let renamed = RENAMES.iter().find_map(|(core, v1)| {
            if from_core && k == core {
                Some(*v1)
            } else if !from_core && k == v1 {
                Some(*core)
            } else {
                None
            }
        });
        let target = renamed.unwrap_or(k.as_str());
        // Zero values the events.k8s.io/v1 type omits (its other fields are always written).
        let skip = from_core
            && match (target, v) {
                ("deprecatedCount", Value::Number(n)) => n.as_i64() == Some(0),
                ("series" | "related", Value::Null) => true,
                (
                    "reportingController"
                    | "reportingInstance"
                    | "action"
                    | "reason"
                    | "note"
                    | "type",
                    Value::String(s),
                ) => s.is_empty(),
                _ => false,
            };
        if !skip {
            out.insert(target.to_string(), v.clone());
        }
    }
    if from_core {
        // Structs and non-omitempty fields of events.k8s.io/v1 Event.
        for (field, zero) in [
            ("eventTime", Value::Null),
            ("regarding", Value::Object(Map::new())),
            ("deprecatedSource", Value::Object(Map::new())),
            ("deprecatedFirstTimestamp", Value::Null),
            ("deprecatedLastTimestamp", Value::Null),
        ] {
            out.entry(field).or_insert(zero);
        }
    }
    out.insert("apiVersion".into(), Value::String(api_version.into()));
    out.insert("kind".into(), Value::String("Event".into()));
    Value::Object(out)
}

/// Stored core form to `events.k8s.io/v1`.
pub fn to_events_v1(core: &Value) -> Value {
    rename(core, true, "events.k8s.io/v1")
}

/// `events.k8s.io/v1` to the stored core form.
pub fn to_core(v1: &Value) -> Value {
    rename(v1, false, "v1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips() {
        let v1 = json!({"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e"},
            "regarding":{"kind":"Pod","name":"p"},"note":"hi","reason":"R","reportingController":"c",
            "reportingInstance":"i","action":"A","eventTime":"2024-01-01T00:00:00.000000Z","type":"Normal"});
        let core = to_core(&v1);
        assert_eq!(core["involvedObject"]["name"], "p");
        assert_eq!(core["message"], "hi");
        assert_eq!(core["reportingComponent"], "c");
        assert_eq!(core["apiVersion"], "v1");
        let mut want = v1.clone();
        want["deprecatedSource"] = json!({});
        want["deprecatedFirstTimestamp"] = Value::Null;
        want["deprecatedLastTimestamp"] = Value::Null;
        assert_eq!(to_events_v1(&core), want);
        // What a core-only Event looks like through events.k8s.io/v1.
        let core = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod"}, "source": {}, "count": 0, "firstTimestamp": null,
            "lastTimestamp": null, "eventTime": null, "reportingComponent": "", "reportingInstance": ""});
        assert_eq!(
            to_events_v1(&core),
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
                "regarding": {"kind": "Pod"}, "deprecatedSource": {}, "deprecatedFirstTimestamp": null,
                "deprecatedLastTimestamp": null, "eventTime": null})
        );
    }
}
