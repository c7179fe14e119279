#!/usr/bin/env bash
# Lays out the root filesystem of kplane's container image, which the Containerfile's
# runtime stage copies onto `scratch`: the kplane binary without its debug info at
# /usr/local/bin/kplane, the shared libraries `ldd` names for it and the dynamic loader at
# the paths the binary asks for, the system's CA bundle (for HTTPS to an OIDC issuer
# without --oidc-ca-file) and an empty /tmp. Nothing else: no shell, no package manager.
#
#   scripts/image-rootfs.sh BINARY DIR    # DIR must not exist or be empty
#
# The Containerfile's build stage runs it on the binary it builds; `make image-prebuilt`
# and the e2e test (e2e/tests/image.rs) run it on a binary built outside the image.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 BINARY DIR" >&2
  exit 2
fi
bin=$1
dir=$2
if [ ! -f "$bin" ] || [ ! -x "$bin" ]; then
  echo "error: $bin is not an executable file" >&2
  exit 1
fi
if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
  echo "error: $dir is not empty" >&2
  exit 1
fi
for tool in ldd objcopy; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "error: $0 needs $tool (Debian: apt-get install libc-bin binutils)" >&2
    exit 1
  fi
done

install -d "$dir/usr/local/bin" "$dir/tmp"
chmod 1777 "$dir/tmp"
# Debug info off, the symbol table kept: panics' backtraces and perf still name functions.
objcopy --strip-debug "$bin" "$dir/usr/local/bin/kplane"
chmod 0755 "$dir/usr/local/bin/kplane"

# `ldd` lines: "libm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x...)", the loader as
# "/lib64/ld-linux-x86-64.so.2 (0x...)", the vDSO without a path (the kernel provides it).
# A statically linked binary has none ("not a dynamic executable").
libs=$(ldd "$bin" 2>&1) || {
  case $libs in
    *"not a dynamic executable"*|*"statically linked"*) libs="" ;;
    *) echo "error: ldd $bin: $libs" >&2; exit 1 ;;
  esac
}
if grep -q "not found" <<<"$libs"; then
  echo "error: $bin needs libraries this machine lacks:" >&2
  grep "not found" <<<"$libs" >&2
  exit 1
fi
for path in $(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' <<<"$libs"); do
  install -d "$dir$(dirname "$path")"
  # -L: the file itself under the name the binary asks for, not the distribution's symlink.
  cp -L "$path" "$dir$path"
done

for ca in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
  if [ -f "$ca" ]; then
    install -d "$dir$(dirname "$ca")"
    cp -L "$ca" "$dir$ca"
  fi
done
