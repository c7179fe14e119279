#!/usr/bin/env python3
"""End-to-end timing of server-side apply with a 5,000-entry map-list (issue 5).

Creates a CRD whose spec.entries is `x-kubernetes-list-type: map` keyed by name, then times,
over HTTPS against a running server (admin kubeconfig), each of:
  create   - create-on-apply of an object with N entries (a new object per round)
  reapply  - the owner re-applies the same object with one value changed
  second   - a second manager applies one extra entry
and prints the median and p90 of each in milliseconds. Only the Python standard library.

usage: apply_maplist.py KUBECONFIG [--entries 5000] [--rounds 15]
"""
import argparse
import base64
import json
import os
import ssl
import statistics
import tempfile
import time
import http.client
import urllib.parse


def load_kubeconfig(path):
    # The admin kubeconfig kplane writes has one cluster and one user, one key per line:
    # read the three values needed without a YAML parser.
    server = token = ca = None
    with open(path) as f:
        for line in f:
            s = line.strip()
            if s.startswith("server:"):
                server = s.split(":", 1)[1].strip().strip('"')
            elif s.startswith("token:"):
                token = s.split(":", 1)[1].strip().strip('"')
            elif s.startswith("certificate-authority-data:"):
                ca = base64.b64decode(s.split(":", 1)[1].strip().strip('"'))
    return server, token, ca


class Client:
    def __init__(self, kubeconfig):
        server, self.token, ca = load_kubeconfig(kubeconfig)
        u = urllib.parse.urlparse(server)
        self.prefix = u.path.rstrip("/")
        ctx = ssl.create_default_context()
        with tempfile.NamedTemporaryFile(delete=False) as f:
            f.write(ca)
        ctx.load_verify_locations(f.name)
        os.unlink(f.name)
        ctx.check_hostname = False
        self.conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx)

    def call(self, method, path, body=None, ctype="application/json"):
        headers = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = ctype
        self.conn.request(method, self.prefix + path, body=data, headers=headers)
        resp = self.conn.getresponse()
        out = resp.read()
        if resp.status >= 300:
            raise SystemExit(f"{method} {path}: {resp.status} {out[:300]!r}")
        return json.loads(out)


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "maplists.bench.kplane.dev"},
    "spec": {
        "group": "bench.kplane.dev",
        "scope": "Namespaced",
        "names": {"plural": "maplists", "singular": "maplist", "kind": "MapList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                "type": "object", "properties": {"entries": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"], "properties": {
                        "name": {"type": "string"},
                        "value": {"type": "string"},
                        "weight": {"type": "integer"}}}}}}}}},
        }],
    },
}

BASE = "/apis/bench.kplane.dev/v1/namespaces/default/maplists"
APPLY = "application/apply-patch+yaml"


def obj(name, n, changed=None):
    entries = [{"name": f"e{i}", "value": f"v{i}", "weight": i} for i in range(n)]
    if changed is not None:
        entries[changed]["value"] = f"changed-{time.time_ns()}"
    return {"apiVersion": "bench.kplane.dev/v1", "kind": "MapList",
            "metadata": {"name": name}, "spec": {"entries": entries}}


def timed(fn):
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kubeconfig")
    ap.add_argument("--entries", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args()
    c = Client(a.kubeconfig)
    try:
        c.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
    except SystemExit as e:
        if " 409 " not in str(e):
            raise
    for _ in range(100):
        try:
            c.call("GET", BASE)
            break
        except SystemExit:
            time.sleep(0.1)
    results = {"create": [], "reapply": [], "second": []}
    for r in range(a.rounds):
        name = f"m{r}-{time.time_ns()}"
        path = f"{BASE}/{name}?fieldManager=owner"
        results["create"].append(timed(lambda: c.call("PATCH", path, obj(name, a.entries), APPLY)))
        results["reapply"].append(
            timed(lambda: c.call("PATCH", path, obj(name, a.entries, changed=r % a.entries), APPLY)))
        extra = {"apiVersion": "bench.kplane.dev/v1", "kind": "MapList", "metadata": {"name": name},
                 "spec": {"entries": [{"name": "extra", "value": "x"}]}}
        results["second"].append(
            timed(lambda: c.call("PATCH", f"{BASE}/{name}?fieldManager=other", extra, APPLY)))
        c.call("DELETE", f"{BASE}/{name}")
    print(f"server-side apply, {a.entries}-entry map-list, {a.rounds} rounds (ms):")
    for k, v in results.items():
        v = sorted(v)
        p90 = v[min(len(v) - 1, int(len(v) * 0.9))]
        print(f"  {k:8} median {statistics.median(v):7.1f}  p90 {p90:7.1f}  max {v[-1]:7.1f}")


if __name__ == "__main__":
    main()
