#!/usr/bin/env python3
"""Many logical clusters installing the same CRDs (issue 4), driven over HTTPS with the
admin kubeconfig of a running server. Only the Python standard library.

  create KUBECONFIG --clusters N [--crds 20] [--concurrency 16]
      creates the Workspaces t0 .. t<N-1> in the kubeconfig's cluster, waits until all are
      Ready, then POSTs the CRDs into every one of them (one cluster per client at a time);
      prints one JSON object with the seconds of each phase.
  touch KUBECONFIG --clusters N [--concurrency 16]
      one request to every cluster (a list of the first CRD's objects, which needs the
      cluster's catalog); prints the seconds. Fails unless every answer is 200.
  crd [--index 0]
      prints one generated CRD (to look at it, or to measure its size).

The CRDs differ only in their names (group crds.bench.kplane.test, kinds Gadget00 ..):
a spec of 40 string fields with patterns and length limits, a map-list keyed by name
with a defaulted field, a CEL rule, printer columns and the status subresource, about
6.5 KB of compact JSON each.
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import ssl
import sys
import tempfile
import threading
import time
import urllib.parse

from apply_maplist import load_kubeconfig

GROUP = "crds.bench.kplane.test"
WORKSPACES = "/apis/tenancy.kplane.io/v1alpha1/workspaces"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def crd(i):
    """CRD number i: every CRD has the same schema, only the names differ."""
    kind = f"Gadget{i:02d}"
    plural = kind.lower() + "s"
    fields = {
        f"field{j:02d}": {
            "type": "string",
            "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
            "maxLength": 63,
            "description": f"Setting {j} of the gadget.",
        }
        for j in range(40)
    }
    ports = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "maxItems": 64,
        "items": {
            "type": "object",
            "required": ["name", "port"],
            "properties": {
                "name": {"type": "string", "maxLength": 15},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "protocol": {"type": "string", "enum": ["TCP", "UDP"], "default": "TCP"},
            },
        },
    }
    spec = {
        "type": "object",
        "properties": {
            **fields,
            "replicas": {"type": "integer", "minimum": 0, "default": 1},
            "maxReplicas": {"type": "integer", "minimum": 0},
            "ports": ports,
        },
        "x-kubernetes-validations": [{
            "rule": "!has(self.maxReplicas) || self.replicas <= self.maxReplicas",
            "message": "replicas must not exceed maxReplicas",
        }],
    }
    status = {
        "type": "object",
        "properties": {
            "phase": {"type": "string"},
            "readyReplicas": {"type": "integer"},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                      "listKind": kind + "List"},
            "versions": [{
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": spec, "status": status},
                }},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
            }],
        },
    }


class Conn:
    """One keep-alive HTTPS connection with the kubeconfig's token and CA."""

    def __init__(self, kubeconfig):
        server, self.token, ca = load_kubeconfig(kubeconfig)
        u = urllib.parse.urlparse(server)
        self.prefix = u.path.rstrip("/")
        self.ctx = ssl.create_default_context()
        with tempfile.NamedTemporaryFile(delete=False) as f:
            f.write(ca)
        self.ctx.load_verify_locations(f.name)
        os.unlink(f.name)
        self.ctx.check_hostname = False
        self.host, self.port = u.hostname, u.port
        self.conn = None

    def call(self, method, path, body=None):
        """(status, body bytes); reconnects once if the server closed the connection."""
        headers = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                                        timeout=60)
            try:
                self.conn.request(method, path, body=body, headers=headers)
                resp = self.conn.getresponse()
                return resp.status, resp.read()
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def must(self, method, path, body=None, ok=(200, 201)):
        """call, retrying 429 and 5xx answers for up to a minute; exits on anything else."""
        deadline = time.monotonic() + 60
        while True:
            status, out = self.call(method, path, body)
            if status in ok:
                return out
            if (status == 429 or status >= 500) and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            sys.exit(f"{method} {path}: {status} {out[:300]!r}")


def pool_map(a, fn, items):
    """fn(conn, item) for every item, with a.concurrency clients; one connection each."""
    local = threading.local()

    def run(item):
        if not hasattr(local, "c"):
            local.c = Conn(a.kubeconfig)
        return fn(local.c, item)

    with concurrent.futures.ThreadPoolExecutor(a.concurrency) as pool:
        return list(pool.map(run, items))


def cluster_prefix(conn, i):
    return f"{conn.prefix}:t{i}"


def create(a):
    bodies = [json.dumps(crd(j), separators=(",", ":")).encode() for j in range(a.crds)]
    main = Conn(a.kubeconfig)
    out = {"clusters": a.clusters, "crds": a.crds, "concurrency": a.concurrency,
           "crd_bytes": len(bodies[0])}

    t = time.perf_counter()
    pool_map(a, lambda c, i: c.must("POST", c.prefix + WORKSPACES, json.dumps({
        "apiVersion": "tenancy.kplane.io/v1alpha1", "kind": "Workspace",
        "metadata": {"name": f"t{i}"}}).encode()), range(a.clusters))
    out["workspaces_created_s"] = round(time.perf_counter() - t, 2)
    while True:
        items = json.loads(main.must("GET", main.prefix + WORKSPACES))["items"]
        ready = sum(1 for w in items if w["metadata"]["name"].startswith("t")
                    and w.get("status", {}).get("phase") == "Ready")
        if ready >= a.clusters:
            break
        time.sleep(1)
    out["workspaces_ready_s"] = round(time.perf_counter() - t, 2)

    def install(c, i):
        for body in bodies:
            c.must("POST", cluster_prefix(c, i) + CRDS, body)

    t = time.perf_counter()
    pool_map(a, install, range(a.clusters))
    out["crds_created_s"] = round(time.perf_counter() - t, 2)
    out["crds_per_s"] = round(a.clusters * a.crds / out["crds_created_s"])
    # Every CRD of the last cluster is served (Established) before the figures are taken.
    first = crd(0)["spec"]["names"]["plural"]
    main.must("GET", f"{cluster_prefix(main, a.clusters - 1)}/apis/{GROUP}/v1/{first}?limit=1")
    print(json.dumps(out))


def touch(a):
    plural = crd(0)["spec"]["names"]["plural"]
    t = time.perf_counter()
    pool_map(a, lambda c, i: c.must("GET", f"{cluster_prefix(c, i)}/apis/{GROUP}/v1/{plural}?limit=1",
                                    ok=(200,)), range(a.clusters))
    print(json.dumps({"clusters": a.clusters, "seconds": round(time.perf_counter() - t, 2)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ["create", "touch"]:
        p = sub.add_parser(name)
        p.add_argument("kubeconfig")
        p.add_argument("--clusters", type=int, required=True)
        p.add_argument("--concurrency", type=int, default=16)
        if name == "create":
            p.add_argument("--crds", type=int, default=20)
    p = sub.add_parser("crd")
    p.add_argument("--index", type=int, default=0)
    a = ap.parse_args()
    if a.cmd == "create":
        create(a)
    elif a.cmd == "touch":
        touch(a)
    else:
        print(json.dumps(crd(a.index), indent=1))


if __name__ == "__main__":
    main()
