# Sourced by the scripts in tools/: installs what is missing from Debian 12's packages.
# `apt-get update` runs at most once, and only when something is missing.

REDLOCK_PACKAGES_BUILD="g++ cmake ninja-build libhiredis-dev libuv1-dev libcli11-dev libssl-dev liblua5.1-0-dev pkgconf"
# Tests: GoogleTest, real redis-server processes, clang for the sanitizers, python3 for the
# mutation check (tools/mutants.py), python3-yaml for the docker-compose check, pkgconf for
# the pkg-config consumer, nftables and
# iproute2 for the chaos suite's partitions, openssl to make the TLS tests' certificates,
# doxygen for the API reference check.
REDLOCK_PACKAGES_TEST="libgtest-dev libgmock-dev libbenchmark-dev redis-server redis-tools clang python3 python3-yaml pkgconf nftables iproute2 openssl doxygen prometheus-cpp-dev prometheus"
# Benchmarks: gnuplot draws the chart, python3 writes the report, iproute2 gives `ss`.
REDLOCK_PACKAGES_BENCH="gnuplot-nox python3 iproute2"

redlock_ensure_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]}" >&2; return 1; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The real peers of the migration test (tests/peers/node: node-redlock, pinned by its
# package-lock.json): Node.js and npm from Debian when there is no npm yet, then `npm ci` once per
# checkout (again when the lock file changed). A failure here fails the test command: the peer
# tests would otherwise be skipped.
redlock_ensure_peers() {
  local dir="${1:-tests/peers/node}"
  if ! command -v npm >/dev/null 2>&1; then
    redlock_ensure_packages nodejs npm
  fi
  if [ ! -f "$dir/node_modules/.package-lock.json" ] ||
     [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    echo "== installing the peers of the migration test (npm ci in $dir)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  fi
}

# Jobs for the build: the machine's cores, at least 1.
redlock_jobs() { nproc 2>/dev/null || echo 2; }
