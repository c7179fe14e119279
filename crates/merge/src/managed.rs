//! `metadata.managedFields`: decoding, encoding (upstream's entry order) and the cap on
//! `Update` entries.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::error::MergeError;
use crate::fieldset::FieldSet;

/// `operation` of a managedFields entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `metadata.managedFields` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedFieldsEntry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    /// `""` for the main resource.
    pub subresource: String,
    /// RFC3339 time of the manager's last change (may be absent).
    pub time: Option<String>,
    pub fields: FieldSet,
}

impl ManagedFieldsEntry {
    /// Whether this entry is the one `manager` writes with `operation` through
    /// `subresource` (`Update` entries are per API version too; `Apply` ones are not).
    pub fn is(&self, manager: &str, op: Operation, api_version: &str, subresource: &str) -> bool {
        self.manager == manager
            && self.operation == op
            && self.subresource == subresource
            && (op == Operation::Apply || self.api_version == api_version)
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        if !self.manager.is_empty() {
            m.insert("manager".into(), json!(self.manager));
        }
        m.insert("operation".into(), json!(self.operation.as_str()));
        if !self.api_version.is_empty() {
            m.insert("apiVersion".into(), json!(self.api_version));
        }
        if let Some(t) = &self.time {
            m.insert("time".into(), json!(t));
        }
        m.insert("fieldsType".into(), json!("FieldsV1"));
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), json!(self.subresource));
        }
        Value::Object(m)
    }
}

/// The decoded `metadata.managedFields` of an object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManagedFields {
    pub entries: Vec<ManagedFieldsEntry>,
}

/// Name of the entry old `Update` entries are merged into when there are too many.
pub const ANCIENT_CHANGES: &str = "ancient-changes";
/// Most `Update` entries kept (upstream `DefaultMaxUpdateManagers`).
pub const MAX_UPDATE_MANAGERS: usize = 10;

fn seconds(t: &Option<String>) -> i64 {
    t.as_deref()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|d| d.timestamp())
        .unwrap_or(0)
}

impl ManagedFields {
    /// Decodes a `managedFields` list. Entries with the same identity are merged.
    pub fn decode(list: &Value) -> Result<ManagedFields, MergeError> {
        let bad = |m: String| MergeError::bad_request(format!("invalid managedFields: {m}"));
        let arr = match list {
            Value::Null => return Ok(ManagedFields::default()),
            Value::Array(a) => a,
            other => return Err(bad(format!("expected a list, got {other}"))),
        };
        let mut out = ManagedFields::default();
        for e in arr {
            let o = e
                .as_object()
                .ok_or_else(|| bad(format!("expected an object, got {e}")))?;
            let s = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let operation = match o.get("operation").and_then(Value::as_str) {
                Some("Apply") => Operation::Apply,
                Some("Update") => Operation::Update,
                other => {
                    return Err(bad(format!(
                        "operation must be `Apply` or `Update`, got {other:?}"
                    )))
                }
            };
            let ft = s("fieldsType");
            if ft != "FieldsV1" {
                return Err(bad(format!("expected FieldsType to be FieldsV1, got {ft}")));
            }
            let fields = match o.get("fieldsV1") {
                None | Some(Value::Null) => FieldSet::new(),
                Some(v) => FieldSet::from_fields_v1(v).map_err(bad)?,
            };
            let entry = ManagedFieldsEntry {
                manager: s("manager"),
                operation,
                api_version: s("apiVersion"),
                subresource: s("subresource"),
                time: o.get("time").and_then(Value::as_str).map(str::to_string),
                fields,
            };
            match out.position(
                &entry.manager,
                entry.operation,
                &entry.api_version,
                &entry.subresource,
            ) {
                Some(i) => out.entries[i].fields.union_with(&entry.fields),
                None => out.entries.push(entry),
            }
        }
        Ok(out)
    }

    /// Decodes `metadata.managedFields` of an object (absent: none).
    pub fn from_object(obj: &Value) -> Result<ManagedFields, MergeError> {
        match obj.pointer("/metadata/managedFields") {
            Some(v) => ManagedFields::decode(v),
            None => Ok(ManagedFields::default()),
        }
    }

    /// Like [`ManagedFields::from_object`], but broken managedFields count as none (what
    /// the apiserver does with them: it resets them).
    pub fn from_object_lenient(obj: &Value) -> ManagedFields {
        ManagedFields::from_object(obj).unwrap_or_default()
    }

