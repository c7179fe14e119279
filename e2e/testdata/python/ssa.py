"""The official Python client's DynamicClient (`kubernetes.dynamic`): legacy discovery of
every group-version, CRUD through discovered resources, and server-side apply
(`server_side_apply`, an `application/apply-patch+yaml` PATCH): create, update by the same
field manager, a conflict with another manager (409 Conflict with upstream's message and
causes), `force_conflicts` taking the field over, and managedFields as upstream records them;
a CRD created through it, applies to its objects and a dynamic watch."""

import json
import time

from kubernetes import client, dynamic
from kubernetes.client.rest import ApiException
from kubernetes.dynamic.exceptions import ResourceNotFoundError
from kplane_check import api_client, check, check_eq, fail

NS = "py-ssa"


def apply_body(data):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "applied", "namespace": NS}, "data": data}


def managers(obj):
    return {e["manager"]: (e["operation"], sorted(e["fieldsV1"].get("f:data", {})))
            for e in obj["metadata"].get("managedFields", [])}


def custom_resources(dyn):
    """A CRD created through the dynamic client is found by its (re-)discovery; applies of
    two managers to a `set` list merge; the dynamic watch sees the object."""
    crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1",
                             kind="CustomResourceDefinition")
    spec_schema = {"type": "object", "properties": {
        "n": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"},
                 "x-kubernetes-list-type": "set"}}}
    dyn.create(crds, body={
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.org"},
        "spec": {"group": "example.org", "scope": "Namespaced",
                 "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "properties": {"spec": spec_schema}}}}]}})
    deadline = time.monotonic() + 30
    while True:
        crd = dyn.get(crds, name="gizmos.example.org").to_dict()
        if any(c["type"] == "Established" and c["status"] == "True"
               for c in crd.get("status", {}).get("conditions") or []):
            break
        check(time.monotonic() < deadline, f"CRD not Established: {crd.get('status')}")
        time.sleep(0.05)
    # Not in the cached discovery: the client refreshes it once and finds the kind.
    gizmos = dyn.resources.get(api_version="example.org/v1", kind="Gizmo")
    check(gizmos.namespaced, "Gizmo is not namespaced in discovery")

    def gizmo(spec):
        return {"apiVersion": "example.org/v1", "kind": "Gizmo",
                "metadata": {"name": "g1", "namespace": NS}, "spec": spec}

    dyn.server_side_apply(gizmos, body=gizmo({"n": 1, "tags": ["a"]}), field_manager="m1")
    merged = dyn.server_side_apply(gizmos, body=gizmo({"tags": ["b"]}),
                                   field_manager="m2").to_dict()
    check_eq(merged["spec"], {"n": 1, "tags": ["a", "b"]}, "set list applied by two managers")
    check_eq(sorted(e["manager"] for e in merged["metadata"]["managedFields"]), ["m1", "m2"],
             "managers of the custom object")

    seen = []
    for event in dyn.watch(gizmos, namespace=NS, timeout=60):
        seen.append((event["type"], event["object"].metadata.name))
        break
    check_eq(seen, [("ADDED", "g1")], "dynamic watch of the custom object")
    dyn.delete(gizmos, name="g1", namespace=NS)


def main():
    with api_client() as api:
        dyn = dynamic.DynamicClient(api)
        # Discovery found the built-in groups.
        cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
        check(cms.namespaced, "ConfigMaps are not namespaced in discovery")
        check_eq(cms.name, "configmaps", "ConfigMap resource name")
        namespaces = dyn.resources.get(api_version="v1", kind="Namespace")
        for group_version, kind in [("batch/v1", "Job"), ("coordination.k8s.io/v1", "Lease"),
                                    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
                                    ("apiextensions.k8s.io/v1", "CustomResourceDefinition")]:
            dyn.resources.get(api_version=group_version, kind=kind)
        try:
            dyn.resources.get(api_version="v1", kind="NoSuchKind")
            fail("discovery found a kind that does not exist")
        except ResourceNotFoundError:
            pass

        dyn.create(namespaces, body={"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": NS}})

        # Apply creates the object, owned by the applying manager.
        created = dyn.server_side_apply(cms, body=apply_body({"a": "1", "b": "2"}),
                                        field_manager="py-one").to_dict()
        check_eq(created["data"], {"a": "1", "b": "2"}, "applied data")
        check_eq(managers(created), {"py-one": ("Apply", ["f:a", "f:b"])}, "managedFields")

        # The same manager applying less removes the field it no longer applies.
        updated = dyn.server_side_apply(cms, body=apply_body({"a": "1"}),
                                        field_manager="py-one").to_dict()
        check_eq(updated["data"], {"a": "1"}, "data after applying fewer fields")

        # Another manager changing a field it does not own: 409 Conflict.
        try:
            dyn.server_side_apply(cms, body=apply_body({"a": "other"}), field_manager="py-two")
            fail("a conflicting apply succeeded")
        except ApiException as e:
            check_eq(e.status, 409, "conflict status")
            status = json.loads(e.body)
            check_eq(status["reason"], "Conflict", "conflict reason")
            check_eq(status["message"],
                     'Apply failed with 1 conflict: conflict with "py-one": .data.a',
                     "conflict message")
            check_eq(status["details"]["causes"],
                     [{"reason": "FieldManagerConflict", "message":
                       'conflict with "py-one"', "field": ".data.a"}], "conflict causes")

        # A non-conflicting field is shared; force takes the conflicting one over.
        forced = dyn.server_side_apply(cms, body=apply_body({"a": "other", "c": "3"}),
                                       field_manager="py-two", force_conflicts=True).to_dict()
        check_eq(forced["data"], {"a": "other", "c": "3"}, "forced data")
        check_eq(managers(forced), {"py-two": ("Apply", ["f:a", "f:c"])},
                 "managedFields after force")

        # An Update (merge patch through the dynamic client) is recorded too.
        patched = dyn.patch(cms, name="applied", namespace=NS, body={"data": {"d": "4"}},
                            content_type="application/merge-patch+json",
                            field_manager="py-patch").to_dict()
        check_eq(managers(patched)["py-patch"], ("Update", ["f:d"]), "Update entry")

        custom_resources(dyn)

        # Get, list and delete through the dynamic client.
        got = dyn.get(cms, name="applied", namespace=NS)
        check_eq(got.data.d, "4", "dynamic get")
        listed = dyn.get(cms, namespace=NS)
        check("applied" in [i.metadata.name for i in listed.items], "dynamic list")
        dyn.delete(cms, name="applied", namespace=NS)
        try:
            dyn.get(cms, name="applied", namespace=NS)
            fail("the deleted object is still there")
        except ApiException as e:
            check_eq(e.status, 404, "get after delete")
    print("ok")


if __name__ == "__main__":
    main()
