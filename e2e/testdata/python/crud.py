"""CRUD with the typed APIs of the official Python client against one logical cluster:
ConfigMaps (CoreV1Api), a CRD (ApiextensionsV1Api) and its objects (CustomObjectsApi,
including the status and scale subresources and a watch), a Job (BatchV1Api) and
`utils.create_from_yaml`. Errors must be ApiExceptions with kube-apiserver's Status bodies."""

import time

from kubernetes import client, utils, watch
from kplane_check import api_client, check, check_eq, env, expect_api_error, fail

NS = "py-crud"
GROUP = "example.com"
PLURAL = "widgets"


def configmaps(api):
    v1 = client.CoreV1Api(api)
    v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
    cm = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="one", labels={"app": "py"}),
        data={"k": "v"})
    created = v1.create_namespaced_config_map(NS, cm)
    check_eq(created.metadata.name, "one", "created name")
    check_eq(created.metadata.namespace, NS, "created namespace")
    check(created.metadata.uid, "created object has no uid")
    check(created.metadata.resource_version, "created object has no resourceVersion")
    check(created.metadata.creation_timestamp is not None, "no creationTimestamp")

    got = v1.read_namespaced_config_map("one", NS)
    check_eq(got.data, {"k": "v"}, "read data")
    check_eq(got.metadata.uid, created.metadata.uid, "read uid")

    expect_api_error(lambda: v1.create_namespaced_config_map(NS, cm), 409, "AlreadyExists",
                     'configmaps "one" already exists', "create twice")
    expect_api_error(lambda: v1.read_namespaced_config_map("missing", NS), 404, "NotFound",
                     'configmaps "missing" not found', "read missing")

    # Replace with the current resourceVersion, then again with the stale one: Conflict.
    got.data = {"k": "v2"}
    replaced = v1.replace_namespaced_config_map("one", NS, got)
    check_eq(replaced.data, {"k": "v2"}, "replaced data")
    check(replaced.metadata.resource_version != got.metadata.resource_version,
          "replace did not change the resourceVersion")
    got.data = {"k": "stale"}
    expect_api_error(
        lambda: v1.replace_namespaced_config_map("one", NS, got), 409, "Conflict",
        'Operation cannot be fulfilled on configmaps "one": the object has been modified; '
        "please apply your changes to the latest version and try again", "stale replace")

    # The client sends a dict body of patch_* as a strategic merge patch.
    patched = v1.patch_namespaced_config_map("one", NS, {"data": {"added": "yes"}})
    check_eq(patched.data, {"k": "v2", "added": "yes"}, "patched data")

    # A list body is sent as a JSON patch.
    patched = v1.patch_namespaced_config_map(
        "one", NS, [{"op": "add", "path": "/data/json", "value": "patch"}])
    check_eq(patched.data, {"k": "v2", "added": "yes", "json": "patch"}, "JSON-patched data")

    # dry_run: the answer of a create, nothing stored.
    dry = v1.create_namespaced_config_map(
        NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="dry")), dry_run="All")
    check_eq(dry.metadata.name, "dry", "dry-run create answer")
    expect_api_error(lambda: v1.read_namespaced_config_map("dry", NS), 404, "NotFound",
                     'configmaps "dry" not found', "read after a dry-run create")

    listed = v1.list_namespaced_config_map(NS, label_selector="app=py")
    check_eq([c.metadata.name for c in listed.items], ["one"], "list by label")
    check(listed.metadata.resource_version, "list has no resourceVersion")
    check_eq(listed.api_version, "v1", "list apiVersion")
    check_eq(listed.kind, "ConfigMapList", "list kind")
    none = v1.list_namespaced_config_map(NS, label_selector="app=other")
    check_eq(none.items, [], "list by a label nobody has")

    status = v1.delete_namespaced_config_map("one", NS)
    check(status is not None, "delete returned nothing")
    expect_api_error(lambda: v1.read_namespaced_config_map("one", NS), 404, "NotFound",
                     'configmaps "one" not found', "read deleted")
    expect_api_error(lambda: v1.delete_namespaced_config_map("one", NS), 404, "NotFound",
                     'configmaps "one" not found', "delete deleted")


