//! The write path: create, update (incl. the status and finalize subresources), patch,
//! delete and deletecollection. Every write is a compare-and-swap against the revision
//! that was read, so concurrent writers never overwrite each other silently.

use bytes::Bytes;
use kplane_storage::{Encoder, KeyValue, Precondition, Revision};
use kplane_types::{Cause, CauseType, Status, StatusReason};
use serde_json::{json, Value};

use super::meta;
use super::patch::{self, PatchType};
use super::precondition;
use super::typed;
use super::{corrupt, storage_error, Registry, ResourceType, Target};
use crate::admission::chain::{Attributes, Operation};
use crate::error::{ApiError, ApiResult};
use crate::hooks::{BatchCreate, Together};
use crate::options::{ListParams, WriteParams};

/// How many times a patch is retried on a write conflict when the client did not ask
/// for optimistic locking.
const PATCH_RETRIES: usize = 5;
/// How often an unconditional update is retried when another write commits first.
pub(crate) const UPDATE_RETRIES: usize = 5;

/// Options of a delete.
#[derive(Clone, Debug, Default)]
pub struct DeleteParams {
    pub dry_run: bool,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    pub propagation_policy: Option<String>,
    pub grace_period_seconds: Option<i64>,
    /// The requester, for admission (`None` for the server's own deletes).
    pub user: Option<kplane_types::UserInfo>,
    /// The request's warnings (admission webhooks add theirs).
    pub warnings: crate::warnings::Warnings,
    /// Audit annotations admission adds.
    pub audit: crate::audit_annotations::AuditAnnotations,
}

impl DeleteParams {
    /// The delete's options as admission webhooks are sent them.
    pub fn admission_options(&self) -> super::admission::RequestOptions<'_> {
        super::admission::RequestOptions {
            propagation_policy: self.propagation_policy.as_deref(),
            grace_period_seconds: self.grace_period_seconds,
            warnings: Some(&self.warnings),
            audit: Some(&self.audit),
            ..Default::default()
        }
    }
}

/// What a delete did.
#[derive(Debug)]
pub enum DeleteOutcome {
    /// The object is gone; its last state (with the delete's revision).
    Deleted(Value),
    /// The object has finalizers (or is a namespace being emptied): it now carries a
    /// deletionTimestamp and stays until they are removed.
    Marked(Bytes),
}

/// A create after its mutating admission (see [`Registry::create`]'s steps).
struct AdmittedCreate {
    /// The object as admitted (write form, defaulted), before its name is settled: the
    /// request's version for a custom resource, else the stored form
    /// ([`Registry::write_value`]).
    obj: Value,
    cluster: kplane_types::ClusterName,
    /// `metadata.generateName` ("" when not set).
    generate: String,
    /// `metadata.name` as sent ("" when it is to be generated).
    explicit_name: String,
}

/// What a caller of [`Registry::write_update`] already decoded of the current object.
pub(super) enum Decoded {
    /// Nothing: it is decoded there.
    Nothing,
    /// Exactly its stored form.
    Stored(Value),
    /// The object in the request's version (a patch and an apply read it so), when that is
    /// not the stored bytes as they are: for a custom resource stored in another version,
    /// the old object its write is validated against, converted once.
    Api(Value),
}

/// A batch of creates admitted and validated, not yet written
/// ([`Registry::prepare_batch`], [`Registry::commit_batch`]).
#[derive(Default)]
pub(super) struct PreparedBatch {
    /// One entry per object, in order: `None` for those to be written.
    results: Vec<Option<ApiResult<Bytes>>>,
    writes: Vec<kplane_storage::BatchWrite>,
    /// (index in `results`, target, name, whether its `after_create` hook runs) of each
    /// object to be written.
    sent: Vec<(usize, Target, String, bool)>,
}

impl PreparedBatch {
    /// Adds an object ready to be stored (`candidate`: its stored form) as the batch's
    /// next one; returns its index among the batch's results.
    pub(super) fn push(
        &mut self,
        t: Target,
        name: String,
        candidate: Value,
        hook: bool,
    ) -> ApiResult<usize> {
        let key = t.key(&name)?;
        self.writes.push(kplane_storage::BatchWrite {
            key,
            delete: false,
            precondition: Precondition::MustNotExist,
            encode: encoder(candidate),
        });
        let index = self.results.len();
        self.sent.push((index, t, name, hook));
        self.results.push(None);
        Ok(index)
    }

    /// Whether any object was refused before being written.
    pub(super) fn any_refused(&self) -> bool {
        self.results.iter().any(Option::is_some)
    }
}

/// The encoder every write uses: the object with its new `metadata.resourceVersion`,
/// serialized by the caller ([`crate::encode`]).
pub(super) fn encoder(obj: Value) -> Encoder {
    crate::encode::encoder(obj)
}

fn decode(kv: &KeyValue) -> ApiResult<Value> {
    serde_json::from_slice(&kv.value).map_err(|e| corrupt(&e))
}

impl Registry {
    /// Creates an object. `obj` is in the target's API version.
    pub async fn create(&self, t: &Target, obj: Value, w: &WriteParams) -> ApiResult<Bytes> {
        let rt = t.rt.clone();
        let admitted = self.admit_create(t, obj, w, None).await?;
        let generated = admitted.explicit_name.is_empty() && !admitted.generate.is_empty();
        let attempts = if generated { 8 } else { 1 };
        for attempt in 0..attempts {
            let (name, mut candidate) = self.validate_create(t, &admitted, w, None).await?;
            if w.dry_run {
                return self.api_bytes(&rt, to_bytes(&candidate)?).await;
            }
            let _serialized = self
                .serialized_write(&rt, &admitted.cluster, &mut candidate)
                .await?;
            if !generated {
                let together = self
                    .hooks
                    .of(&rt)
                    .created_together(self, &admitted.cluster, &candidate)
                    .await?;
                if let Some(together) = together {
                    if let Some(out) = self.create_together(t, &name, together).await {
                        return out;
                    }
                    // One of the others was refused: the object is written alone.
                }
            }
            let key = t.key(&name)?;
            let put = {
                let _gate = self.write_gate([admitted.cluster.as_str()]).await?;
                self.storage
                    .put(key, Precondition::MustNotExist, encoder(candidate))
                    .await
            };
            match put {
                Ok(kv) => {
                    self.hooks
                        .of(&rt)
                        .after_create(self, &admitted.cluster, &name)
                        .await?;
                    return self.api_bytes(&rt, kv.value).await;
                }
                Err(kplane_storage::Error::AlreadyExists) if attempt + 1 < attempts => continue,
                Err(kplane_storage::Error::AlreadyExists) if attempts > 1 => {
                    let mut s = Status::already_exists(&rt.group, &rt.plural, &name);
                    s.message = format!(
                        "{} \"{name}\" already exists, the server was not able to generate a unique name for the object",
                        if rt.group.is_empty() { rt.plural.clone() } else { format!("{}.{}", rt.plural, rt.group) }
                    );
                    s.retry_after = Some(1);
                    return Err(ApiError::from(s));
                }
                Err(e) => return Err(storage_error(e, &rt, &name)),
            }
        }
        Err(ApiError::internal("name generation failed"))
    }

