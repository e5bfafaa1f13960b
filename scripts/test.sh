#!/usr/bin/env bash
# The test command (README.md "Set-up"; .ci/run runs it): installs what the tests need beyond a
# Rust toolchain when it is missing, then runs every test of the workspace with every feature.
# Arguments go to `cargo test` (`scripts/test.sh -- --nocapture`); every test binary runs even when
# one fails (--no-fail-fast), so that one run shows every failure.
#
# What the tests need, from Debian's packages (apt-get, as root):
#   chromium   tests/operator.rs loads the web UI in a headless browser (SPARKWIRE_CHROMIUM names
#              another binary, and then chromium is not installed);
#   tshark     tests/wireshark.rs runs the dissector (wireshark-common's question, may non-root
#              users capture, is answered no before apt asks it);
#   zookeeper  tests/zookeeper_ha.rs runs a real ZooKeeper (3.8, on the package's Java); the tests
#              start it on free ports and stop it by pid, and the package's own service is never
#              started.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
if [ -z "${SPARKWIRE_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  missing+=(chromium)
fi
if ! command -v tshark >/dev/null 2>&1; then
  missing+=(tshark)
fi
if [ ! -f /usr/share/java/zookeeper.jar ]; then
  missing+=(zookeeper)
fi

if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/test.sh: the tests need Debian's packages ${missing[*]}, not installed here;" >&2
    echo "installing them takes root. Run this script as root, or install them first:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "scripts/test.sh: the tests need ${missing[*]}, and this machine has no apt-get:" >&2
    echo "install it with the system's package manager (Debian's package names) and run again." >&2
    exit 1
  fi
  echo "== installing ${missing[*]} (what the tests need beyond the toolchain)"
  apt-get update -qq
  if [[ " ${missing[*]} " == *" tshark "* ]]; then
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  fi
  for package in "${missing[@]}"; do
    # ZooKeeper's recommends are its service's; the browser's and tshark's are kept (fonts, …).
    extra=()
    if [ "$package" = zookeeper ]; then
      extra=(--no-install-recommends)
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${extra[@]}" "$package" >/dev/null
  done
fi

echo "== cargo test --workspace --all-features"
exec cargo test --workspace --all-features --no-fail-fast "$@"
