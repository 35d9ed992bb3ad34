#!/usr/bin/env bash
# Installs, once, the tools the test suite uses besides the three servers:
#   pyarrow   an independent Parquet and Arrow reader to check our files against (PyPI)
#   chromium  headless browser for the dashboard test (Debian)
#   promtool  checks infra/prometheus/alerts.yaml (Debian's prometheus package ships it)
# usage: infra/local/testdeps.sh
SERVICE=testdeps
. "$(dirname "$0")/lib.sh"

PY=${PYTHON:-python3}
if ! "$PY" -c "import pyarrow" >/dev/null 2>&1; then
  command -v "$PY" >/dev/null || apt_install python3 python3-pip
  say "installing pyarrow from PyPI (once)"
  "$PY" -m pip install -q pyarrow >"$TRENDING_RUN/pip.log" 2>&1 ||
    "$PY" -m pip install -q --break-system-packages pyarrow >>"$TRENDING_RUN/pip.log" 2>&1 ||
    { tail -n 20 "$TRENDING_RUN/pip.log" >&2; die "pip install pyarrow failed (log above)"; }
fi
command -v chromium >/dev/null || apt_install chromium
command -v promtool >/dev/null || apt_install prometheus
say "pyarrow $("$PY" -c 'import pyarrow; print(pyarrow.__version__)'), $(chromium --version 2>/dev/null | head -n 1), $(promtool --version 2>/dev/null | head -n 1)"