    /// Writes a new object (`name`, admitted and validated) in one commit with the objects
    /// its strategy creates together with it ([`WriteHooks::created_together`]), the new
    /// object last. `None` when one of them is refused before the commit (nothing is
    /// written): the caller writes the object alone.
    ///
    /// [`WriteHooks::created_together`]: crate::hooks::WriteHooks::created_together
    async fn create_together(
        &self,
        t: &Target,
        name: &str,
        together: Together<Registry>,
    ) -> Option<ApiResult<Bytes>> {
        let Together { obj, items, finish } = together;
        let mut prepared = self.prepare_batch(items).await;
        if prepared.any_refused() {
            finish(self, false);
            return None;
        }
        let main = match prepared.push(t.clone(), name.to_string(), obj, true) {
            Ok(i) => i,
            Err(e) => {
                finish(self, false);
                return Some(Err(e));
            }
        };
        let mut results = self.commit_batch(prepared).await;
        let written = results
            .iter()
            .enumerate()
            .any(|(i, r)| i != main && r.is_ok());
        finish(self, written);
        Some(results.swap_remove(main))
    }

    /// Creates several named objects (no `generateName`, no dry run), each with its own
    /// write parameters, as [`Registry::create`] does one by one, with their storage writes
    /// committed together ([`kplane_storage::Storage::write_batch`]: few flushes instead
    /// of one each). Every object goes through the same checks, admission and hooks as
    /// alone, each before any is written, so an object whose namespace is created in the
    /// same batch is refused (its namespace does not exist yet when it is admitted) unless
    /// the item says so ([`BatchCreate::in_new_namespace`]). Returns one result per
    /// object, in order; one object's failure does not stop the others.
    pub(crate) async fn create_batch(&self, items: Vec<BatchCreate>) -> Vec<ApiResult<Bytes>> {
        // Types whose writes are serialized (CRDs) hold their clusters' locks for the whole
        // batch (in name order, so two batches cannot deadlock). Batches are the server's own
        // writes (no requester), which call no webhook under the locks.
        let clusters: std::collections::BTreeSet<_> = items
            .iter()
            .filter(|i| i.t.rt.strategy.serialize_writes())
            .filter_map(|i| i.t.cluster().ok().cloned())
            .collect();
        let mut _guards = Vec::with_capacity(clusters.len());
        for c in &clusters {
            _guards.push(self.catalogs.crd_write.lock(c).await);
        }
        let prepared = self.prepare_batch(items).await;
        self.commit_batch(prepared).await
    }

    /// The steps of [`Registry::create_batch`] before anything is written: each object
    /// admitted and validated, those refused with their error.
    pub(super) async fn prepare_batch(&self, items: Vec<BatchCreate>) -> PreparedBatch {
        // The new namespaces later items are created in, as they are to be stored.
        let referred: std::collections::HashSet<usize> =
            items.iter().filter_map(|i| i.in_new_namespace).collect();
        let mut namespaces: std::collections::HashMap<usize, Value> = Default::default();
        let mut p = PreparedBatch::default();
        for (index, item) in items.into_iter().enumerate() {
            let BatchCreate {
                t,
                obj,
                w,
                in_new_namespace,
                hook,
            } = item;
            let new_namespace = match in_new_namespace {
                Some(i) => match namespaces.get(&i) {
                    Some(ns) => Some(ns),
                    None => {
                        let ns = t.namespace.as_deref().unwrap_or("");
                        let e = Status::not_found("", "namespaces", ns);
                        p.results.push(Some(Err(ApiError::from(e))));
                        continue;
                    }
                },
                None => None,
            };
            let prepared = async {
                let admitted = self.admit_create(&t, obj, &w, new_namespace).await?;
                if admitted.explicit_name.is_empty() || w.dry_run {
                    return Err(ApiError::internal("a batch create needs named objects"));
                }
                let (name, candidate) = self
                    .validate_create(&t, &admitted, &w, new_namespace)
                    .await?;
                Ok((name, candidate))
            }
            .await;
            match prepared {
                Ok((name, candidate)) => {
                    let namespace = referred.contains(&index).then(|| candidate.clone());
                    match p.push(t, name, candidate, hook) {
                        Ok(_) => {
                            if let Some(ns) = namespace {
                                namespaces.insert(index, ns);
                            }
                        }
                        Err(e) => p.results.push(Some(Err(e))),
                    }
                }
                Err(e) => p.results.push(Some(Err(e))),
            }
        }
        p
    }

    /// Writes a prepared batch in one [`kplane_storage::Storage::write_batch`] and runs
    /// the hooks of the objects written. One result per object, in order.
    pub(super) async fn commit_batch(&self, p: PreparedBatch) -> Vec<ApiResult<Bytes>> {
        let PreparedBatch {
            mut results,
            writes,
            sent,
        } = p;
        let stored = if writes.is_empty() {
            Vec::new()
        } else {
            // The fence of a move gates these writes like any other (see `write_gate`).
            let clusters: Vec<String> = sent
                .iter()
                .filter_map(|(_, t, _, _)| t.cluster().ok().map(|c| c.as_str().to_string()))
                .collect();
            let gated = self.write_gate(clusters.iter().map(String::as_str)).await;
            match gated {
                Ok(_gate) => self.storage.write_batch(writes).await,
                Err(e) => {
                    for (i, _, _, _) in &sent {
                        results[*i] = Some(Err(e.clone()));
                    }
                    return results
                        .into_iter()
                        .map(|r| {
                            r.unwrap_or_else(|| {
                                Err(ApiError::internal("batch create lost a write"))
                            })
                        })
                        .collect();
                }
            }
        };
        // The committed objects' hooks run concurrently (a namespace's makes its
        // bootstrap objects: their writes share commits too).
        let finished = futures::future::join_all(sent.into_iter().zip(stored).map(
            |((i, t, name, hook), r)| async move {
                let r = match r {
                    Ok(kv) => match t.cluster() {
                        Ok(cluster) if hook => {
                            match self
                                .hooks
                                .of(&t.rt)
                                .after_create(self, cluster, &name)
                                .await
                            {
                                Ok(()) => self.api_bytes(&t.rt, kv.value).await,
                                Err(e) => Err(e),
                            }
                        }
                        Ok(_) => self.api_bytes(&t.rt, kv.value).await,
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(storage_error(e, &t.rt, &name)),
                };
                (i, r)
            },
        ))
        .await;
        for (i, r) in finished {
            results[i] = Some(r);
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(ApiError::internal("batch create lost a write"))))
            .collect()
    }

