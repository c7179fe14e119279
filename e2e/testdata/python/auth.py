"""Authentication and authorization as the official Python client sees them.

  KPLANE_ADMIN_KUBECONFIG  the server's admin.kubeconfig (client certificate and token)
  KPLANE_BASE_URL          `https://127.0.0.1:<port>`
  KPLANE_SA_TOKEN          a token of ServiceAccount default/reader of KPLANE_OWN_CLUSTER,
                           bound to the `view` ClusterRole there (ConfigMap `one` exists)
  KPLANE_OWN_CLUSTER, KPLANE_OTHER_CLUSTER  two logical clusters (the other has `one` too)

Anonymous requests are 401 with a Status (public paths answer); the admin kubeconfig works
as written, pointed at a logical cluster, with its client certificate alone and on
`/clusters/*`; the ServiceAccount token, in a kubeconfig of its own, reads its cluster, is
refused writes there and everything in the other cluster and on `/clusters/*` with
kube-apiserver's 403 messages; a tampered token is 401, and so is the token once its
ServiceAccount is deleted."""

import base64
import time

import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kplane_check import check, check_eq, env, expect_api_error

SA_USER = "system:serviceaccount:default:reader"


def ca_data():
    """The admin kubeconfig's CA, as base64 for a kubeconfig of our own."""
    c = client.Configuration()
    config.load_kube_config(config_file=env("KPLANE_ADMIN_KUBECONFIG"), client_configuration=c)
    with open(c.ssl_ca_cert, "rb") as f:
        return base64.b64encode(f.read()).decode()


def kubeconfig_client(server, user):
    """An ApiClient from a kubeconfig dict for `server` with `user` (possibly empty)."""
    kubeconfig = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "kplane", "cluster": {
            "server": server, "certificate-authority-data": ca_data()}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "kplane", "user": "u"}}],
        "current-context": "c",
    }
    c = client.Configuration()
    config.load_kube_config_from_dict(kubeconfig, client_configuration=c)
    return client.ApiClient(c)


def forbidden_message(verb, name=None):
    what = f'configmaps "{name}"' if name else "configmaps"
    return (f'{what} is forbidden: User "{SA_USER}" cannot {verb} resource "configmaps" '
            'in API group "" in the namespace "default"')


