#!/usr/bin/env bash
# Browser tests: the dashboard (streamlit on 127.0.0.1) and the HTML report in headless Chromium.
#
#   bash scripts/test_browser.sh        # installs what is missing, runs `pytest -m browser`, times it
#
# Installs: the `dashboard` extra (streamlit) and Playwright's Python package into $VENV
# (default .venv), and Debian's `chromium` with apt-get when /usr/bin/chromium is missing.
# Playwright drives the system Chromium: `playwright install` (a browser download) is never run.
# Screenshots, the generated reports and a PDF land in $ADVISOR_ARTIFACTS
# (default /tmp/advisor-browser-artifacts); the path is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
export ADVISOR_ARTIFACTS=${ADVISOR_ARTIFACTS:-/tmp/advisor-browser-artifacts}
start=$(date +%s)

[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check -e '.[dev,dashboard,browser]'

if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "no /usr/bin/chromium: run 'sudo apt-get install -y chromium' (or set ADVISOR_CHROMIUM to a Chromium binary)" >&2
        exit 1
    fi
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium
fi
echo "chromium: $(/usr/bin/chromium --version 2>/dev/null || echo unknown)"

rm -rf "$ADVISOR_ARTIFACTS"
mkdir -p "$ADVISOR_ARTIFACTS"
rc=0
timeout 900 "$VENV/bin/python" -m pytest tests/browser -m browser -q -s -p no:cacheprovider || rc=$?
if [ $rc -eq 5 ]; then echo "browser tests collected nothing: that is a failure"; rc=1; fi
echo "artifacts (screenshots, reports, PDF): $ADVISOR_ARTIFACTS"
ls -1 "$ADVISOR_ARTIFACTS" || true
echo "browser tests took $(( $(date +%s) - start )) s (exit $rc)"
exit $rc