def crd_and_custom_objects(api):
    ext = client.ApiextensionsV1Api(api)
    schema = client.V1JSONSchemaProps(
        type="object",
        properties={
            "spec": client.V1JSONSchemaProps(
                type="object",
                properties={"size": client.V1JSONSchemaProps(type="integer"),
                            "color": client.V1JSONSchemaProps(type="string")}),
            "status": client.V1JSONSchemaProps(
                type="object",
                properties={"ready": client.V1JSONSchemaProps(type="boolean"),
                            "replicas": client.V1JSONSchemaProps(type="integer")}),
        })
    crd = client.V1CustomResourceDefinition(
        metadata=client.V1ObjectMeta(name=f"{PLURAL}.{GROUP}"),
        spec=client.V1CustomResourceDefinitionSpec(
            group=GROUP,
            scope="Namespaced",
            names=client.V1CustomResourceDefinitionNames(
                plural=PLURAL, singular="widget", kind="Widget", short_names=["wd"]),
            versions=[client.V1CustomResourceDefinitionVersion(
                name="v1", served=True, storage=True,
                schema=client.V1CustomResourceValidation(open_apiv3_schema=schema),
                subresources=client.V1CustomResourceSubresources(
                    status={},
                    scale=client.V1CustomResourceSubresourceScale(
                        spec_replicas_path=".spec.size",
                        status_replicas_path=".status.replicas")))]))
    ext.create_custom_resource_definition(crd)
    deadline = time.monotonic() + 30
    while True:
        got = ext.read_custom_resource_definition(f"{PLURAL}.{GROUP}")
        conditions = {c.type: c.status for c in (got.status.conditions or [])}
        if conditions.get("Established") == "True":
            break
        if time.monotonic() > deadline:
            fail(f"CRD not Established: {got.status}")
        time.sleep(0.05)
    check_eq(got.status.accepted_names.kind, "Widget", "accepted kind")

    co = client.CustomObjectsApi(api)
    body = {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
            "metadata": {"name": "w1"}, "spec": {"size": 3, "color": "red"}}
    created = co.create_namespaced_custom_object(GROUP, "v1", NS, PLURAL, body)
    check_eq(created["spec"], {"size": 3, "color": "red"}, "created spec")
    check(created["metadata"].get("uid"), "custom object without uid")
    got = co.get_namespaced_custom_object(GROUP, "v1", NS, PLURAL, "w1")
    check_eq(got["metadata"]["uid"], created["metadata"]["uid"], "custom object uid")
    expect_api_error(lambda: co.create_namespaced_custom_object(GROUP, "v1", NS, PLURAL, body),
                     409, "AlreadyExists", f'{PLURAL}.{GROUP} "w1" already exists',
                     "create custom object twice")
    expect_api_error(
        lambda: co.get_namespaced_custom_object(GROUP, "v1", NS, PLURAL, "missing"),
        404, "NotFound", f'{PLURAL}.{GROUP} "missing" not found', "get missing custom object")

    # Schema validation: a string where an integer belongs is 422 Invalid.
    bad = {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
           "metadata": {"name": "bad"}, "spec": {"size": "three"}}
    status = expect_api_error(
        lambda: co.create_namespaced_custom_object(GROUP, "v1", NS, PLURAL, bad),
        422, "Invalid", what="invalid custom object")
    check("spec.size" in status.get("message", ""), f"invalid message: {status}")

    # CustomObjectsApi sends dict patches as merge patches.
    patched = co.patch_namespaced_custom_object(GROUP, "v1", NS, PLURAL, "w1",
                                                {"spec": {"color": "blue"}})
    check_eq(patched["spec"], {"size": 3, "color": "blue"}, "patched spec")

    got = co.get_namespaced_custom_object(GROUP, "v1", NS, PLURAL, "w1")
    got["spec"]["size"] = 4
    replaced = co.replace_namespaced_custom_object(GROUP, "v1", NS, PLURAL, "w1", got)
    check_eq(replaced["spec"]["size"], 4, "replaced size")

    # The status subresource: the main resource ignores status, /status ignores spec.
    replaced["status"] = {"ready": True}
    replaced["spec"]["size"] = 99
    after = co.replace_namespaced_custom_object_status(GROUP, "v1", NS, PLURAL, "w1", replaced)
    check_eq(after.get("status"), {"ready": True}, "status after /status")
    check_eq(after["spec"]["size"], 4, "spec after /status")
    patched = co.patch_namespaced_custom_object_status(GROUP, "v1", NS, PLURAL, "w1",
                                                       {"status": {"ready": False}})
    check_eq(patched["status"], {"ready": False}, "patched status")

    # The scale subresource: an autoscaling/v1 Scale over .spec.size.
    scale = co.get_namespaced_custom_object_scale(GROUP, "v1", NS, PLURAL, "w1")
    check_eq((scale["apiVersion"], scale["kind"]), ("autoscaling/v1", "Scale"), "scale kind")
    check_eq(scale["spec"], {"replicas": 4}, "scale spec")
    scaled = co.patch_namespaced_custom_object_scale(GROUP, "v1", NS, PLURAL, "w1",
                                                     {"spec": {"replicas": 6}})
    check_eq(scaled["spec"], {"replicas": 6}, "patched scale")
    check_eq(co.get_namespaced_custom_object(GROUP, "v1", NS, PLURAL, "w1")["spec"]["size"], 6,
             "size after scaling")

    listed = co.list_namespaced_custom_object(GROUP, "v1", NS, PLURAL)
    check_eq(listed["kind"], "WidgetList", "custom list kind")
    check_eq([i["metadata"]["name"] for i in listed["items"]], ["w1"], "custom list names")
    everywhere = co.list_cluster_custom_object(GROUP, "v1", PLURAL)
    check_eq([i["metadata"]["name"] for i in everywhere["items"]], ["w1"],
             "custom list over all namespaces")

    # A watch of custom objects from the list's resourceVersion sees the delete.
    co.delete_namespaced_custom_object(GROUP, "v1", NS, PLURAL, "w1")
    w = watch.Watch()
    seen = []
    for event in w.stream(co.list_namespaced_custom_object, GROUP, "v1", NS, PLURAL,
                          resource_version=listed["metadata"]["resourceVersion"],
                          timeout_seconds=60):
        seen.append((event["type"], event["object"]["metadata"]["name"]))
        w.stop()
    check_eq(seen, [("DELETED", "w1")], "custom object watch")
    expect_api_error(lambda: co.get_namespaced_custom_object(GROUP, "v1", NS, PLURAL, "w1"),
                     404, "NotFound", f'{PLURAL}.{GROUP} "w1" not found',
                     "get deleted custom object")