    /// Index of the entry with this identity.
    pub fn position(
        &self,
        manager: &str,
        op: Operation,
        api_version: &str,
        subresource: &str,
    ) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.is(manager, op, api_version, subresource))
    }

    /// The entries in upstream's order: operation, time, manager, apiVersion, subresource.
    pub fn sorted(&self) -> Vec<&ManagedFieldsEntry> {
        let mut v: Vec<&ManagedFieldsEntry> = self.entries.iter().collect();
        v.sort_by(|a, b| {
            (
                a.operation,
                seconds(&a.time),
                &a.manager,
                &a.api_version,
                &a.subresource,
            )
                .cmp(&(
                    b.operation,
                    seconds(&b.time),
                    &b.manager,
                    &b.api_version,
                    &b.subresource,
                ))
        });
        v
    }

    /// The `managedFields` JSON list.
    pub fn encode(&self) -> Value {
        Value::Array(
            self.sorted()
                .into_iter()
                .map(ManagedFieldsEntry::to_json)
                .collect(),
        )
    }

    /// Writes the entries into `obj.metadata.managedFields` (removing the field when
    /// there are none).
    pub fn write_into(&self, obj: &mut Value) {
        let Some(o) = obj.as_object_mut() else { return };
        if self.entries.is_empty() {
            if let Some(Value::Object(meta)) = o.get_mut("metadata") {
                meta.remove("managedFields");
            }
            return;
        }
        let meta = o
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Value::Object(meta) = meta {
            meta.insert("managedFields".into(), self.encode());
        }
    }

    /// Drops entries that own nothing.
    pub(crate) fn drop_empty(&mut self) {
        self.entries.retain(|e| !e.fields.is_empty());
    }

    /// Merges the oldest `Update` entries into per-version [`ANCIENT_CHANGES`] entries
    /// while there are more than `max` of them (upstream `capManagersManager`).
    pub fn cap_update_managers(&mut self, max: usize) {
        let mut updaters: Vec<usize> = (0..self.entries.len())
            .filter(|&i| self.entries[i].operation == Operation::Update)
            .collect();
        if updaters.len() <= max {
            return;
        }
        updaters.sort_by(|&a, &b| {
            let (ea, eb) = (&self.entries[a], &self.entries[b]);
            (
                seconds(&ea.time),
                &ea.manager,
                &ea.api_version,
                &ea.subresource,
            )
                .cmp(&(
                    seconds(&eb.time),
                    &eb.manager,
                    &eb.api_version,
                    &eb.subresource,
                ))
        });
        let mut first: HashMap<String, usize> = HashMap::new();
        let mut removed = vec![false; self.entries.len()];
        let mut length = updaters.len();
        for &i in &updaters {
            if length <= max {
                break;
            }
            let version = self.entries[i].api_version.clone();
            let Some(&f) = first.get(&version) else {
                first.insert(version, i);
                continue;
            };
            let bucket = match self.entries.iter().enumerate().position(|(j, e)| {
                !removed[j] && e.is(ANCIENT_CHANGES, Operation::Update, &version, "")
            }) {
                Some(b) => b,
                None => {
                    let e = &mut self.entries[f];
                    e.manager = ANCIENT_CHANGES.to_string();
                    e.subresource = String::new();
                    f
                }
            };
            let fields = self.entries[i].fields.clone();
            let time = self.entries[i].time.clone();
            self.entries[bucket].fields.union_with(&fields);
            self.entries[bucket].time = time;
            removed[i] = true;
            length -= 1;
        }
        let mut j = 0;
        self.entries.retain(|_| {
            let keep = !removed[j];
            j += 1;
            keep
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` Update entries of managers `m0`.. (oldest first), each owning `data.k<i>`.
    fn updates(n: usize) -> ManagedFields {
        let list: Vec<Value> = (0..n)
            .map(|i| {
                json!({"manager": format!("m{i}"), "operation": "Update", "apiVersion": "v1",
                       "time": format!("2024-01-01T{:02}:{:02}:00Z", i / 60, i % 60),
                       "fieldsType": "FieldsV1",
                       "fieldsV1": {"f:data": {format!("f:k{i}"): {}}}})
            })
            .collect();
        ManagedFields::decode(&Value::Array(list)).unwrap()
    }

    #[test]
    fn update_entries_are_capped_at_the_most_recent_managers() {
        let max = MAX_UPDATE_MANAGERS;
        for n in [max - 1, max, max + 1, 10 * max] {
            let mut m = updates(n);
            m.cap_update_managers(max);
            let managers: Vec<&str> = m.entries.iter().map(|e| e.manager.as_str()).collect();
            assert_eq!(managers.len(), n.min(max), "{n} managers");
            if n <= max {
                assert!(!managers.contains(&ANCIENT_CHANGES), "{n}: nothing merged");
                continue;
            }
            // The oldest n - max + 1 are merged into one entry; the newest max - 1 stay.
            let kept: Vec<String> = (n - max + 1..n).map(|i| format!("m{i}")).collect();
            assert_eq!(managers[0], ANCIENT_CHANGES, "{n}");
            assert_eq!(
                managers[1..],
                kept.iter().map(String::as_str).collect::<Vec<_>>()
            );
            let ancient = m.entries[0].fields.to_fields_v1();
            let owned = ancient["f:data"].as_object().map_or(0, |o| o.len());
            assert_eq!(owned, n - max + 1, "{n}: fields of the merged managers");
        }
    }
}