    /// The steps of a create before the name is settled: type and metadata checks, typed
    /// decoding, the write form, the cluster's existence, defaulting, managed fields and
    /// the mutating admission.
    async fn admit_create(
        &self,
        t: &Target,
        obj: Value,
        w: &WriteParams,
        new_namespace: Option<&Value>,
    ) -> ApiResult<AdmittedCreate> {
        let rt = t.rt.clone();
        if !rt.is_stored() {
            return Err(ApiError::internal("reviews are not stored"));
        }
        let mut obj = obj;
        meta::check_type(&mut obj, &rt)?;
        meta::invalid_if_any(&rt, meta::name_of(&obj), meta::check_meta_types(&obj))?;
        typed::typed_decode(&rt, &mut obj, w, &w.duplicates)?;
        let mut obj = self.write_value(&rt, obj).await?;
        meta::check_namespace(&mut obj, &rt, t.namespace.as_deref())?;
        let generate = meta::meta_str(&obj, "generateName")
            .unwrap_or("")
            .to_string();
        let explicit_name = meta::name_of(&obj).to_string();
        let cluster = t.cluster()?.clone();
        self.refuse_if_terminating(&cluster)?;
        self.refuse_if_fenced(cluster.as_str())?;
        if self.auto_create_clusters() {
            Box::pin(self.ensure_cluster(&cluster)).await?;
        } else {
            self.require_cluster(&cluster)?;
        }
        default_and_canonicalize(&rt, &mut obj);
        super::managed::record_update(&rt, None, &mut obj, None, w);
        let attrs = Attributes {
            operation: Operation::Create,
            resource: &rt,
            subresource: None,
            cluster: &cluster,
            namespace: namespace_of(t),
            name: &explicit_name,
            old: None,
            user: w.user.as_ref(),
            dry_run: w.dry_run,
            new_namespace,
            options: super::admission::RequestOptions::of_write(w),
        };
        self.admission.admit(self, &attrs, Some(&mut obj)).await?;
        // A mutating webhook may have moved the object to another namespace.
        meta::check_namespace(&mut obj, &rt, t.namespace.as_deref())?;
        Ok(AdmittedCreate {
            obj,
            cluster,
            generate,
            explicit_name,
        })
    }

    /// One attempt's steps of a create after admission: the name (generated when asked
    /// for), create-time metadata, the strategy's preparation and status, validation,
    /// warnings, the validating admission and the built-in-name check. Returns the name
    /// and the object to store (its stored form: a custom resource validated in the
    /// request's version is converted to the storage version last).
    async fn validate_create(
        &self,
        t: &Target,
        a: &AdmittedCreate,
        w: &WriteParams,
        new_namespace: Option<&Value>,
    ) -> ApiResult<(String, Value)> {
        let rt = &t.rt;
        let mut candidate = a.obj.clone();
        if a.explicit_name.is_empty() && !a.generate.is_empty() {
            let name = kplane_types::validation::name_from_generate_name(&a.generate);
            meta::meta_mut(&mut candidate)?.insert("name".into(), json!(name));
        }
        meta::prepare_create(&mut candidate, rt)?;
        rt.strategy.prepare_for_create(rt, &mut candidate);
        self.hooks
            .of(rt)
            .controller_status(self, &a.cluster, &mut candidate)
            .await?;
        let name = meta::name_of(&candidate).to_string();
        meta::invalid_if_any(rt, &name, validate(rt, &candidate))?;
        for warning in rt.strategy.warnings(rt, &candidate, None) {
            w.warnings.push(warning);
        }
        self.admission
            .validate(
                self,
                &Attributes {
                    operation: Operation::Create,
                    resource: rt,
                    subresource: None,
                    cluster: &a.cluster,
                    namespace: namespace_of(t),
                    name: &name,
                    old: None,
                    user: w.user.as_ref(),
                    dry_run: w.dry_run,
                    new_namespace,
                    options: super::admission::RequestOptions::of_write(w),
                },
                Some(&candidate),
            )
            .await?;
        // A built-in object exists in every cluster that stores none of its name.
        if self.builtins_of(t).is_some_and(|(b, _)| b.contains(&name)) {
            return Err(ApiError::from(Status::already_exists(
                &rt.group, &rt.plural, &name,
            )));
        }
        let candidate = self.stored_of_write(rt, candidate).await?;
        Ok((name, candidate))
    }

    /// Replaces an object (PUT), or its status / finalize subresource.
    /// Returns the stored object and whether it was created.
    pub async fn update(
        &self,
        t: &Target,
        name: &str,
        sub: Option<&str>,
        mut obj: Value,
        w: &WriteParams,
    ) -> ApiResult<(Bytes, bool)> {
        let rt = t.rt.clone();
        meta::check_type(&mut obj, &rt)?;
        meta::invalid_if_any(&rt, name, meta::check_meta_types(&obj))?;
        typed::typed_decode(&rt, &mut obj, w, &w.duplicates)?;
        let mut obj = self.write_value(&rt, obj).await?;
        meta::check_namespace(&mut obj, &rt, t.namespace.as_deref())?;
        let body_name = meta::name_of(&obj).to_string();
        if body_name.is_empty() {
            meta::meta_mut(&mut obj)?.insert("name".into(), json!(name));
        } else if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let body_rv = meta::body_resource_version(&obj)?;
        // An unconditional update (no resourceVersion) is applied to the object as it is
        // when it commits: when another write commits between the read and the commit (the
        // store's compare-and-swap fails: the object moved), it reads the object again and
        // retries, as kube-apiserver's `GuaranteedUpdate` does. Any other conflict (a uid
        // precondition, a webhook's denial) is the answer.
        let mut attempt = 0;
        loop {
            let retry = body_rv.is_none() && attempt < UPDATE_RETRIES;
            attempt += 1;
            let candidate = if retry {
                obj.clone()
            } else {
                std::mem::take(&mut obj)
            };
            let current = self.get_current(t, name).await?;
            let read = current.as_ref().map(|c| c.mod_revision);
            match self
                .update_once(t, name, sub, candidate, body_rv, current, w)
                .await
            {
                Err(e) if retry && e.is_conflict() && self.moved(t, name, read).await => continue,
                other => return other,
            }
        }
    }

