//! The uid a write's body carries, as kube-apiserver treats it:
//!
//! - create (POST): ignored, the object gets a new uid (`rest.FillObjectMetaSystemFields`);
//! - update (PUT, also of a missing object, and through `/status`): a precondition
//!   (`rest.defaultUpdatedObjectInfo.Preconditions`) that storage checks against the stored
//!   object, or an empty one when there is none (`storage.Preconditions.Check`), before
//!   anything else of the update; a mismatch is the storage error `InvalidObj`, which
//!   `storeerr.InterpretUpdateError` makes a 409 `Conflict` whose message is the
//!   `StorageError` text with the etcd key;
//! - server-side apply of a missing object: the patch handler refuses an object it would
//!   create with a uid (`patcher.applyPatch`: 409 `uid mismatch: ...`); of an existing one,
//!   a different uid is the update validation's 422 `field is immutable`.

use kplane_types::Status;

use crate::catalog::ResourceType;
use crate::error::ApiError;

/// The key kube-apiserver's etcd3 store names in its errors: `/registry/` + the resource's
/// storage prefix (the plural for kube-apiserver's own groups, `<group>/<plural>` for CRDs
/// and custom resources, and for kplane's own kinds, which kcp keeps as CRDs) + namespace
/// and name.
fn etcd_key(rt: &ResourceType, namespace: &str, name: &str) -> String {
    let kube_storage = rt.custom.is_none()
        && rt.group != "apiextensions.k8s.io"
        && !rt.group.ends_with("kplane.io");
    let prefix = if kube_storage {
        // Storage resources are `<group>/<plural>` (events.k8s.io shares core's `/events`).
        let plural = rt.storage_resource.rsplit('/').next().unwrap_or(&rt.plural);
        plural.to_string()
    } else {
        format!("{}/{}", rt.group, rt.plural)
    };
    if namespace.is_empty() {
        format!("/registry/{prefix}/{name}")
    } else {
        format!("/registry/{prefix}/{namespace}/{name}")
    }
}

/// The update precondition of a body's `metadata.uid` (none when absent or empty): the
/// stored object's uid (`""` when there is no stored object) must be the same.
pub(crate) fn check_update_uid(
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    body_uid: Option<&str>,
    stored_uid: &str,
) -> Result<(), ApiError> {
    let Some(uid) = body_uid.filter(|u| !u.is_empty()) else {
        return Ok(());
    };
    if uid == stored_uid {
        return Ok(());
    }
    let key = etcd_key(rt, namespace, name);
    let why = format!(
        "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {uid}, UID in object meta: {stored_uid}"
    );
    Err(ApiError::from(Status::conflict(
        &rt.group, &rt.plural, name, &why,
    )))
}

/// The patch handler's refusal of an apply that would create an object with a uid.
pub(crate) fn check_apply_create_uid(
    rt: &ResourceType,
    name: &str,
    applied_uid: Option<&str>,
) -> Result<(), ApiError> {
    match applied_uid.filter(|u| !u.is_empty()) {
        None => Ok(()),
        Some(uid) => Err(ApiError::from(Status::conflict(
            &rt.group,
            &rt.plural,
            name,
            &format!(
                "uid mismatch: the provided object specified uid {uid}, and no existing object was found"
            ),
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin_types::builtin;

    fn rt(group: &str, plural: &str) -> ResourceType {
        builtin()
            .into_iter()
            .find(|r| r.group == group && r.plural == plural)
            .unwrap()
    }

    #[test]
    fn keys_are_kube_apiserver_s_etcd_keys() {
        assert_eq!(
            etcd_key(&rt("", "configmaps"), "default", "a"),
            "/registry/configmaps/default/a"
        );
        assert_eq!(
            etcd_key(&rt("events.k8s.io", "events"), "default", "e"),
            "/registry/events/default/e"
        );
        assert_eq!(
            etcd_key(&rt("rbac.authorization.k8s.io", "clusterroles"), "", "r"),
            "/registry/clusterroles/r"
        );
        assert_eq!(
            etcd_key(
                &rt("apiextensions.k8s.io", "customresourcedefinitions"),
                "",
                "a.b.c"
            ),
            "/registry/apiextensions.k8s.io/customresourcedefinitions/a.b.c"
        );
    }

    #[test]
    fn update_uid_mismatch_is_the_storage_conflict() {
        let cm = rt("", "configmaps");
        assert!(check_update_uid(&cm, "default", "a", None, "").is_ok());
        assert!(check_update_uid(&cm, "default", "a", Some(""), "u1").is_ok());
        assert!(check_update_uid(&cm, "default", "a", Some("u1"), "u1").is_ok());
        let e = check_update_uid(&cm, "default", "a", Some("u1"), "").unwrap_err();
        assert_eq!(e.code(), 409);
        assert_eq!(
            e.0.message,
            "Operation cannot be fulfilled on configmaps \"a\": StorageError: invalid object, Code: 4, Key: /registry/configmaps/default/a, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: u1, UID in object meta: "
        );
    }

    #[test]
    fn apply_create_with_a_uid_is_a_uid_mismatch() {
        let cm = rt("", "configmaps");
        assert!(check_apply_create_uid(&cm, "a", None).is_ok());
        assert!(check_apply_create_uid(&cm, "a", Some("")).is_ok());
        let e = check_apply_create_uid(&cm, "a", Some("u1")).unwrap_err();
        assert_eq!(e.code(), 409);
        assert_eq!(
            e.0.message,
            "Operation cannot be fulfilled on configmaps \"a\": uid mismatch: the provided object specified uid u1, and no existing object was found"
        );
    }
}
