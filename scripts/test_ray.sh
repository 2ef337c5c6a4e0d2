#!/usr/bin/env bash
# The `ray` test group: `advisor matrix --ray` against a real three-node Ray cluster on this machine.
#
#   bash scripts/test_ray.sh                 # installs the `ray` extra into $VENV (default .venv), runs the group
#   SKIP_INSTALL=1 bash scripts/test_ray.sh  # Ray already installed
#
# Every Ray node binds to 127.0.0.1 only because the tests run in a private network namespace that has
# nothing but loopback (`unshare -n`, then `ip link set lo up`): outside one, Ray binds to the machine's
# other addresses and probes an outside resolver. The namespace has its own PIDs too, so no Ray process
# outlives the run, and Ray's session files go to a temporary RAY_TMPDIR removed at the end. That needs
# root (or unprivileged user namespaces: `unshare -r`). Timings of each phase are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY="$VENV/bin/python"
[ -x "$PY" ] || python3 -m venv "$VENV"
start=$(date +%s)
if [ -z "${SKIP_INSTALL:-}" ]; then
    "$VENV/bin/pip" install -q --disable-pip-version-check -e '.[dev,ray]'
fi
installed=$(date +%s)
command -v ip >/dev/null || { echo "no 'ip' command to bring loopback up: apt-get install -y iproute2" >&2; exit 1; }
NS=(unshare --net --pid --fork --mount-proc)
[ "$(id -u)" -eq 0 ] || NS+=(--map-root-user)
RAY_TMP=$(mktemp -d /tmp/advisor-ray.XXXXXX)
trap 'rm -rf "$RAY_TMP"' EXIT
rc=0
# bash stays the namespace's first process: when it ends, the kernel ends every Ray process left in it
RAY_USAGE_STATS_ENABLED=0 RAY_TMPDIR="$RAY_TMP" "${NS[@]}" \
    bash -c "ip link set lo up && '$PY' -m pytest -m ray -q -p no:cacheprovider tests/ray $*" || rc=$?
if [ $rc -eq 5 ]; then echo "ray tests collected nothing: that is a failure"; rc=1; fi
end=$(date +%s)
echo "install: $((installed - start)) s, ray tests: $((end - installed)) s (exit $rc)"
exit $rc
