"""A pod's in-cluster configuration, as the official Python client loads it, against kplane.

  KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT  the server's address, as a pod has them
  KPLANE_SA_DIR      a folder laid out as a pod's /var/run/secrets/kubernetes.io/serviceaccount:
                     `token` (a ServiceAccount token of KPLANE_HOME), `ca.crt`, `namespace`
  KPLANE_HOME        the logical cluster the token is bound to

In-cluster configuration has a host and no path: requests reach the token's own logical
cluster. There, the Role bound to the ServiceAccount allows ConfigMaps in its namespace
(ConfigMap `in-home` exists; the root cluster has `in-root` in the same namespace) and
nothing else."""

import os

from kubernetes import client
from kubernetes.config.incluster_config import InClusterConfigLoader
from kplane_check import check, check_eq, env, expect_api_error

sa_dir = env("KPLANE_SA_DIR")
# What `config.load_incluster_config()` does, with the files where the test put them.
InClusterConfigLoader(
    token_filename=os.path.join(sa_dir, "token"),
    cert_filename=os.path.join(sa_dir, "ca.crt"),
).load_and_set()
with open(os.path.join(sa_dir, "namespace")) as f:
    namespace = f.read().strip()

v1 = client.CoreV1Api()
names = {c.metadata.name for c in v1.list_namespaced_config_map(namespace).items}
check("in-home" in names, f"the home cluster's ConfigMap is not listed: {names}")
check("in-root" not in names, f"the root cluster's ConfigMap is listed: {names}")

v1.create_namespaced_config_map(
    namespace,
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-python"},
     "data": {"written": "in-cluster"}},
)
got = v1.read_namespaced_config_map("from-python", namespace)
check_eq(got.data, {"written": "in-cluster"}, "the ConfigMap written in-cluster")

user = f"system:serviceaccount:{namespace}:runner"
expect_api_error(
    lambda: v1.list_namespaced_secret(namespace),
    403,
    "Forbidden",
    f'secrets is forbidden: User "{user}" cannot list resource "secrets" in API group "" in the namespace "{namespace}"',
    what="listing Secrets",
    with_reason=True,
)
print("ok")
