"""Watches with the official Python client (`kubernetes.watch.Watch().stream`): a watch from
a list's resourceVersion sees ADDED, MODIFIED and DELETED of changes made while it runs;
resuming from an event's resourceVersion replays only what came after it; a watch without
a resourceVersion starts with ADDED for what exists; label selectors apply; a cluster-scoped
collection works the same; `timeout_seconds` ends the stream. (crud.py watches custom objects.)"""

import threading

from kubernetes import client, watch
from kplane_check import api_client, check, check_eq, fail

NS = "py-watch"
TIMEOUT = 60


def collect(stream_call, stop_when, **kwargs):
    """Streams until `stop_when(events)` holds; returns (type, name, rv) triples."""
    w = watch.Watch()
    events = []
    for event in w.stream(stream_call, timeout_seconds=TIMEOUT, **kwargs):
        obj = event["raw_object"]
        meta = obj.get("metadata", {})
        check(meta.get("resourceVersion"), f"event without resourceVersion: {event}")
        check(obj.get("kind") and obj.get("apiVersion"), f"event without kind: {obj}")
        events.append((event["type"], meta.get("name"), meta.get("resourceVersion"),
                       event["object"]))
        if stop_when(events):
            w.stop()
    if not stop_when(events):
        fail(f"the watch ended after {TIMEOUT}s without the expected events: "
             f"{[e[:3] for e in events]}")
    return events


def main():
    with api_client() as api:
        v1 = client.CoreV1Api(api)
        v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
        v1.create_namespaced_config_map(NS, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="before", labels={"w": "yes"})))
        start = v1.list_namespaced_config_map(NS, label_selector="w=yes")
        rv = start.metadata.resource_version

        def changes():
            cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="live",
                                                                 labels={"w": "yes"}),
                                    data={"n": "1"})
            v1.create_namespaced_config_map(NS, cm)
            # Not matching the selector: never seen by the watch.
            v1.create_namespaced_config_map(NS, client.V1ConfigMap(
                metadata=client.V1ObjectMeta(name="unlabelled")))
            v1.patch_namespaced_config_map("live", NS, {"data": {"n": "2"}})
            v1.delete_namespaced_config_map("live", NS)

        worker = threading.Thread(target=changes)
        worker.start()
        events = collect(v1.list_namespaced_config_map,
                         lambda evs: any(e[0] == "DELETED" for e in evs),
                         namespace=NS, label_selector="w=yes", resource_version=rv)
        worker.join()
        check_eq([(t, n) for t, n, _, _ in events],
                 [("ADDED", "live"), ("MODIFIED", "live"), ("DELETED", "live")],
                 "events from the list's resourceVersion")
        check(isinstance(events[0][3], client.V1ConfigMap),
              f"event object is not a V1ConfigMap: {type(events[0][3])}")
        check_eq(events[1][3].data, {"n": "2"}, "MODIFIED object's data")
        rvs = [int(e[2]) for e in events]
        check(rvs == sorted(rvs) and len(set(rvs)) == 3 and rvs[0] > int(rv),
              f"event resourceVersions {rvs} after {rv}")

        # Resume after the ADDED event: MODIFIED and DELETED again, no ADDED.
        resumed = collect(v1.list_namespaced_config_map,
                          lambda evs: any(e[0] == "DELETED" for e in evs),
                          namespace=NS, label_selector="w=yes", resource_version=events[0][2])
        check_eq([(t, n, r) for t, n, r, _ in resumed], [e[:3] for e in events[1:]],
                 "events resumed from the ADDED event's resourceVersion")

        # No resourceVersion: the current state as ADDED first.
        initial = collect(v1.list_namespaced_config_map, lambda evs: len(evs) >= 1,
                          namespace=NS, label_selector="w=yes")
        check_eq([(t, n) for t, n, _, _ in initial], [("ADDED", "before")],
                 "initial events without a resourceVersion")

        # A short timeout_seconds ends the stream by itself, with no events after rv.
        latest = v1.list_namespaced_config_map(NS).metadata.resource_version
        quiet = list(watch.Watch().stream(v1.list_namespaced_config_map, namespace=NS,
                                          resource_version=latest, timeout_seconds=1))
        check_eq(quiet, [], "events of a quiet watch")

        # A cluster-scoped collection.
        ns_rv = v1.list_namespace().metadata.resource_version
        threading.Thread(target=lambda: v1.create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name="py-watch-2")))).start()
        ns_events = collect(v1.list_namespace,
                            lambda evs: any(e[1] == "py-watch-2" for e in evs),
                            resource_version=ns_rv)
        check_eq([(t, n) for t, n, _, _ in ns_events], [("ADDED", "py-watch-2")],
                 "namespace watch")
    print("ok")


if __name__ == "__main__":
    main()
