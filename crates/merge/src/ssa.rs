//! The server-side-apply walkers over JSON values, driven by [`TypeInfo`]: the field set
//! of an object, the merge of an applied configuration into a live object, the comparison
//! of two objects (added/modified and removed fields) and the pruning of fields a manager
//! stopped applying. Every walker is linear in the size of its inputs: list items are
//! matched through hash maps of their path elements.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::fieldset::{go_json, push_go_string, FieldSet};
use crate::types::{render_type_path, ListType, MapType, PathElement, TypeInfo};

/// Deepest object nesting walked (Kubernetes objects are far shallower).
const MAX_DEPTH: usize = 200;

pub(crate) struct Walker<'t> {
    pub types: &'t dyn TypeInfo,
}

type TPath<'a> = Vec<PathElement<'a>>;

/// `metadata.managedFields` is bookkeeping, never merged, compared or owned.
fn skipped(tp: &TPath<'_>, k: &str) -> bool {
    k == "managedFields" && tp.len() == 1 && tp[0] == PathElement::Field("metadata")
}

/// `f:<name>`.
fn fkey(k: &str) -> String {
    let mut s = String::with_capacity(k.len() + 2);
    s.push_str("f:");
    s.push_str(k);
    s
}

fn too_deep(tp: &TPath<'_>) -> Result<(), String> {
    if tp.len() > MAX_DEPTH {
        Err(format!(
            "{}: object nested too deeply",
            render_type_path(tp)
        ))
    } else {
        Ok(())
    }
}

/// Numbers with an integral value compare and encode as integers (`80.0` is `80`).
fn normalize_number(v: &Value) -> std::borrow::Cow<'_, Value> {
    match v {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                std::borrow::Cow::Owned(Value::from(f as i64))
            }
            _ => std::borrow::Cow::Borrowed(v),
        },
        _ => std::borrow::Cow::Borrowed(v),
    }
}

/// How the items of one list are keyed.
pub(crate) struct Keyer {
    lt: ListType,
    /// Sorted key fields: name, name as JSON, default.
    keys: Vec<(String, String, Option<Value>)>,
}

/// Appends `v` as Go's encoder writes it.
fn push_json(out: &mut String, v: &Value) {
    match v {
        Value::String(s) => push_go_string(out, s),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Null => out.push_str("null"),
        other => out.push_str(&go_json(&normalize_number(other))),
    }
}

/// Equality as upstream compares values (integers and floats numerically).
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x == y
            } else {
                x.as_f64() == y.as_f64()
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, a)| y.get(k).is_some_and(|b| json_eq(a, b)))
        }
        _ => a == b,
    }
}