    /// Whether the object `name` is no longer at revision `read` (`None`: absent).
    async fn moved(&self, t: &Target, name: &str, read: Option<u64>) -> bool {
        match self.get_current(t, name).await {
            Ok(now) => now.map(|c| c.mod_revision) != read,
            Err(_) => false,
        }
    }

    /// One attempt of [`Registry::update`] against `current`, the object as read for it.
    #[allow(clippy::too_many_arguments)]
    async fn update_once(
        &self,
        t: &Target,
        name: &str,
        sub: Option<&str>,
        obj: Value,
        body_rv: Option<u64>,
        current: Option<KeyValue>,
        w: &WriteParams,
    ) -> ApiResult<(Bytes, bool)> {
        let rt = t.rt.clone();
        // The body's uid is a precondition, checked before anything else of the update.
        let body_uid = meta::meta_str(&obj, "uid").filter(|u| !u.is_empty());
        if body_uid.is_some() {
            let stored = current.as_ref().map(decode).transpose()?;
            let stored_uid = stored.as_ref().and_then(|o| meta::meta_str(o, "uid"));
            precondition::check_update_uid(
                &rt,
                namespace_of(t),
                name,
                body_uid,
                stored_uid.unwrap_or(""),
            )?;
        }
        let Some(current) = current else {
            if rt.strategy.allow_create_on_update() && sub.is_none() {
                if body_rv.is_some() {
                    return Err(ApiError::from(Status::not_found(
                        &rt.group, &rt.plural, name,
                    )));
                }
                let created = self.create(t, self.api_value(&rt, obj).await?, w).await?;
                return Ok((created, true));
            }
            return Err(ApiError::from(Status::not_found(
                &rt.group, &rt.plural, name,
            )));
        };
        match body_rv {
            Some(rv) if rv != current.mod_revision => {
                return Err(ApiError::from(Status::stale(&rt.group, &rt.plural, name)))
            }
            None if !rt.strategy.allow_unconditional_update() => {
                return Err(ApiError::from(Status::invalid(
                    &rt.group,
                    &rt.kind,
                    name,
                    vec![Cause::new(
                        CauseType::FieldValueInvalid,
                        "metadata.resourceVersion",
                        "Invalid value: 0x0: must be specified for an update",
                    )],
                )))
            }
            _ => {}
        }
        let out = self
            .write_update(t, name, sub, obj, &current, Decoded::Nothing, w)
            .await?;
        Ok((out, false))
    }

    /// Writes of a type whose strategy asks for it (CRDs) are serialised per logical
    /// cluster, so that name-conflict checks see each other: the caller holds the returned
    /// guard from here through its storage write, and `obj`'s controller status is computed
    /// again under it (from the cluster's objects as they are now). Taken after admission,
    /// whose webhooks may take their time: no lock is held across a webhook call, and one
    /// cluster's writes never wait for another's.
    async fn serialized_write(
        &self,
        rt: &ResourceType,
        cluster: &kplane_types::ClusterName,
        obj: &mut Value,
    ) -> ApiResult<Option<tokio::sync::OwnedMutexGuard<()>>> {
        if !rt.strategy.serialize_writes() {
            return Ok(None);
        }
        let guard = self.catalogs.crd_write.lock(cluster).await;
        self.hooks
            .of(rt)
            .controller_status(self, cluster, obj)
            .await?;
        Ok(Some(guard))
    }

