"""Shared helpers of the Python-client e2e scripts (run by e2e/tests/python.rs).

The Rust test passes everything through environment variables:
  KPLANE_KUBECONFIG  a kubeconfig whose server URL is `<base>/clusters/<cluster>`
  KPLANE_BASE_URL    `https://127.0.0.1:<port>` (no cluster prefix)
  KPLANE_CLUSTER     the logical cluster the kubeconfig points at (e.g. `root:acme`)
plus script-specific ones. A script exits 1 with a message on stderr at the first mismatch.
"""

import json
import os
import sys

from kubernetes import client, config
from kubernetes.client.rest import ApiException


def env(name):
    """The value of a required environment variable."""
    value = os.environ.get(name)
    if not value:
        fail(f"environment variable {name} is not set")
    return value


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def check_eq(actual, expected, what):
    if actual != expected:
        fail(f"{what}: expected {expected!r}, got {actual!r}")


def configuration(kubeconfig=None):
    """A client Configuration from `kubeconfig` (default $KPLANE_KUBECONFIG), as users load it."""
    c = client.Configuration()
    config.load_kube_config(config_file=kubeconfig or env("KPLANE_KUBECONFIG"),
                            client_configuration=c)
    return c


def api_client(kubeconfig=None):
    return client.ApiClient(configuration(kubeconfig))


def expect_api_error(call, status, reason, message=None, what="request", with_reason=False):
    """Runs `call`, which must raise an ApiException with `status` and a Status body with
    `reason` (and `message`, if given); returns the decoded Status. With `with_reason`, the
    message may go on with `: <authorizer's reason>`, as kube-apiserver appends it to 403s."""
    try:
        result = call()
    except ApiException as e:
        check_eq(e.status, status, f"{what}: HTTP status")
        try:
            body = json.loads(e.body)
        except (TypeError, ValueError):
            fail(f"{what}: the error body is not JSON: {e.body!r}")
        check_eq(body.get("kind"), "Status", f"{what}: body kind ({body})")
        check_eq(body.get("apiVersion"), "v1", f"{what}: body apiVersion ({body})")
        check_eq(body.get("status"), "Failure", f"{what}: body status ({body})")
        check_eq(body.get("code"), status, f"{what}: body code ({body})")
        check_eq(body.get("reason"), reason, f"{what}: body reason ({body})")
        if message is not None:
            actual = body.get("message")
            if with_reason and isinstance(actual, str) and actual.startswith(message + ": "):
                actual = message
            check_eq(actual, message, f"{what}: body message")
        return body
    fail(f"{what}: expected HTTP {status} {reason}, but it succeeded: {result!r}")
