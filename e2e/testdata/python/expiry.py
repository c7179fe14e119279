"""What the official Python client does once history has aged out of the server's event
window (the server runs with a short `--event-window-seconds`): a watch from an old
resourceVersion ends in an ApiException 410 "Expired" (after the client's own single retry
when no `timeout_seconds` is given), an old continue token is 410 Expired with a Status
body offering the inconsistent continuation (which lists the rest), and the recovery the client's docs prescribe (list, then watch from the list's
resourceVersion) works."""

import threading
import time

from kubernetes import client, watch
from kubernetes.client.rest import ApiException
from kplane_check import api_client, check, check_eq, expect_api_error, fail

NS = "py-expiry"
DEADLINE = 120


def watch_from(v1, rv, **kwargs):
    w = watch.Watch()
    events = []
    for event in w.stream(v1.list_namespaced_config_map, NS, resource_version=rv, **kwargs):
        events.append(event)
        w.stop()
    return events


def main():
    with api_client() as api:
        v1 = client.CoreV1Api(api)
        v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
        for i in range(3):
            v1.create_namespaced_config_map(NS, client.V1ConfigMap(
                metadata=client.V1ObjectMeta(name=f"cm-{i}")))
        old_rv = v1.list_namespaced_config_map(NS).metadata.resource_version
        token = v1.list_namespaced_config_map(NS, limit=1).metadata._continue
        check(token, "no continue token")

        # Keep writing until the server has dropped the history at old_rv.
        start = time.monotonic()
        n = 0
        while True:
            n += 1
            v1.create_namespaced_config_map(NS, client.V1ConfigMap(
                metadata=client.V1ObjectMeta(name=f"later-{n}")))
            try:
                watch_from(v1, old_rv, timeout_seconds=1)
            except ApiException as e:
                check_eq(e.status, 410, "status of an expired watch")
                check(str(e.reason).startswith("Expired: too old resource version: "),
                      f"reason of an expired watch: {e.reason!r}")
                break
            if time.monotonic() - start > DEADLINE:
                fail(f"a watch from resourceVersion {old_rv} still worked after {DEADLINE}s")
            time.sleep(0.2)

        # Without timeout_seconds the client retries once, then gives up the same way.
        try:
            watch_from(v1, old_rv)
            fail("a watch from an expired resourceVersion succeeded")
        except ApiException as e:
            check_eq(e.status, 410, "status of an expired watch after the client's retry")

        status = expect_api_error(
            lambda: v1.list_namespaced_config_map(NS, limit=1, _continue=token), 410, "Expired",
            "The provided continue parameter is too old to display a consistent list result. "
            "You can start a new list without the continue parameter, or use the continue "
            "token in this response to retrieve the remainder of the results. Continuing with "
            "the provided token results in an inconsistent list - objects that were created, "
            "modified, or deleted between the time the first chunk was returned and now may "
            "show up in the list.", "expired continue")
        # The Status offers the inconsistent continuation: the rest at the latest revision.
        inconsistent = status.get("metadata", {}).get("continue")
        check(inconsistent, f"no continue token in the expired Status: {status}")
        rest = v1.list_namespaced_config_map(NS, _continue=inconsistent)
        names = [cm.metadata.name for cm in rest.items]
        check_eq(names[:2], ["cm-1", "cm-2"], "the rest of the list after cm-0")
        check("later-1" in names, f"the inconsistent list shows later writes: {names}")

        # Recovery: list, then watch from the list's resourceVersion.
        fresh = v1.list_namespaced_config_map(NS)
        worker = threading.Thread(target=lambda: v1.delete_namespaced_config_map("cm-0", NS))
        worker.start()
        events = watch_from(v1, fresh.metadata.resource_version, timeout_seconds=60)
        worker.join()
        check_eq([(e["type"], e["object"].metadata.name) for e in events],
                 [("DELETED", "cm-0")], "events after recovering")
    print("ok")


if __name__ == "__main__":
    main()