def main():
    base = env("KPLANE_BASE_URL")
    own = env("KPLANE_OWN_CLUSTER")
    other = env("KPLANE_OTHER_CLUSTER")
    token = env("KPLANE_SA_TOKEN")

    # The admin kubeconfig as the server wrote it (logical cluster root)...
    with client.ApiClient(_admin_configuration()) as admin:
        names = [n.metadata.name for n in client.CoreV1Api(admin).list_namespace().items]
        check("default" in names, f"admin namespaces: {names}")
    # ...and pointed at a logical cluster. (Setting `Configuration.host` after loading a
    # kubeconfig with a token does not last: the client's token refresh hook copies the
    # kubeconfig's server back before every request. The server URL belongs in the kubeconfig.)
    with open(env("KPLANE_ADMIN_KUBECONFIG")) as f:
        admin_kubeconfig = yaml.safe_load(f)
    admin_kubeconfig["clusters"][0]["cluster"]["server"] = f"{base}/clusters/{own}"
    c = client.Configuration()
    config.load_kube_config_from_dict(admin_kubeconfig, client_configuration=c)
    with client.ApiClient(c) as admin_own:
        one = client.CoreV1Api(admin_own).read_namespaced_config_map("one", "default")
        check_eq(one.data, {"cluster": own}, "admin reads the ConfigMap of its cluster")

    # The admin kubeconfig's client certificate alone: the same user, groups from O.
    del admin_kubeconfig["users"][0]["user"]["token"]
    c = client.Configuration()
    config.load_kube_config_from_dict(admin_kubeconfig, client_configuration=c)
    with client.ApiClient(c) as admin_cert:
        review = client.AuthenticationV1Api(admin_cert).create_self_subject_review(
            client.V1SelfSubjectReview())
        user = review.status.user_info
        check_eq(user.username, "kplane-admin", "client certificate user")
        check_eq(user.groups, ["system:masters", "system:authenticated"],
                 "client certificate groups")
        one = client.CoreV1Api(admin_cert).read_namespaced_config_map("one", "default")
        check_eq(one.data, {"cluster": own}, "admin by certificate reads its cluster")

    # The admin on the wildcard endpoint sees both clusters' ConfigMap.
    admin_kubeconfig["clusters"][0]["cluster"]["server"] = f"{base}/clusters/*"
    c = client.Configuration()
    config.load_kube_config_from_dict(admin_kubeconfig, client_configuration=c)
    with client.ApiClient(c) as admin_all:
        everywhere = client.CoreV1Api(admin_all).list_config_map_for_all_namespaces(
            field_selector="metadata.name=one")
        check_eq(sorted(cm.data["cluster"] for cm in everywhere.items), sorted([own, other]),
                 "the admin's ConfigMaps named one on /clusters/*")

    # Anonymous: public paths answer, everything else is 401 with a Status.
    with kubeconfig_client(f"{base}/clusters/{own}", {}) as anonymous:
        version = client.VersionApi(anonymous).get_code()
        check(version.git_version, f"anonymous /version: {version}")
        v1 = client.CoreV1Api(anonymous)
        expect_api_error(lambda: v1.list_namespaced_config_map("default"), 401,
                         "Unauthorized", "Unauthorized", "anonymous list")
        expect_api_error(lambda: v1.read_namespaced_config_map("one", "default"), 401,
                         "Unauthorized", "Unauthorized", "anonymous get")
        expect_api_error(lambda: v1.list_namespace(), 401, "Unauthorized", "Unauthorized",
                         "anonymous cluster-scoped list")

    # The ServiceAccount's token reads its own cluster...
    with kubeconfig_client(f"{base}/clusters/{own}", {"token": token}) as sa_own:
        v1 = client.CoreV1Api(sa_own)
        check_eq(v1.read_namespaced_config_map("one", "default").data, {"cluster": own},
                 "the ServiceAccount reads its cluster's ConfigMap")
        check("one" in [c.metadata.name for c in v1.list_namespaced_config_map("default").items],
              "the ServiceAccount lists its cluster's ConfigMaps")
        # ...but `view` does not write.
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="two"))
        expect_api_error(lambda: v1.create_namespaced_config_map("default", body), 403,
                         "Forbidden", forbidden_message("create"), "ServiceAccount create")
        expect_api_error(lambda: v1.delete_namespaced_config_map("one", "default"), 403,
                         "Forbidden", forbidden_message("delete", "one"),
                         "ServiceAccount delete")

    # In another logical cluster the same token is worth nothing, whatever is bound there.
    with kubeconfig_client(f"{base}/clusters/{other}", {"token": token}) as sa_other:
        v1 = client.CoreV1Api(sa_other)
        expect_api_error(lambda: v1.read_namespaced_config_map("one", "default"), 403,
                         "Forbidden", forbidden_message("get", "one"), "other cluster get",
                         with_reason=True)
        expect_api_error(lambda: v1.list_namespaced_config_map("default"), 403, "Forbidden",
                         forbidden_message("list"), "other cluster list", with_reason=True)

    # The wildcard endpoint needs an explicit grant.
    with kubeconfig_client(f"{base}/clusters/*", {"token": token}) as sa_wildcard:
        expect_api_error(
            lambda: client.CoreV1Api(sa_wildcard).list_config_map_for_all_namespaces(), 403,
            "Forbidden",
            f'configmaps is forbidden: User "{SA_USER}" cannot list resource "configmaps" '
            'in API group "" at the cluster scope', "wildcard list", with_reason=True)

    # A tampered token (one signature character changed) is 401.
    tampered = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]
    with kubeconfig_client(f"{base}/clusters/{own}", {"token": tampered}) as bad:
        expect_api_error(lambda: client.CoreV1Api(bad).list_namespaced_config_map("default"),
                         401, "Unauthorized", "Unauthorized", "tampered token")
    # Deleting the ServiceAccount revokes the token (the server's cache follows a watch:
    # allow it to catch up, bounded).
    c = client.Configuration()
    admin_kubeconfig["clusters"][0]["cluster"]["server"] = f"{base}/clusters/{own}"
    config.load_kube_config_from_dict(admin_kubeconfig, client_configuration=c)
    with client.ApiClient(c) as admin_own:
        client.CoreV1Api(admin_own).delete_namespaced_service_account("reader", "default")
    with kubeconfig_client(f"{base}/clusters/{own}", {"token": token}) as revoked:
        v1 = client.CoreV1Api(revoked)
        deadline = time.monotonic() + 30
        while True:
            try:
                v1.read_namespaced_config_map("one", "default")
            except ApiException as e:
                check_eq(e.status, 401, "status of a revoked token")
                break
            check(time.monotonic() < deadline, "the deleted ServiceAccount's token still works")
            time.sleep(0.05)
        expect_api_error(lambda: v1.list_namespaced_config_map("default"), 401,
                         "Unauthorized", "Unauthorized", "revoked token")
    print("ok")


def _admin_configuration():
    c = client.Configuration()
    config.load_kube_config(config_file=env("KPLANE_ADMIN_KUBECONFIG"), client_configuration=c)
    return c


if __name__ == "__main__":
    main()
