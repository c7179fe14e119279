#!/usr/bin/env bash
# The tools `make test` needs beyond Rust and kubectl, installed when missing: `make test`
# runs this first, and `.ci/run` through it. On Debian or Ubuntu it installs, with apt-get
# (as root, or with sudo when that needs no password) and pip:
#
# - curl, which a few end-to-end tests run;
# - PostgreSQL's server binaries (`initdb`, `postgres`): the PostgreSQL storage backend's
#   tests start a throwaway server (storage/src/testing/postgres.rs);
# - python3 with pip, and the official Python client pinned to Kubernetes 1.32's release
#   (e2e/tests/python.rs drives the server with it; those tests fail, never skip,
#   without it);
# - rustfmt, for `cargo fmt --check` (with rustup).
#
# kubectl and cargo are checked, not installed. When something is missing and cannot be
# installed here, it prints one message naming every missing tool with the command that
# installs it, and exits 1.
set -euo pipefail

PYTHON_CLIENT=kubernetes==32.0.1
PYTHON_CLIENT_VERSION=${PYTHON_CLIENT#kubernetes==}

have() { command -v "$1" >/dev/null 2>&1; }
have_postgres() {
  have initdb || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}
python_client_version() {
  python3 -c 'import kubernetes; print(kubernetes.__version__)' 2>/dev/null || true
}

# What is missing: Debian packages, and whether the Python client and rustfmt are.
missing_packages() {
  local packages=""
  have curl || packages="$packages curl"
  have_postgres || packages="$packages postgresql"
  if ! have python3 || ! python3 -m pip --version >/dev/null 2>&1; then
    packages="$packages python3 python3-pip"
  fi
  echo "${packages# }"
}

fatal=""
have kubectl || fatal="$fatal
  kubectl: not on PATH; install it (https://kubernetes.io/docs/tasks/tools/), tested with 1.32"
have cargo || fatal="$fatal
  cargo: not on PATH; install the Rust toolchain (https://rustup.rs)"

apt_get=""
if have apt-get; then
  if [ "$(id -u)" -eq 0 ]; then
    apt_get="apt-get"
  elif have sudo && sudo -n true 2>/dev/null; then
    apt_get="sudo apt-get"
  fi
fi

packages=$(missing_packages)
if [ -n "$packages" ] && [ -n "$apt_get" ]; then
  echo "make test: installing $packages" >&2
  # shellcheck disable=SC2086 # one word per package
  $apt_get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $apt_get install -y -qq $packages >&2 \
    || echo "make test: installing $packages failed" >&2
  packages=$(missing_packages)
fi
if [ -n "$packages" ]; then
  fatal="$fatal
  $packages: install with: sudo apt-get install -y $packages"
fi

if have python3 && python3 -m pip --version >/dev/null 2>&1 \
  && [ "$(python_client_version)" != "$PYTHON_CLIENT_VERSION" ]; then
  echo "make test: installing the Python client $PYTHON_CLIENT" >&2
  pip_user=""
  [ "$(id -u)" -eq 0 ] || pip_user="--user"
  # A distribution's python3 may refuse installs outside a venv (PEP 668): allow it then.
  # shellcheck disable=SC2086 # empty or one flag
  python3 -m pip install --quiet --no-warn-script-location $pip_user "$PYTHON_CLIENT" >&2 2>/dev/null \
    || python3 -m pip install --quiet --no-warn-script-location $pip_user --break-system-packages "$PYTHON_CLIENT" >&2 \
    || true
fi
if have python3 && [ "$(python_client_version)" != "$PYTHON_CLIENT_VERSION" ]; then
  fatal="$fatal
  the official Python client $PYTHON_CLIENT (python3 has '$(python_client_version)'): install with: python3 -m pip install --user $PYTHON_CLIENT"
fi

if have cargo && ! cargo fmt --version >/dev/null 2>&1; then
  have rustup && rustup component add rustfmt >&2 || true
  cargo fmt --version >/dev/null 2>&1 || fatal="$fatal
  rustfmt: install with: rustup component add rustfmt"
fi

if [ -n "$fatal" ]; then
  echo "error: make test needs tools this machine lacks and that could not be installed here (apt-get needs root or password-less sudo):$fatal" >&2
  exit 1
fi