/// Drops `null` object fields, recursively (what a typed round trip does).
pub(crate) fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, x)| !x.is_null())
                .map(|(k, x)| (k.clone(), strip_nulls(x)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

impl<'t> Walker<'t> {
    /// What keys the items of the list at `tp` (computed once per list).
    pub fn keyer(&self, lt: &ListType, tp: &TPath<'_>) -> Keyer {
        let keys = match lt {
            ListType::Map { keys } => {
                let mut sorted: Vec<&String> = keys.iter().collect();
                sorted.sort();
                sorted
                    .into_iter()
                    .map(|k| {
                        let mut enc = String::new();
                        push_go_string(&mut enc, k);
                        (k.clone(), enc, self.types.key_default(tp, k))
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        Keyer {
            lt: lt.clone(),
            keys,
        }
    }

    /// Path element of a list item (`None`: the item cannot be keyed; an error instead
    /// when `strict`).
    pub fn item_pe(
        &self,
        keyer: &Keyer,
        item: &Value,
        i: usize,
        tp: &TPath<'_>,
        strict: bool,
    ) -> Result<Option<String>, String> {
        match &keyer.lt {
            ListType::Atomic => Ok(Some(format!("i:{i}"))),
            ListType::Set => {
                if item.is_object() || item.is_array() {
                    if strict {
                        return Err(format!(
                            "{}: element {i}: associative list without keys has an element that's a map type",
                            render_type_path(tp)
                        ));
                    }
                    return Ok(None);
                }
                let mut s = String::from("v:");
                push_json(&mut s, item);
                Ok(Some(s))
            }
            ListType::Map { .. } => {
                let Some(obj) = item.as_object() else {
                    if strict {
                        return Err(format!(
                            "{}: element {i}: expected map, got {item}",
                            render_type_path(tp)
                        ));
                    }
                    return Ok(None);
                };
                let mut s = String::with_capacity(32);
                s.push_str("k:{");
                for (n, (k, enc, default)) in keyer.keys.iter().enumerate() {
                    if n > 0 {
                        s.push(',');
                    }
                    s.push_str(enc);
                    s.push(':');
                    match (obj.get(k.as_str()), default) {
                        (Some(v), _) if !v.is_null() => push_json(&mut s, v),
                        (_, Some(d)) => push_json(&mut s, d),
                        _ if strict => {
                            return Err(format!(
                                "{}: element {i}: associative list with keys has an element that omits key field {k:?} (and doesn't have default value)",
                                render_type_path(tp)
                            ));
                        }
                        _ => return Ok(None),
                    }
                }
                s.push('}');
                Ok(Some(s))
            }
        }
    }

    fn index<'v>(
        &self,
        a: &'v [Value],
        lt: &ListType,
        tp: &TPath<'_>,
        strict: bool,
    ) -> Result<Vec<(Option<String>, &'v Value)>, String> {
        let keyer = self.keyer(lt, tp);
        let mut out = Vec::with_capacity(a.len());
        let mut seen = HashSet::with_capacity(a.len());
        for (i, item) in a.iter().enumerate() {
            let pe = self.item_pe(&keyer, item, i, tp, strict)?;
            let pe = match pe {
                Some(pe) if !seen.insert(pe.clone()) => {
                    if strict {
                        return Err(format!(
                            "{}: duplicate entries for key {}",
                            render_type_path(tp),
                            crate::fieldset::path_string(&[pe])
                        ));
                    }
                    None
                }
                other => other,
            };
            out.push((pe, item));
        }
        Ok(out)
    }

    /// The field set of an object as upstream's `ToFieldSet` builds it: leaves, atomic
    /// lists and maps, list items (with `.`), and keys of maps with arbitrary keys.
    pub fn field_set(&self, v: &Value, strict: bool) -> Result<FieldSet, String> {
        let mut root = FieldSet::new();
        self.fs_walk(v, &mut Vec::new(), &mut root, strict)?;
        root.set_member(false);
        Ok(root)
    }

    fn fs_walk<'a>(
        &self,
        v: &'a Value,
        tp: &mut TPath<'a>,
        node: &mut FieldSet,
        strict: bool,
    ) -> Result<(), String> {
        too_deep(tp)?;
        match v {
            Value::Object(m) => {
                if self.types.map_type(tp) == MapType::Atomic {
                    node.set_member(true);
                    return Ok(());
                }
                let is_map = self.types.is_map(tp);
                for (k, c) in m {
                    if skipped(tp, k) {
                        continue;
                    }
                    tp.push(PathElement::Field(k));
                    let mut child = FieldSet::new();
                    let r = self.fs_walk(c, tp, &mut child, strict);
                    tp.pop();
                    r?;
                    if is_map {
                        child.set_member(true);
                    }
                    node.put(fkey(k), child);
                }
            }
            Value::Array(a) => {
                let lt = self.types.list_type(tp);
                if lt == ListType::Atomic {
                    node.set_member(true);
                    return Ok(());
                }
                let items = self.index(a, &lt, tp, strict)?;
                tp.push(PathElement::Item);
                for (pe, item) in items {
                    let Some(pe) = pe else { continue };
                    let mut child = FieldSet::new();
                    if let Err(e) = self.fs_walk(item, tp, &mut child, strict) {
                        tp.pop();
                        return Err(e);
                    }
                    child.set_member(true);
                    node.put(pe, child);
                }
                tp.pop();
            }
            _ => node.set_member(true),
        }
        Ok(())
    }

    /// Merges the applied configuration `r` into the live object `l`.
    pub fn merge(&self, l: &Value, r: &Value) -> Result<Value, String> {
        self.merge_at(l, r, &mut Vec::new())
    }

    fn merge_at<'a>(
        &self,
        l: &'a Value,
        r: &'a Value,
        tp: &mut TPath<'a>,
    ) -> Result<Value, String> {
        too_deep(tp)?;
        match (l, r) {
            (Value::Object(lm), Value::Object(rm)) => {
                if self.types.map_type(tp) == MapType::Atomic || (lm.is_empty() && rm.is_empty()) {
                    return Ok(strip_nulls(r));
                }
                let mut out = Map::new();
                for (k, lv) in lm {
                    if skipped(tp, k) {
                        continue;
                    }
                    match rm.get(k) {
                        Some(Value::Null) => {}
                        Some(rv) => {
                            tp.push(PathElement::Field(k));
                            let m = self.merge_at(lv, rv, tp);
                            tp.pop();
                            out.insert(k.clone(), m?);
                        }
                        None => {
                            out.insert(k.clone(), lv.clone());
                        }
                    }
                }
                for (k, rv) in rm {
                    if !lm.contains_key(k) && !rv.is_null() {
                        out.insert(k.clone(), strip_nulls(rv));
                    }
                }
                Ok(Value::Object(out))
            }
            (Value::Array(la), Value::Array(ra)) => {
                let lt = self.types.list_type(tp);
                if lt == ListType::Atomic || (la.is_empty() && ra.is_empty()) {
                    return Ok(strip_nulls(r));
                }
                self.merge_list(la, ra, &lt, tp)
            }
            _ => Ok(strip_nulls(r)),
        }
    }

    /// Upstream's list merge order: live-only items keep their place, items in both follow
    /// the applied order, applied-only items come where the applied list has them.
    fn merge_list<'a>(
        &self,
        la: &'a [Value],
        ra: &'a [Value],
        lt: &ListType,
        tp: &mut TPath<'a>,
    ) -> Result<Value, String> {
        let rpes = self.index(ra, lt, tp, true)?;
        let lpes = self.index(la, lt, tp, false)?;
        let rmap: HashMap<&str, usize> = rpes
            .iter()
            .enumerate()
            .filter_map(|(i, (pe, _))| pe.as_deref().map(|p| (p, i)))
            .collect();
        let lmap: HashMap<&str, usize> = lpes
            .iter()
            .enumerate()
            .filter_map(|(i, (pe, _))| pe.as_deref().map(|p| (p, i)))
            .collect();
        let mut shared = rpes
            .iter()
            .filter_map(|(pe, _)| pe.as_deref())
            .filter(|p| lmap.contains_key(p));
        let mut next_shared = shared.next();
        let mut out = Vec::with_capacity(la.len().max(ra.len()));
        let (ln, rn) = (lpes.len(), rpes.len());
        let (mut li, mut ri) = (0, 0);
        tp.push(PathElement::Item);
        let res = (|| -> Result<(), String> {
            while li < ln || ri < rn {
                let lpe = lpes.get(li).and_then(|(p, _)| p.as_deref());
                if li < ln && ri < rn {
                    let rpe = rpes[ri].0.as_deref();
                    if lpe.is_some() && lpe == rpe {
                        out.push(self.merge_at(lpes[li].1, rpes[ri].1, tp)?);
                        li += 1;
                        ri += 1;
                        next_shared = shared.next();
                        continue;
                    }
                    if let Some(p) = lpe {
                        if rmap.contains_key(p) && next_shared.is_some() && next_shared != Some(p) {
                            li += 1;
                            continue;
                        }
                    }
                }
                if li < ln && lpe.is_none_or(|p| !rmap.contains_key(p)) {
                    out.push(lpes[li].1.clone());
                    li += 1;
                    continue;
                }
                if ri < rn {
                    let (rpe, rv) = (&rpes[ri].0, rpes[ri].1);
                    let lv = rpe.as_deref().and_then(|p| lmap.get(p)).map(|&i| lpes[i].1);
                    out.push(match lv {
                        Some(lv) => self.merge_at(lv, rv, tp)?,
                        None => strip_nulls(rv),
                    });
                    ri += 1;
                    if rpe.is_some() && next_shared == rpe.as_deref() {
                        next_shared = shared.next();
                    }
                    continue;
                }
                li += 1;
            }
            Ok(())
        })();
        tp.pop();
        res?;
        Ok(Value::Array(out))
    }

    /// Compares two objects: returns (added or modified, removed), as upstream's
    /// `Compare` does (new intermediate nodes are included, so `.` appears for them).
    /// Top-level fields in `skip` are ignored.
    pub fn compare(&self, l: &Value, r: &Value, skip: &[&str]) -> (FieldSet, FieldSet) {
        let mut ch = FieldSet::new();
        let mut rm = FieldSet::new();
        match (l.as_object(), r.as_object()) {
            (Some(lm), Some(rm_)) => {
                let mut tp = Vec::new();
                self.cmp_maps(lm, rm_, &mut tp, &mut ch, &mut rm, skip);
            }
            _ => self.cmp(Some(l), Some(r), &mut Vec::new(), &mut ch, &mut rm),
        }
        ch.set_member(false);
        rm.set_member(false);
        (ch, rm)
    }

    fn cmp_maps<'a>(
        &self,
        lm: &'a Map<String, Value>,
        rm_: &'a Map<String, Value>,
        tp: &mut TPath<'a>,
        ch: &mut FieldSet,
        rm: &mut FieldSet,
        skip: &[&str],
    ) {
        let keys = lm.iter().map(|(k, v)| (k, Some(v), rm_.get(k))).chain(
            rm_.iter()
                .filter(|(k, _)| !lm.contains_key(*k))
                .map(|(k, v)| (k, None, Some(v))),
        );
        for (k, lv, rv) in keys {
            if skip.contains(&k.as_str()) || skipped(tp, k) {
                continue;
            }
            let (mut c, mut r) = (FieldSet::new(), FieldSet::new());
            tp.push(PathElement::Field(k));
            self.cmp(lv, rv, tp, &mut c, &mut r);
            tp.pop();
            if !c.is_empty() || c.is_member() {
                ch.put(fkey(k), c);
            }
            if !r.is_empty() || r.is_member() {
                rm.put(fkey(k), r);
            }
        }
    }

    fn cmp<'a>(
        &self,
        l: Option<&'a Value>,
        r: Option<&'a Value>,
        tp: &mut TPath<'a>,
        ch: &mut FieldSet,
        rm: &mut FieldSet,
    ) {
        if tp.len() > MAX_DEPTH {
            return;
        }
        // `null` next to a list or object is that container, empty (a Go nil slice or
        // map): it is neither added nor removed itself.
        let is_container = |v: Option<&Value>| v.is_some_and(|x| x.is_object() || x.is_array());
        // A `null` where the other side has nothing is a zero value Go would not have
        // encoded (`creationTimestamp: null` of a pod template): no change either way.
        if matches!(
            (l, r),
            (None, Some(Value::Null)) | (Some(Value::Null), None)
        ) {
            return;
        }
        let (l, r, l_null, r_null) = match (l, r) {
            (Some(Value::Null), Some(_)) if is_container(r) => (None, r, true, false),
            (Some(_), Some(Value::Null)) if is_container(l) => (l, None, false, true),
            _ => (l, r, false, false),
        };
        let lo = l.and_then(Value::as_object);
        let ro = r.and_then(Value::as_object);
        let la = l.and_then(Value::as_array);
        let ra = r.and_then(Value::as_array);
        let granular_obj = (lo.is_some() || l.is_none())
            && (ro.is_some() || r.is_none())
            && self.types.map_type(tp) == MapType::Granular;
        let granular_list = (la.is_some() || l.is_none())
            && (ra.is_some() || r.is_none())
            && !(lo.is_some() || ro.is_some());
        if granular_obj && (lo.is_some() || ro.is_some()) {
            let empty: &'static Map<String, Value> = empty_map();
            self.cmp_maps(lo.unwrap_or(empty), ro.unwrap_or(empty), tp, ch, rm, &[]);
        } else if granular_list && (la.is_some() || ra.is_some()) {
            let lt = self.types.list_type(tp);
            if lt == ListType::Atomic {
                leaf(l, r, ch, rm);
                return;
            }
            let la = la.map(Vec::as_slice).unwrap_or(&[]);
            let ra = ra.map(Vec::as_slice).unwrap_or(&[]);
            let (Ok(lp), Ok(rp)) = (
                self.index(la, &lt, tp, false),
                self.index(ra, &lt, tp, false),
            ) else {
                leaf(l, r, ch, rm);
                return;
            };
            let rmap: HashMap<&str, &Value> = rp
                .iter()
                .filter_map(|(pe, v)| pe.as_deref().map(|p| (p, *v)))
                .collect();
            let lset: HashSet<&str> = lp.iter().filter_map(|(pe, _)| pe.as_deref()).collect();
            tp.push(PathElement::Item);
            let pairs = lp
                .iter()
                .filter_map(|(pe, v)| pe.as_deref().map(|p| (p, Some(*v), rmap.get(p).copied())))
                .chain(rp.iter().filter_map(|(pe, v)| {
                    pe.as_deref()
                        .filter(|p| !lset.contains(p))
                        .map(|p| (p, None, Some(*v)))
                }));
            for (pe, lv, rv) in pairs {
                let (mut c, mut r2) = (FieldSet::new(), FieldSet::new());
                self.cmp(lv, rv, tp, &mut c, &mut r2);
                if !c.is_empty() || c.is_member() {
                    ch.put(pe.to_string(), c);
                }
                if !r2.is_empty() || r2.is_member() {
                    rm.put(pe.to_string(), r2);
                }
            }
            tp.pop();
        } else {
            leaf(l, r, ch, rm);
            return;
        }
        if l.is_none() && !l_null {
            ch.set_member(true);
        }
        if r.is_none() && !r_null {
            rm.set_member(true);
        }
    }

    /// Removes from `v` what the manager owned before (`last`) and nobody owns now
    /// (`owned`: every other manager's fields plus the manager's new ones). A node owned
    /// by someone, or with owned fields below it, stays; key fields of kept map-list
    /// items stay.
    pub fn prune(&self, v: &mut Value, last: &FieldSet, owned: &FieldSet) {
        self.prune_at(v, last, Some(owned), &mut Vec::new(), &[]);
    }

    fn prune_at<'b>(
        &self,
        v: &mut Value,
        last: &'b FieldSet,
        owned: Option<&FieldSet>,
        tp: &mut TPath<'b>,
        item_keys: &[String],
    ) {
        if tp.len() > MAX_DEPTH {
            return;
        }
        match v {
            Value::Object(m) => {
                for (pe, lc) in last.children() {
                    let Some(name) = pe.strip_prefix("f:") else {
                        continue;
                    };
                    match owned.and_then(|o| o.child(pe)) {
                        None => {
                            if !item_keys.iter().any(|k| k == name) {
                                m.remove(name);
                            }
                        }
                        Some(oc) => {
                            if let Some(cv) = m.get_mut(name) {
                                tp.push(PathElement::Field(name));
                                self.prune_at(cv, lc, Some(oc), tp, &[]);
                                tp.pop();
                            }
                        }
                    }
                }
            }
            Value::Array(a) => {
                if last.is_empty() {
                    return;
                }
                let lt = self.types.list_type(tp);
                let keys: Vec<String> = match &lt {
                    ListType::Atomic => return,
                    ListType::Set => Vec::new(),
                    ListType::Map { keys } => keys.clone(),
                };
                let mut drop = vec![false; a.len()];
                let keyer = self.keyer(&lt, tp);
                let pes: Vec<Option<String>> = a
                    .iter()
                    .enumerate()
                    .map(|(i, item)| self.item_pe(&keyer, item, i, tp, false).ok().flatten())
                    .collect();
                tp.push(PathElement::Item);
                for (i, item) in a.iter_mut().enumerate() {
                    let Some(pe) = &pes[i] else { continue };
                    let Some(lc) = last.child(pe) else { continue };
                    match owned.and_then(|o| o.child(pe)) {
                        None => drop[i] = true,
                        Some(oc) => self.prune_at(item, lc, Some(oc), tp, &keys),
                    }
                }
                tp.pop();
                let mut i = 0;
                a.retain(|_| {
                    let keep = !drop[i];
                    i += 1;
                    keep
                });
            }
            _ => {}
        }
    }
}

fn empty_map() -> &'static Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Map::new)
}

fn leaf(l: Option<&Value>, r: Option<&Value>, ch: &mut FieldSet, rm: &mut FieldSet) {
    match (l, r) {
        (None, Some(_)) => ch.set_member(true),
        (Some(_), None) => rm.set_member(true),
        (Some(a), Some(b)) if !json_eq(a, b) => ch.set_member(true),
        _ => {}
    }
}