def job(api):
    batch = client.BatchV1Api(api)
    container = client.V1Container(name="main", image="busybox", command=["true"])
    body = client.V1Job(
        metadata=client.V1ObjectMeta(name="once"),
        spec=client.V1JobSpec(
            backoff_limit=2,
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(restart_policy="Never", containers=[container]))))
    created = batch.create_namespaced_job(NS, body)
    check_eq(created.metadata.name, "once", "job name")
    check_eq(created.spec.backoff_limit, 2, "job backoffLimit")
    got = batch.read_namespaced_job("once", NS)
    check_eq(got.metadata.uid, created.metadata.uid, "job uid")
    check_eq(got.spec.template.spec.containers[0].image, "busybox", "job image")
    names = [j.metadata.name for j in batch.list_namespaced_job(NS).items]
    check_eq(names, ["once"], "job list")
    batch.delete_namespaced_job("once", NS, propagation_policy="Background")


def from_yaml(api):
    """`kubernetes.utils.create_from_yaml`, which picks the typed API of each document."""
    docs = [
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "from-yaml", "namespace": NS}, "data": {"x": "y"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "from-yaml", "namespace": NS},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
    ]
    utils.create_from_yaml(api, yaml_objects=docs)
    check_eq(client.CoreV1Api(api).read_namespaced_config_map("from-yaml", NS).data,
             {"x": "y"}, "ConfigMap from YAML")
    role = client.RbacAuthorizationV1Api(api).read_namespaced_role("from-yaml", NS)
    check_eq(role.rules[0].verbs, ["get"], "Role from YAML")


def main():
    env("KPLANE_CLUSTER")
    with api_client() as api:
        check(f"/clusters/{env('KPLANE_CLUSTER')}" in api.configuration.host,
              f"the kubeconfig does not point at the logical cluster: {api.configuration.host}")
        configmaps(api)
        crd_and_custom_objects(api)
        job(api)
        from_yaml(api)
    print("ok")


if __name__ == "__main__":
    main()
