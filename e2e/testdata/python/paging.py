"""List paging with the official Python client: `limit` and `_continue` over more objects
than one page (and more than the server's list batch of 500), in one namespace and over
all namespaces. Every page is from the snapshot of the first one: same resourceVersion,
objects created meanwhile are not in it, and `remainingItemCount` counts down."""

from concurrent.futures import ThreadPoolExecutor

from kubernetes import client
from kplane_check import api_client, check, check_eq, env, expect_api_error

NS = "py-paging"
OTHER_NS = "py-paging-other"
OBJECTS = int(env("KPLANE_OBJECTS"))
OTHER_OBJECTS = 7
PAGE = 500


def create_all(v1, namespace, count, prefix):
    def create(i):
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"{prefix}-{i:05d}"),
                                  data={"i": str(i)})
        v1.create_namespaced_config_map(namespace, body)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(create, range(count)))


def page_through(list_call, expected_total, late_create=None):
    """Lists with `limit=PAGE` following `_continue`; returns every name seen."""
    names = []
    first_rv = None
    token = None
    pages = 0
    while True:
        kwargs = {"limit": PAGE}
        if token:
            kwargs["_continue"] = token
        page = list_call(**kwargs)
        pages += 1
        check(len(page.items) <= PAGE, f"page {pages} has {len(page.items)} items > {PAGE}")
        names.extend(f"{o.metadata.namespace}/{o.metadata.name}" for o in page.items)
        rv = page.metadata.resource_version
        if first_rv is None:
            first_rv = rv
            if late_create:
                late_create()
        else:
            check_eq(rv, first_rv, f"resourceVersion of page {pages}")
        token = page.metadata._continue
        remaining = page.metadata.remaining_item_count
        if token:
            check_eq(len(page.items), PAGE, f"items on the non-final page {pages}")
            if remaining is not None:
                check_eq(remaining, expected_total - len(names),
                         f"remainingItemCount on page {pages}")
        else:
            check(not remaining, f"last page has remainingItemCount {remaining}")
            break
    expected_pages = (expected_total + PAGE - 1) // PAGE
    check_eq(pages, expected_pages, "number of pages")
    check_eq(len(names), expected_total, "objects over all pages")
    check_eq(len(set(names)), expected_total, "distinct objects over all pages")
    return names


def main():
    with api_client() as api:
        v1 = client.CoreV1Api(api)
        for ns in (NS, OTHER_NS):
            v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
        create_all(v1, NS, OBJECTS, "cm")
        create_all(v1, OTHER_NS, OTHER_OBJECTS, "other")

        # One namespace; an object created after the first page is not in the snapshot.
        def late():
            v1.create_namespaced_config_map(
                NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm-late")))

        # (The namespace also holds its kube-root-ca.crt.)
        whole = v1.list_namespaced_config_map(NS)
        check(not whole.metadata._continue, "unpaged list has a continue token")
        before = sorted(f"{NS}/{o.metadata.name}" for o in whole.items)
        check_eq([n for n in before if n.startswith(f"{NS}/cm-")],
                 [f"{NS}/cm-{i:05d}" for i in range(OBJECTS)], "the created objects")
        names = page_through(lambda **kw: v1.list_namespaced_config_map(NS, **kw),
                             len(before), late)
        check_eq(names, before, "the paged list (in name order) against the unpaged one")

        # A fresh listing sees it.
        after = page_through(lambda **kw: v1.list_namespaced_config_map(NS, **kw),
                             len(before) + 1)
        check(f"{NS}/cm-late" in after, "a new listing misses the object created meanwhile")

        # All namespaces (default's kube-root-ca.crt and the like count too).
        everything = v1.list_config_map_for_all_namespaces()
        total = len(everything.items)
        check(total >= OBJECTS + 1 + OTHER_OBJECTS, f"all-namespaces list has {total} items")
        paged = page_through(lambda **kw: v1.list_config_map_for_all_namespaces(**kw), total)
        check_eq(sorted(paged), sorted(f"{o.metadata.namespace}/{o.metadata.name}"
                                       for o in everything.items),
                 "paged vs unpaged all-namespaces list")

        # A continue token is bound to its query.
        first = v1.list_namespaced_config_map(NS, limit=PAGE)
        expect_api_error(
            lambda: v1.list_namespaced_config_map(NS, limit=PAGE, _continue="garbage"),
            400, "BadRequest", what="malformed continue token")
        check(first.metadata._continue, "no continue token on a full page")
    print("ok")


if __name__ == "__main__":
    main()
