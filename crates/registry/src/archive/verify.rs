//! The verification pass of an import: the whole archive is read and checked before
//! anything is written. The format layer (`kplane_archive::verify`) proves the framing,
//! the ordering rule, the count and the SHA-256; this pass adds what only the server
//! knows: every record is a JSON object whose kind, name and namespace agree with its
//! key, its resource is one the target serves (a built-in, or a custom resource of a CRD
//! earlier in the same cluster: CRDs come first), and every CRD passes the CRD
//! strategy's validation. Runs on a blocking thread (sync reads of the spooled file).

use std::collections::HashMap;
use std::io::BufReader;
use std::path::Path;

use kplane_archive::{Header, Reader, Record, CRD_RESOURCE};
use kplane_types::{ClusterName, Status, StatusReason};
use serde_json::Value;

use crate::catalog::Catalog;
use crate::cluster_states::STATE_RESOURCE;
use crate::crd;
use crate::error::{ApiError, ApiResult};

/// What a verified archive holds.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) header: Header,
    /// The archive's clusters, in archive (pre-)order.
    pub(crate) clusters: Vec<String>,
    pub(crate) objects: u64,
}

/// Which kinds a storage resource holds, and whether it is namespaced.
#[derive(Clone, Debug, Default)]
pub(crate) struct Served(HashMap<String, Vec<(String, bool)>>);

impl Served {
    /// The stored built-in types of `catalog`.
    pub(crate) fn builtin(catalog: &Catalog) -> Served {
        let mut s = Served::default();
        for rt in catalog.all().iter().filter(|rt| rt.is_stored()) {
            s.add(&rt.storage_resource, &rt.kind, rt.namespaced);
        }
        s
    }

    fn add(&mut self, resource: &str, kind: &str, namespaced: bool) {
        let e = self.0.entry(resource.to_string()).or_default();
        if !e.iter().any(|(k, _)| k == kind) {
            e.push((kind.to_string(), namespaced));
        }
    }

    fn get(&self, resource: &str) -> Option<&[(String, bool)]> {
        self.0.get(resource).map(Vec::as_slice)
    }
}

/// The 400 of an archive the format layer refuses (415 for a newer format version).
pub(crate) fn archive_error(e: &kplane_archive::Error) -> ApiError {
    let reason = match e {
        kplane_archive::Error::UnsupportedVersion { .. } => StatusReason::UnsupportedMediaType,
        _ => StatusReason::BadRequest,
    };
    ApiError::new(reason, format!("the archive was refused: {e}"))
}

/// Reads and checks the whole archive at `path` (see the module doc).
pub(crate) fn verify_archive(path: &Path, builtin: &Served) -> ApiResult<Plan> {
    let open = || {
        std::fs::File::open(path)
            .map(BufReader::new)
            .map_err(|e| ApiError::internal(format!("reading the spooled archive: {e}")))
    };
    let (header, _) = kplane_archive::verify(open()?).map_err(|e| archive_error(&e))?;
    let mut reader = Reader::open(open()?).map_err(|e| archive_error(&e))?;
    let mut plan = Plan {
        header,
        clusters: Vec::new(),
        objects: 0,
    };
    let mut custom = Served::default();
    while let Some(rec) = reader.next().map_err(|e| archive_error(&e))? {
        plan.objects += 1;
        if plan.clusters.last() != Some(&rec.cluster) {
            if ClusterName::parse(&rec.cluster).is_none() {
                return Err(refused(plan.objects, &rec, "invalid logical cluster name"));
            }
            plan.clusters.push(rec.cluster.clone());
            custom = Served::default();
        }
        check_record(plan.objects, &rec, builtin, &mut custom)?;
    }
    Ok(plan)
}

fn describe(n: u64, rec: &Record) -> String {
    let ns = if rec.namespace.is_empty() {
        String::new()
    } else {
        format!("{}/", rec.namespace)
    };
    format!(
        "archive record {n} ({} in logical cluster \"{}\", {}{})",
        rec.resource, rec.cluster, ns, rec.name
    )
}

fn refused(n: u64, rec: &Record, why: &str) -> ApiError {
    ApiError::bad_request(format!("{}: {why}", describe(n, rec)))
}

/// Checks one record; adds a CRD's resources to `custom`.
fn check_record(n: u64, rec: &Record, builtin: &Served, custom: &mut Served) -> ApiResult<()> {
    if rec.resource == STATE_RESOURCE {
        return Err(refused(
            n,
            rec,
            "a server-internal record cannot be imported",
        ));
    }
    let obj: Value = serde_json::from_slice(&rec.value)
        .map_err(|e| refused(n, rec, &format!("the object does not decode: {e}")))?;
    let Some(map) = obj.as_object() else {
        return Err(refused(n, rec, "the object is not a JSON object"));
    };
    let meta = |k: &str| {
        map.get("metadata")
            .and_then(|m| m.get(k))
            .and_then(Value::as_str)
    };
    if meta("name") != Some(rec.name.as_str()) {
        return Err(refused(
            n,
            rec,
            "metadata.name does not match the record's name",
        ));
    }
    if meta("namespace").unwrap_or("") != rec.namespace {
        return Err(refused(
            n,
            rec,
            "metadata.namespace does not match the record's namespace",
        ));
    }
    let Some(kinds) = builtin
        .get(&rec.resource)
        .or_else(|| custom.get(&rec.resource))
    else {
        return Err(refused(
            n,
            rec,
            "the resource is not served (neither built in nor defined by a CRD of the archive)",
        ));
    };
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
    let Some((_, namespaced)) = kinds.iter().find(|(k, _)| k == kind) else {
        return Err(refused(
            n,
            rec,
            &format!("kind {kind:?} is not a kind of this resource"),
        ));
    };
    if *namespaced == rec.namespace.is_empty() {
        return Err(refused(
            n,
            rec,
            "the namespace does not match the resource's scope",
        ));
    }
    if rec.resource == CRD_RESOURCE {
        let causes = crd::validate_crd(&obj, None, crd::schema_cache());
        if !causes.is_empty() {
            let mut s = Status::invalid(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                &rec.name,
                causes,
            );
            s.message = format!("{}: {}", describe(n, rec), s.message);
            return Err(ApiError::from(s));
        }
        for rt in crd::served::resource_types(&obj, crd::schema_cache()) {
            custom.add(&rt.storage_resource, &rt.kind, rt.namespaced);
        }
    }
    Ok(())
}
