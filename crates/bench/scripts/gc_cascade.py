#!/usr/bin/env python3
"""Time a garbage-collection cascade (issue 6): one owner ConfigMap with N dependents.

Creates the owner, then N ConfigMaps whose ownerReferences point at it (over 16 HTTPS
connections), deletes the owner with the given propagation policy and reports the time
from the DELETE until a list of the dependents is empty. Only the Python standard library.

usage: gc_cascade.py KUBECONFIG [--dependents 10000] [--policy Background]
"""
import argparse
import concurrent.futures
import threading
import time

from apply_maplist import Client

NS = "/api/v1/namespaces/default/configmaps"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kubeconfig")
    ap.add_argument("--dependents", type=int, default=10000)
    ap.add_argument("--policy", default="Background")
    a = ap.parse_args()
    local = threading.local()

    def client():
        if not hasattr(local, "c"):
            local.c = Client(a.kubeconfig)
        return local.c

    main_client = Client(a.kubeconfig)
    owner = main_client.call("POST", NS, {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "gc-owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "gc-owner",
           "uid": owner["metadata"]["uid"]}

    def create(i):
        client().call("POST", NS, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": f"dep-{i}", "labels": {"gc": "dep"},
                                                "ownerReferences": [ref]},
                                   "data": {"i": str(i)}})

    t = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(create, range(a.dependents)))
    print(f"created {a.dependents} dependents in {time.perf_counter() - t:.1f} s")

    t = time.perf_counter()
    main_client.call("DELETE", f"{NS}/gc-owner",
                     {"apiVersion": "v1", "kind": "DeleteOptions",
                      "propagationPolicy": a.policy})
    while True:
        left = main_client.call("GET", f"{NS}?labelSelector=gc%3Ddep&limit=1")
        if not left["items"]:
            break
        time.sleep(0.05)
    print(f"{a.policy} deletion: all dependents collected after "
          f"{time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    main()
