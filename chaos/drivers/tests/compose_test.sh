#!/bin/sh
# ctest chaos.compose_driver: the chaos suite against a "deployment" through the real compose
# driver (chaos/drivers/compose), where Docker does not run. Five local redis-server processes,
# configured as docker-compose.yml configures its masters (appendonly yes, appendfsync always),
# stand for its services redis1 ... redis5; a stand-in `docker` on PATH (./docker) turns each
# `docker compose ACTION SERVICE` the driver runs into the same fault on the process registered
# for that service (chaos/drivers/local), after checking that the compose file has the service.
#
#   compose_test.sh RUNNER      RUNNER: the redlock_chaos binary
#
# It checks that three short scenarios pass that way, that the driver was called with every
# action and the right service for each node, that a failing driver command fails the suite,
# that the runner refuses bad deployment arguments, and that the nodes are left running. Run it
# inside a private network namespace (chaos/in_netns.sh): the servers listen on loopback ports
# there. It stops only the servers it started, by pid. About 40 s.
set -eu

runner=${1:?usage: compose_test.sh RUNNER}
here=$(cd "$(dirname "$0")" && pwd)
drivers=$(dirname "$here")
work=$(mktemp -d "${TMPDIR:-/tmp}/redlock-compose-driver-XXXXXX")
export REDLOCK_CHAOS_LOCAL_DIR="$work/nodes"
mkdir -p "$REDLOCK_CHAOS_LOCAL_DIR"
services="redis1 redis2 redis3 redis4 redis5"
passed=0

cleanup() {
  for s in $services; do "$drivers/local" stop "$s" 2>/dev/null || true; done
  if [ "$passed" = 1 ]; then rm -rf "$work"; else echo "kept for inspection: $work" >&2; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The five nodes, each on a free loopback port (another try on a new port when one is taken).
nodes=
for s in $services; do
  mkdir -p "$work/$s"
  tries=0
  until [ $tries -ge 20 ]; do
    port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000))
    echo "$port" >"$REDLOCK_CHAOS_LOCAL_DIR/$s.port"
    echo "exec redis-server --port $port --bind 127.0.0.1 --appendonly yes" \
      "--appendfsync always --save '' --dir '$work/$s' --logfile '$work/$s/redis.log'" \
      >"$REDLOCK_CHAOS_LOCAL_DIR/$s.cmd"
    if "$drivers/local" start "$s" 2>>"$work/start.log"; then break; fi
    tries=$((tries + 1))
  done
  [ $tries -lt 20 ] || fail "cannot start $s (see $work/start.log)"
  nodes="${nodes:+$nodes,}redis://127.0.0.1:$port"
done

export PATH="$here:$PATH"  # the stand-in docker
started=$(date +%s)

# 1. Three scenarios through the compose driver: node crashes that stay down (nodes 3 and 4),
# pauses and kills of a bare quorum with immediate restarts (persistence keeps the lock), and
# pauses of a minority, again and again.
echo "== the suite through chaos/drivers/compose"
if ! "$runner" --driver "$drivers/compose" --nodes "$nodes" --smoke --out "$work/logs" \
  minority_crash bare_quorum_fsync_restart pause_minority; then
  fail "the suite failed through the compose driver (logs: $work/logs)"
fi
calls="$REDLOCK_CHAOS_LOCAL_DIR/docker.calls"
# minority_crash kills nodes 3 and 4; bare_quorum_fsync_restart pauses 3 and 4, kills them and
# node 0, and starts them again; pause_minority pauses and unpauses random pairs.
for call in "kill redis4" "kill redis5" "kill redis1" "pause redis4" "pause redis5" \
  "start redis1" "start redis4" "start redis5" "unpause"; do
  grep -q "^$call" "$calls" || fail "the driver never ran 'docker compose $call'"
done
if grep -v -E '^(kill|pause|unpause|start) redis[1-5]$' "$calls"; then
  fail "unexpected docker compose calls (above)"
fi

# 2. The nodes are left as found: every one runs and answers.
for s in $services; do
  p=$(cat "$REDLOCK_CHAOS_LOCAL_DIR/$s.port")
  [ "$(timeout 2 redis-cli -h 127.0.0.1 -p "$p" ping 2>/dev/null)" = PONG ] ||
    fail "$s does not answer after the suite"
done

# 3. A driver command that fails fails the scenario, and the runner says which.
echo "== a failing 'docker compose pause' must fail the suite"
status=0
REDLOCK_CHAOS_SHIM_FAIL=pause "$runner" --driver "$drivers/compose" --nodes "$nodes" --smoke \
  --out "$work/logs-failing" bare_quorum_fsync_restart >"$work/failing.out" 2>&1 || status=$?
cat "$work/failing.out"
[ "$status" = 1 ] || fail "the runner exited $status with a failing driver, not 1"
grep -q "node 3: pause failed" "$work/failing.out" || fail "the failed pause is not reported"

# 4. Bad deployment arguments: usage errors (2), before any node is touched.
expect_usage() {
  status=0
  "$runner" "$@" >/dev/null 2>&1 || status=$?
  [ "$status" = 2 ] || fail "redlock_chaos $* exited $status, not 2"
}
four=${nodes%,*}
expect_usage --driver "$drivers/compose" --nodes "$four" --smoke
expect_usage --nodes "$nodes" --smoke
expect_usage --driver "$drivers/compose" --nodes "$nodes" crash_storm
expect_usage --driver "$drivers/compose" --nodes "$nodes" --tls --smoke
expect_usage --driver "$work/no-such-driver" --nodes "$nodes" --smoke

# 5. The driver itself refuses what it cannot map, without calling docker.
before=$(wc -l <"$calls")
for bad in "bogus 0" "kill 5" "kill x" "kill"; do
  status=0
  # shellcheck disable=SC2086 # the words of a bad call, split on purpose
  "$drivers/compose" $bad 2>/dev/null || status=$?
  [ "$status" = 2 ] || fail "compose $bad exited $status, not 2"
done
[ "$(wc -l <"$calls")" = "$before" ] || fail "a refused call reached docker"

echo "compose driver test passed in $(($(date +%s) - started)) s"
passed=1