    /// Applies the update rules against `current` and commits with a CAS on its revision.
    /// `obj` is in the write form ([`Registry::write_value`]); so is the old object the
    /// rules, admission and validation see: `current` decoded, a custom resource stored in
    /// another version than the request's converted to it (ratcheting compares the request
    /// with that). The new object is converted to the stored form to be stored. `decoded`
    /// is what the caller already decoded of `current`, which spares decoding (or
    /// converting) a large object twice.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn write_update(
        &self,
        t: &Target,
        name: &str,
        sub: Option<&str>,
        obj: Value,
        current: &KeyValue,
        decoded: Decoded,
        w: &WriteParams,
    ) -> ApiResult<Bytes> {
        let rt = &t.rt;
        let cluster = t.cluster()?.clone();
        self.refuse_if_terminating(&cluster)?;
        self.refuse_if_fenced(cluster.as_str())?;
        let (old_stored, read) = match decoded {
            Decoded::Stored(v) => (v, None),
            Decoded::Api(v) => (decode(current)?, Some(v)),
            Decoded::Nothing => (decode(current)?, None),
        };
        let old_write = self.old_write_value(rt, &old_stored, read).await?;
        let old = old_write.as_ref().unwrap_or(&old_stored);
        let attrs = Attributes {
            operation: Operation::Update,
            resource: rt,
            // A scale write reaches the object through the main endpoint.
            subresource: sub.or(w.managed_subresource),
            cluster: &cluster,
            namespace: namespace_of(t),
            name,
            old: Some(old),
            user: w.user.as_ref(),
            dry_run: w.dry_run,
            new_namespace: None,
            options: super::admission::RequestOptions::of_write(w),
        };
        let mut obj = obj;
        self.admission.admit(self, &attrs, Some(&mut obj)).await?;
        // A mutating webhook may have moved the object to another namespace.
        meta::check_namespace(&mut obj, rt, t.namespace.as_deref())?;
        // A server-side apply through a subresource computed the managedFields (its own
        // Apply entry among them): they replace the old object's.
        let applied_managed = match sub {
            Some(_) if w.skip_managed_fields => obj.pointer("/metadata/managedFields").cloned(),
            _ => None,
        };
        let mut new = match sub {
            None => {
                let mut n = obj;
                default_and_canonicalize(rt, &mut n);
                rt.strategy.prepare_for_update(rt, &mut n, old);
                n
            }
            Some(sub) => {
                let mut n = rt
                    .strategy
                    .prepare_for_subresource_update(rt, sub, obj, old)?;
                rt.strategy.canonicalize(rt, &mut n);
                n
            }
        };
        if let (Some(mf), Ok(m)) = (applied_managed, meta::meta_mut(&mut new)) {
            m.insert("managedFields".into(), mf);
        }
        meta::prepare_update(&mut new, old, rt)?;
        if current.create_revision == 0 {
            // The stored object written over a built-in one is a new object: once it is
            // deleted the built-in shows again, and a client waiting for the deletion
            // (`kubectl delete --wait`) tells the two apart by uid.
            let m = meta::meta_mut(&mut new)?;
            m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            m.insert("creationTimestamp".into(), json!(meta::now_time()));
        }
        super::managed::record_update(rt, Some(old), &mut new, sub, w);
        self.hooks
            .of(rt)
            .controller_status(self, &cluster, &mut new)
            .await?;
        if meta::is_deleting(old) {
            let added: Vec<String> = meta::finalizers(&new)
                .into_iter()
                .filter(|f| !meta::finalizers(old).contains(f))
                .collect();
            if !added.is_empty() {
                return Err(ApiError::from(Status::invalid(
                    &rt.group,
                    &rt.kind,
                    name,
                    vec![Cause::forbidden(
                        "metadata.finalizers",
                        &format!("no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"),
                    )],
                )));
            }
        }
        let mut causes = meta::validate_object_meta(&new, rt.strategy.name_rule());
        let mut warnings = Vec::new();
        causes.extend(rt.strategy.validate_update(rt, &new, old, &mut warnings));
        // warnings found by validation come first, as upstream's validators add them
        for warning in warnings {
            w.warnings.push(warning);
        }
        if sub == Some("status") {
            causes.extend(rt.strategy.validate_status_update(rt, &new));
        }
        meta::invalid_if_any(rt, name, causes)?;
        if sub.is_none() {
            for warning in rt.strategy.warnings(rt, &new, Some(old)) {
                w.warnings.push(warning);
            }
        }
        self.admission.validate(self, &attrs, Some(&new)).await?;
        let mut new = self.stored_of_write(rt, new).await?;
        let crd_guard = self.serialized_write(rt, &cluster, &mut new).await?;
        // Nothing changed: no new revision (as Kubernetes does), unless the stored form is
        // stale (encryption at rest under an older key: the write re-encrypts it).
        if equal_but_rv(&new, &old_stored) && !self.storage.stale(current) {
            return self.api_bytes(rt, current.value.clone()).await;
        }
        if w.dry_run {
            let mut preview = new;
            meta::meta_mut(&mut preview)?.insert(
                "resourceVersion".into(),
                json!(current.mod_revision.to_string()),
            );
            return self.api_bytes(rt, to_bytes(&preview)?).await;
        }
        let key = t.key(name)?;
        // A built-in object's first write creates the stored object in its place.
        let pre = match current.create_revision {
            0 => Precondition::MustNotExist,
            _ => Precondition::ModRevision(current.mod_revision),
        };
        // The last finalizer of a deleting object removed: the object goes.
        let gone = meta::is_deleting(&new)
            && meta::finalizers(&new).is_empty()
            && !rt.strategy.holds_deletion(&new);
        let deleting = meta::is_deleting(&new);
        let gate = self.write_gate([cluster.as_str()]).await?;
        let kv = if gone {
            self.storage.delete(key, pre, encoder(new)).await
        } else {
            self.storage.put(key, pre, encoder(new)).await
        }
        .map_err(|e| storage_error(e, rt, name))?;
        drop(gate);
        if gone {
            // The hook may rewrite other CRDs (name recheck), each under the lock.
            drop(crd_guard);
            self.hooks.of(rt).after_delete(self, &cluster, name).await?;
        } else {
            self.hooks
                .of(rt)
                .after_update(self, &cluster, name, deleting)
                .await?;
        }
        self.api_bytes(rt, kv.value).await
    }

    /// Patches an object (JSON patch, merge patch, strategic merge patch).
    pub async fn patch(
        &self,
        t: &Target,
        name: &str,
        sub: Option<&str>,
        ty: PatchType,
        doc: patch::Document,
        w: &WriteParams,
    ) -> ApiResult<Bytes> {
        let rt = t.rt.clone();
        let (parsed, duplicates) = patch::parse_checked(ty, doc)?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let Some(current) = self.get_current(t, name).await? else {
                return Err(ApiError::from(Status::not_found(
                    &rt.group, &rt.plural, name,
                )));
            };
            let api = self.api_bytes(&rt, current.value.clone()).await?;
            let api_is_stored =
                api.as_ptr() == current.value.as_ptr() && api.len() == current.value.len();
            let old_api: Value = serde_json::from_slice(&api).map_err(|e| corrupt(&e))?;
            let patched = patch::apply(&parsed, &old_api, &rt).map_err(|msg| {
                ApiError::from(Status::new(StatusReason::Invalid, msg)).with_code(422)
            })?;
            let mut obj = patched;
            meta::check_type(&mut obj, &rt)?;
            meta::invalid_if_any(&rt, name, meta::check_meta_types(&obj))?;
            typed::typed_decode_patched(&rt, &mut obj, w, &duplicates)?;
            let mut obj = self.write_value(&rt, obj).await?;
            meta::check_namespace(&mut obj, &rt, t.namespace.as_deref())?;
            if meta::name_of(&obj) != name {
                return Err(ApiError::from(Status::invalid(
                    &rt.group,
                    &rt.kind,
                    name,
                    vec![Cause::invalid(
                        "metadata.name",
                        &json!(meta::name_of(&obj)),
                        "field is immutable",
                    )],
                )));
            }
            // A resourceVersion in the patch is an optimistic lock.
            let locked = match meta::body_resource_version(&obj)? {
                Some(rv) if rv != current.mod_revision => {
                    return Err(ApiError::from(Status::stale(&rt.group, &rt.plural, name)))
                }
                Some(_) => patch::mentions_resource_version(&parsed),
                None => false,
            };
            let decoded = if api_is_stored {
                Decoded::Stored(old_api)
            } else {
                Decoded::Api(old_api)
            };
            match self
                .write_update(t, name, sub, obj, &current, decoded, w)
                .await
            {
                Err(e) if e.is_conflict() && !locked && attempt < PATCH_RETRIES => continue,
                other => return other,
            }
        }
    }

    /// Deletes an object, or marks it for deletion when finalizers remain.
    pub async fn delete(
        &self,
        t: &Target,
        name: &str,
        d: &DeleteParams,
    ) -> ApiResult<DeleteOutcome> {
        let rt = t.rt.clone();
        let cluster = t.cluster()?.clone();
        self.refuse_if_terminating(&cluster)?;
        self.refuse_if_fenced(cluster.as_str())?;
        for _ in 0..PATCH_RETRIES {
            let Some(current) = self.get_stored(t, name).await? else {
                if self.builtin_current(t, name).await?.is_some() {
                    return Err(crate::meta::undeletable(&rt, name));
                }
                return Err(ApiError::from(Status::not_found(
                    &rt.group, &rt.plural, name,
                )));
            };
            let obj = decode(&current)?;
            check_delete_preconditions(&rt, name, &obj, current.mod_revision, d)?;
            let attrs = Attributes {
                operation: Operation::Delete,
                resource: &rt,
                subresource: None,
                cluster: &cluster,
                namespace: namespace_of(t),
                name,
                old: Some(&obj),
                user: d.user.as_ref(),
                dry_run: d.dry_run,
                new_namespace: None,
                options: d.admission_options(),
            };
            self.admission.admit_delete(self, &attrs).await?;
            // Serialized types (CRDs): the lock from here through the write (the marked
            // object's status is computed under it below).
            let crd_guard = if rt.strategy.serialize_writes() {
                Some(self.catalogs.crd_write.lock(&cluster).await)
            } else {
                None
            };
            let key = t.key(name)?;
            let pre = Precondition::ModRevision(current.mod_revision);
            // Orphan and Foreground deletion go through the garbage collector's finalizers.
            let gc_finalizer = match d.propagation_policy.as_deref() {
                _ if !rt.strategy.delete_propagates() => None,
                Some("Orphan") => Some(crate::meta::ORPHAN_FINALIZER),
                Some("Foreground") => Some(crate::meta::FOREGROUND_FINALIZER),
                _ => None,
            };
            let needs_mark = !meta::finalizers(&obj).is_empty()
                || gc_finalizer.is_some()
                || rt.strategy.holds_deletion(&obj);
            if needs_mark {
                if meta::is_deleting(&obj) {
                    return Ok(DeleteOutcome::Marked(
                        self.api_bytes(&rt, current.value).await?,
                    ));
                }
                let mut marked = obj;
                let m = meta::meta_mut(&mut marked)?;
                if let Some(f) = gc_finalizer {
                    let fins = m.entry("finalizers").or_insert_with(|| json!([]));
                    if let Value::Array(a) = fins {
                        if !a.iter().any(|x| x == f) {
                            a.push(json!(f));
                        }
                    }
                }
                m.insert("deletionTimestamp".into(), json!(meta::now_time()));
                m.insert("deletionGracePeriodSeconds".into(), json!(0));
                rt.strategy.prepare_for_delete(&rt, &mut marked);
                self.hooks
                    .of(&rt)
                    .controller_status(self, &cluster, &mut marked)
                    .await?;
                if d.dry_run {
                    return Ok(DeleteOutcome::Marked(to_bytes(&marked)?));
                }
                let put = {
                    let _gate = self.write_gate([cluster.as_str()]).await?;
                    self.storage.put(key, pre, encoder(marked)).await
                };
                match put {
                    Ok(kv) => {
                        self.hooks
                            .of(&rt)
                            .after_update(self, &cluster, name, true)
                            .await?;
                        return Ok(DeleteOutcome::Marked(self.api_bytes(&rt, kv.value).await?));
                    }
                    Err(kplane_storage::Error::Conflict { .. }) => continue,
                    Err(e) => return Err(storage_error(e, &rt, name)),
                }
            }
            if d.dry_run {
                return Ok(DeleteOutcome::Deleted(obj));
            }
            let deleted = {
                let _gate = self.write_gate([cluster.as_str()]).await?;
                self.storage.delete(key, pre, encoder(obj)).await
            };
            match deleted {
                Ok(kv) => {
                    // The hook may rewrite other CRDs (name recheck), each under the lock.
                    drop(crd_guard);
                    self.hooks
                        .of(&rt)
                        .after_delete(self, &cluster, name)
                        .await?;
                    return Ok(DeleteOutcome::Deleted(decode(&kv)?));
                }
                Err(kplane_storage::Error::Conflict { .. }) => continue,
                Err(e) => return Err(storage_error(e, &rt, name)),
            }
        }
        Err(ApiError::from(Status::stale(&rt.group, &rt.plural, name)))
    }

    /// Deletes every object matching the list options (`limit` and `continue` are
    /// ignored: the whole collection goes), batch by batch; returns what was deleted or
    /// marked. Objects created while it runs may be deleted too when their names sort
    /// after the batch being deleted (see `Registry::list_to_delete`).
    pub async fn delete_collection(
        &self,
        t: &Target,
        p: &ListParams,
        d: &DeleteParams,
    ) -> ApiResult<(Vec<Bytes>, kplane_storage::Revision)> {
        let mut out = Vec::new();
        self.delete_each(t, p, d, |gone| out.push(gone)).await?;
        Ok((out, self.storage.current_revision()))
    }

    /// [`Registry::delete_collection`] for the server's own controllers (namespace and
    /// CRD cleanup), which need no answer: returns how many objects were deleted or
    /// marked, without holding them all in memory. What is read is discarded, so no object
    /// goes through the CRD's conversion webhook (one that is gone or slow does not keep
    /// the objects, nor the controller's worker).
    pub(super) async fn delete_all(
        &self,
        t: &Target,
        p: &ListParams,
        d: &DeleteParams,
    ) -> ApiResult<usize> {
        let t = &Target {
            rt: crate::conversion::paths::without_webhook(&t.rt, None),
            ..t.clone()
        };
        let mut n = 0;
        self.delete_each(t, p, d, |_| n += 1).await?;
        Ok(n)
    }

    /// Deletes the collection batch by batch, handing each deleted or marked object to
    /// `gone`. Objects that go at once are deleted in storage batches when the options
    /// allow (`bulk_delete`); the rest one by one.
    async fn delete_each(
        &self,
        t: &Target,
        p: &ListParams,
        d: &DeleteParams,
        mut gone: impl FnMut(Bytes) + Send,
    ) -> ApiResult<()> {
        let in_bulk = super::bulk_delete::collection_in_bulk(&t.rt, d);
        let mut page = self.list_to_delete(t, p).await?;
        while let Some(batch) = page.next_batch().await? {
            if in_bulk {
                self.delete_listed_in_bulk(t, batch, d, &mut gone).await?;
                continue;
            }
            for item in batch {
                if let Some(obj) = self.delete_listed(t, &item, d).await? {
                    gone(obj);
                }
            }
        }
        Ok(())
    }

    /// Deletes one item of a listed collection; `None` when it is already gone.
    pub(super) async fn delete_listed(
        &self,
        t: &Target,
        item: &[u8],
        d: &DeleteParams,
    ) -> ApiResult<Option<Bytes>> {
        let v: Value = serde_json::from_slice(item).map_err(|e| corrupt(&e))?;
        let name = meta::name_of(&v).to_string();
        let target = super::bulk_delete::item_target(t, &v);
        match self.delete(&target, &name, d).await {
            Ok(DeleteOutcome::Deleted(obj)) => {
                Ok(Some(self.api_bytes(&t.rt, to_bytes(&obj)?).await?))
            }
            Ok(DeleteOutcome::Marked(b)) => Ok(Some(b)),
            Err(e) if e.code() == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The namespace a write goes to ("" for a cluster-scoped resource).
fn namespace_of(t: &Target) -> &str {
    match &t.namespace {
        Some(ns) if t.rt.namespaced => ns,
        _ => "",
    }
}

/// The type's defaulting, then its stored form (on create and on a main-endpoint update).
pub(crate) fn default_and_canonicalize(rt: &ResourceType, obj: &mut Value) {
    rt.strategy.default(rt, obj);
    rt.strategy.canonicalize(rt, obj);
}

/// Validation on create: the generic ObjectMeta rules with the type's name rule, then the
/// type's own. (An update's is in `write_update`, with the validation's warnings.)
fn validate(rt: &ResourceType, obj: &Value) -> Vec<Cause> {
    let mut causes = meta::validate_object_meta(obj, rt.strategy.name_rule());
    causes.extend(rt.strategy.validate(rt, obj, None));
    causes
}

pub(super) fn check_delete_preconditions(
    rt: &super::ResourceType,
    name: &str,
    obj: &Value,
    rev: Revision,
    d: &DeleteParams,
) -> ApiResult<()> {
    if let Some(uid) = &d.precondition_uid {
        let actual = meta::meta_str(obj, "uid").unwrap_or("");
        if uid != actual {
            return Err(ApiError::from(Status::conflict(
                &rt.group,
                &rt.plural,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                ),
            )));
        }
    }
    if let Some(rv) = &d.precondition_rv {
        if *rv != rev.to_string() {
            return Err(ApiError::from(Status::conflict(
                &rt.group,
                &rt.plural,
                name,
                &format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {rev}"),
            )));
        }
    }
    Ok(())
}

/// Whether two objects are equal apart from `metadata.resourceVersion` (without copying
/// them: objects can be large).
fn equal_but_rv(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    let meta_eq = |x: Option<&Value>, y: Option<&Value>| match (x, y) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let rv = "resourceVersion";
            x.iter()
                .filter(|(k, _)| k.as_str() != rv)
                .all(|(k, v)| y.get(k) == Some(v))
                && y.keys().filter(|k| k.as_str() != rv).count()
                    == x.keys().filter(|k| k.as_str() != rv).count()
        }
        (x, y) => x == y,
    };
    a.len() == b.len()
        && a.iter().all(|(k, v)| match k.as_str() {
            "metadata" => meta_eq(Some(v), b.get(k)),
            _ => b.get(k) == Some(v),
        })
}

