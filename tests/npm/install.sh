#!/usr/bin/env bash
# Installs the test tools listed in tests/npm/package.json into PREFIX (a
# folder of the build directory), once, however many tests ask at the same
# time: the first to take PREFIX/.install.lock installs, the others wait on
# the lock and then find PREFIX/.installed (a copy of the package.json that
# was installed). Exit 0: installed; otherwise the reason on stderr.
set -euo pipefail
prefix=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$prefix"
exec 9> "$prefix/.install.lock"
flock 9
if [ -f "$prefix/.installed" ] && cmp -s "$here/package.json" "$prefix/.installed"; then exit 0; fi
if ! command -v npm > /dev/null; then echo "npm is not installed (tools/install-deps.sh installs it)" >&2; exit 2; fi
cp "$here/package.json" "$prefix/package.json"
if ! npm install --no-audit --no-fund --prefix "$prefix" > "$prefix/install.log" 2>&1; then
  echo "npm install failed (no registry?): see $prefix/install.log" >&2
  exit 1
fi
cp "$here/package.json" "$prefix/.installed"
