//! Building the backend's dynamic statements: numbered parameters, the condition that a
//! row's key lies in a [`Prefix`] or after a key, and decoding key and value columns.

use bytes::Bytes;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::errors::pg_err;
use super::schema::to_rev;
use crate::{Clusters, Error, Key, KeyValue, Prefix, Result};

/// The key columns, in key order.
pub(crate) const KEY_COLS: &str = "cluster, resource, namespace, name";

/// A statement's parameters, numbered as they are added.
#[derive(Default)]
pub(crate) struct Params {
    values: Vec<Box<dyn ToSql + Sync + Send>>,
}

impl Params {
    /// Adds a parameter and returns its placeholder (`$n`).
    pub(crate) fn add(&mut self, v: impl ToSql + Sync + Send + 'static) -> String {
        self.values.push(Box::new(v));
        format!("${}", self.values.len())
    }

    pub(crate) fn refs(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.values
            .iter()
            .map(|v| v.as_ref() as &(dyn ToSql + Sync))
            .collect()
    }
}

/// The condition (`TRUE AND ...`) that the key columns of `alias` lie in `prefix`.
pub(crate) fn prefix_cond(p: &mut Params, alias: &str, prefix: &Prefix) -> String {
    let mut cond = String::from("TRUE");
    match &prefix.cluster {
        Clusters::All => {}
        Clusters::One(c) => {
            let c = p.add(c.as_bytes().to_vec());
            cond.push_str(&format!(" AND {alias}.cluster = {c}"));
        }
        Clusters::Subtree(c) => {
            // The root, or a name in [root + ":", root + ";"): ';' follows ':' bytewise.
            let root = p.add(c.as_bytes().to_vec());
            let lo = p.add(format!("{c}:").into_bytes());
            let hi = p.add(format!("{c};").into_bytes());
            cond.push_str(&format!(
                " AND ({alias}.cluster = {root} OR ({alias}.cluster >= {lo} AND {alias}.cluster < {hi}))"
            ));
        }
    }
    if let Some(r) = &prefix.resource {
        let r = p.add(r.as_bytes().to_vec());
        cond.push_str(&format!(" AND {alias}.resource = {r}"));
    }
    if let Some(n) = &prefix.namespace {
        let n = p.add(n.as_bytes().to_vec());
        cond.push_str(&format!(" AND {alias}.namespace = {n}"));
    }
    cond
}

/// The condition that the key of `alias` is strictly after `after` (`TRUE` when `None`).
pub(crate) fn after_cond(p: &mut Params, alias: &str, after: Option<&Key>) -> String {
    let Some(k) = after else {
        return "TRUE".into();
    };
    let c = p.add(k.cluster.as_bytes().to_vec());
    let r = p.add(k.resource.as_bytes().to_vec());
    let ns = p.add(k.namespace.as_bytes().to_vec());
    let n = p.add(k.name.as_bytes().to_vec());
    format!(
        "({alias}.cluster, {alias}.resource, {alias}.namespace, {alias}.name) > ({c}, {r}, {ns}, {n})"
    )
}

fn text(row: &Row, i: usize) -> Result<String> {
    let b: Vec<u8> = row.try_get(i).map_err(pg_err)?;
    String::from_utf8(b).map_err(|_| Error::Corrupt("a key part is not UTF-8".into()))
}

/// The key in columns `at..at + 4`.
pub(crate) fn key_at(row: &Row, at: usize) -> Result<Key> {
    Ok(Key {
        cluster: text(row, at)?,
        resource: text(row, at + 1)?,
        namespace: text(row, at + 2)?,
        name: text(row, at + 3)?,
    })
}

/// A key-value from columns `key..4, value, create_revision, mod_revision` starting at 0.
pub(crate) fn kv(row: &Row) -> Result<KeyValue> {
    let value: Vec<u8> = row.try_get(4).map_err(pg_err)?;
    Ok(KeyValue {
        key: key_at(row, 0)?,
        value: Bytes::from(value),
        create_revision: to_rev(row.try_get(5).map_err(pg_err)?)?,
        mod_revision: to_rev(row.try_get(6).map_err(pg_err)?)?,
    })
}

/// The four key-part arrays of `keys`, for `unnest`.
pub(crate) fn key_arrays<'a>(keys: impl Iterator<Item = &'a Key>) -> [Vec<Vec<u8>>; 4] {
    let mut out: [Vec<Vec<u8>>; 4] = Default::default();
    for k in keys {
        out[0].push(k.cluster.as_bytes().to_vec());
        out[1].push(k.resource.as_bytes().to_vec());
        out[2].push(k.namespace.as_bytes().to_vec());
        out[3].push(k.name.as_bytes().to_vec());
    }
    out
}
