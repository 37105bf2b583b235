#!/usr/bin/env bash
# The benchmarks' photo set in one step: downloads Debian's python3-skimage and
# python3-sklearn into WORK/ (nothing installed) and runs photos.py, which
# writes WORK/sets/SET/train/CLASS/*.jpg and WORK/sets/photos.txt.
#   scripting/bench/imagenet/photos.sh WORK
set -euo pipefail
work=$1
here=$(cd "$(dirname "$0")" && pwd)
(cd "$work" && apt-get download python3-skimage python3-sklearn >/dev/null &&
  for deb in *.deb; do dpkg-deb -x "$deb" pkg; done)
/usr/bin/python3 "$here/photos.py" "$work/pkg" "$work/sets"