fn to_bytes(v: &Value) -> ApiResult<Bytes> {
    serde_json::to_vec(v)
        .map(Bytes::from)
        .map_err(|e| ApiError::internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equality_ignores_only_the_resource_version() {
        let a = json!({"metadata": {"name": "x", "resourceVersion": "1"}, "data": {"a": "1"}});
        let b = json!({"metadata": {"name": "x", "resourceVersion": "2"}, "data": {"a": "1"}});
        let c = json!({"metadata": {"name": "x"}, "data": {"a": "1"}});
        let d = json!({"metadata": {"name": "x", "labels": {}}, "data": {"a": "1"}});
        let e = json!({"metadata": {"name": "x"}, "data": {"a": "2"}});
        assert!(equal_but_rv(&a, &b));
        assert!(equal_but_rv(&a, &c) && equal_but_rv(&c, &a));
        assert!(!equal_but_rv(&c, &d) && !equal_but_rv(&d, &c));
        assert!(!equal_but_rv(&c, &e));
    }

    /// An object may be created in a namespace the same batch creates before it when the
    /// item says so (admission takes the namespace as existing); one whose namespace is
    /// refused is refused as in a missing namespace. Each hook runs unless the item says
    /// the batch carries what it would create.
    #[tokio::test]
    async fn a_batch_creates_objects_in_its_new_namespaces_when_told() {
        use crate::testing::{configmap, fixture, target};
        let f = fixture().await;
        let reg = &f.reg;
        let nst = target(reg, "", "namespaces", None);
        let ns =
            |n: &str| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}});
        let w = WriteParams::default();
        let cm = |n: &str| target(reg, "", "configmaps", Some(n));
        let items = vec![
            BatchCreate {
                hook: false,
                ..BatchCreate::new(nst.clone(), ns("fresh"), w.clone())
            },
            BatchCreate::new(nst.clone(), ns("Bad_Name"), w.clone()),
            BatchCreate {
                in_new_namespace: Some(0),
                ..BatchCreate::new(cm("fresh"), configmap("one", "g"), w.clone())
            },
            BatchCreate {
                in_new_namespace: Some(1),
                ..BatchCreate::new(cm("Bad_Name"), configmap("two", "g"), w.clone())
            },
            BatchCreate::new(cm("fresh"), configmap("three", "g"), w.clone()),
        ];
        let codes: Vec<u16> = reg
            .create_batch(items)
            .await
            .iter()
            .map(|r| r.as_ref().map_or_else(|e| e.code(), |_| 201))
            .collect();
        assert_eq!(codes, [201, 422, 201, 404, 404]);
        reg.get(&cm("fresh"), "one").await.unwrap();
        // The namespace's hook did not run: no bootstrap objects.
        let sa = target(reg, "", "serviceaccounts", Some("fresh"));
        assert_eq!(reg.get(&sa, "default").await.unwrap_err().code(), 404);
    }

    /// A batch create: each object passes or fails on its own (an existing name, a missing
    /// namespace, a name to generate), the others are stored each with its own uid and
    /// resourceVersion, and the stored ones' hooks ran (a new namespace's bootstrap
    /// objects).
    #[tokio::test]
    async fn a_batch_create_stores_each_object_alone_and_runs_its_hooks() {
        use crate::testing::{configmap, fixture, target};
        let f = fixture().await;
        let reg = &f.reg;
        let nst = target(reg, "", "namespaces", None);
        let ns =
            |n: &str| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}});
        let items = vec![
            (nst.clone(), ns("a")),
            (nst.clone(), ns("default")),
            (
                target(reg, "", "configmaps", Some("default")),
                configmap("one", "g"),
            ),
            (
                target(reg, "", "configmaps", Some("missing")),
                configmap("two", "g"),
            ),
            (
                nst.clone(),
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "g-"}}),
            ),
            (nst.clone(), ns("b")),
        ];
        let w = WriteParams::default();
        let items = items
            .into_iter()
            .map(|(t, o)| BatchCreate::new(t, o, w.clone()))
            .collect();
        let results = reg.create_batch(items).await;
        let codes: Vec<u16> = results
            .iter()
            .map(|r| r.as_ref().map_or_else(|e| e.code(), |_| 201))
            .collect();
        assert_eq!(codes, [201, 409, 201, 404, 500, 201]);
        let mut revisions = Vec::new();
        let mut uids = std::collections::HashSet::new();
        for r in results.into_iter().flatten() {
            let v: Value = serde_json::from_slice(&r).unwrap();
            revisions.push(
                v["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .parse::<u64>()
                    .unwrap(),
            );
            assert!(uids.insert(v["metadata"]["uid"].as_str().unwrap().to_string()));
        }
        assert!(revisions.windows(2).all(|w| w[0] < w[1]), "{revisions:?}");
        let cms = target(reg, "", "configmaps", Some("default"));
        reg.get(&cms, "one").await.unwrap();
        for n in ["a", "b"] {
            reg.get(&nst, n).await.unwrap();
            let sa = target(reg, "", "serviceaccounts", Some(n));
            reg.get(&sa, "default").await.unwrap();
            let cm = target(reg, "", "configmaps", Some(n));
            reg.get(&cm, "kube-root-ca.crt").await.unwrap();
        }
        // Nothing of the refused ones was stored.
        let missing = target(reg, "", "configmaps", Some("missing"));
        assert_eq!(reg.get(&missing, "two").await.unwrap_err().code(), 404);
    }

    /// A create together with other objects: one commit for all when each passes its
    /// checks (the new object last, with the highest resourceVersion; `finish` told they
    /// were written); nothing written when one is refused (`finish` told so, and the caller
    /// gets the object back to write alone); a new object whose name is taken fails alone.
    #[tokio::test]
    async fn a_create_together_commits_all_or_hands_the_object_back() {
        use crate::testing::{configmap, fixture, target};
        use std::sync::{Arc, Mutex};
        let f = fixture().await;
        let reg = &f.reg;
        let w = WriteParams::default();
        let cms = target(reg, "", "configmaps", Some("default"));
        let nst = target(reg, "", "namespaces", None);
        let cm = |n: &str| target(reg, "", "configmaps", Some(n));
        let ns =
            |n: &str| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}});
        let admitted = reg
            .admit_create(&cms, configmap("main", "g"), &w, None)
            .await
            .unwrap();
        let (name, obj) = reg
            .validate_create(&cms, &admitted, &w, None)
            .await
            .unwrap();
        let told = Arc::new(Mutex::new(Vec::new()));
        let together = |items: Vec<BatchCreate>| {
            let told = told.clone();
            Together {
                obj: obj.clone(),
                items,
                finish: Box::new(move |_: &Registry, written: bool| {
                    told.lock().unwrap().push(written)
                }),
            }
        };
        let groups = || reg.storage().stats().commit_groups;
        let rv = |v: &Value| {
            v["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        };

        // One refused: nothing is written.
        let before = groups();
        let items = vec![
            BatchCreate {
                hook: false,
                ..BatchCreate::new(nst.clone(), ns("t1"), w.clone())
            },
            BatchCreate::new(cm("default"), configmap("Bad_Name", "g"), w.clone()),
        ];
        assert!(reg
            .create_together(&cms, &name, together(items))
            .await
            .is_none());
        assert_eq!(*told.lock().unwrap(), [false]);
        assert_eq!(groups(), before);
        assert_eq!(reg.get(&nst, "t1").await.unwrap_err().code(), 404);
        assert_eq!(reg.get(&cms, "main").await.unwrap_err().code(), 404);

        // All pass: one commit, the new object last.
        let items = vec![
            BatchCreate {
                hook: false,
                ..BatchCreate::new(nst.clone(), ns("t1"), w.clone())
            },
            BatchCreate {
                in_new_namespace: Some(0),
                ..BatchCreate::new(cm("t1"), configmap("one", "g"), w.clone())
            },
        ];
        let out = reg
            .create_together(&cms, &name, together(items))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(*told.lock().unwrap(), [false, true]);
        assert_eq!(groups(), before + 1);
        let main: Value = serde_json::from_slice(&out).unwrap();
        let t1: Value = serde_json::from_slice(&reg.get(&nst, "t1").await.unwrap()).unwrap();
        let one: Value = serde_json::from_slice(&reg.get(&cm("t1"), "one").await.unwrap()).unwrap();
        assert!(rv(&t1) < rv(&one) && rv(&one) < rv(&main));
        reg.get(&cms, "main").await.unwrap();
        // The namespace's hook did not run (the item said so): no bootstrap objects.
        let sa = target(reg, "", "serviceaccounts", Some("t1"));
        assert_eq!(reg.get(&sa, "default").await.unwrap_err().code(), 404);

        // The name is taken: 409 for it, the others are written on their own.
        let items = vec![BatchCreate::new(nst.clone(), ns("t2"), w.clone())];
        let err = reg
            .create_together(&cms, &name, together(items))
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(err.code(), 409);
        assert_eq!(*told.lock().unwrap(), [false, true, true]);
        reg.get(&nst, "t2").await.unwrap();
    }
}
