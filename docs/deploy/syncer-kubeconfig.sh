#!/usr/bin/env bash
# Prints a kubeconfig for `kplane syncer --target TARGET`, made with the current kubectl
# context, which must point at kplane's logical cluster holding the SyncTarget (with a user
# allowed to create tokens there, e.g. the admin):
#   server: SERVER/clusters/<that logical cluster>   (SERVER: how the syncer reaches kplane,
#           default https://kplane.kplane.svc:6443, the Service of docs/deploy/kplane)
#   CA:     kplane's, from the current context
#   user:   a token of the ServiceAccount kube-system/kplane-syncer-TARGET, which
#           docs/deploy/kplane-rbac binds to verb `sync` on synctargets/TARGET, valid for
#           DURATION (default 8760h; kplane caps it at --service-account-max-token-expiration).
# Usage: syncer-kubeconfig.sh TARGET [SERVER] [DURATION] > syncer.kubeconfig
set -euo pipefail

if [[ $# -lt 1 || $# -gt 3 ]]; then
  echo "usage: $0 TARGET [SERVER] [DURATION]" >&2
  exit 2
fi
target=$1
server=${2:-https://kplane.kplane.svc:6443}
duration=${3:-8760h}

current=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
case $current in
  */clusters/*) cluster=${current##*/clusters/} ;;
  *) cluster=root ;;
esac
cluster=${cluster%/}
ca=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
if [[ -z $ca ]]; then
  echo "$0: the current context's cluster has no certificate-authority-data" >&2
  echo "(a kubeconfig from 'kplane kubeconfig PATH' inlines it)" >&2
  exit 1
fi
token=$(kubectl -n kube-system create token "kplane-syncer-$target" --duration "$duration")

cat <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: kplane
  cluster:
    server: ${server%/}/clusters/$cluster
    certificate-authority-data: $ca
users:
- name: kplane-syncer-$target
  user:
    token: $token
contexts:
- name: kplane
  context:
    cluster: kplane
    user: kplane-syncer-$target
current-context: kplane
KUBECONFIG
