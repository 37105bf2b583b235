#!/usr/bin/env bash
# Builds and installs the Python package `sluice` into a venv under
# build-python/venv (Debian's python3 with --system-site-packages, so that
# Debian's python3-torch and python3-numpy are visible; nothing is downloaded),
# then runs its tests (python/tests) with pytest. Extra arguments go to pytest.
# Run from anywhere. Exit status: pytest's, where "no tests collected" (5) is
# a failure too.
set -euo pipefail
cd "$(dirname "$0")/.."

python=/usr/bin/python3
venv=build-python/venv
if [ ! -x "$venv/bin/python" ]; then
  echo "== python: creating $venv"
  "$python" -m venv --system-site-packages "$venv"
fi

echo "== python: pip install --no-build-isolation --no-index ."
"$venv/bin/python" -m pip install --no-build-isolation --no-index --quiet .

echo "== python: pytest python/tests"
status=0
# From build-python/, so that `import sluice` is the installed package, not python/sluice.
(cd build-python && "venv/bin/python" -m pytest -q ../python/tests "$@") || status=$?
if [ "$status" -eq 5 ]; then
  echo "python-test: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
