#!/usr/bin/env bash
# Installs Sluice's build and test dependencies on Debian 12 (bookworm).
# Every dependency is a Debian package; the CUDA Toolkit is optional and is
# picked up from /usr/local/cuda when present.
#
# --cli installs only what the command line is built from (tools/demo.sh).
# Extra Debian packages may be named as arguments; tools/cross-test.sh passes
# the aarch64 cross compiler and qemu-user that way, so a plain run (amd64
# only) neither installs nor checks them.
set -euo pipefail

# What the `sluice` command line is built from (tools/demo.sh installs only these).
cli_packages=(
  build-essential cmake ninja-build pkg-config
  libluajit2-5.1-dev      # LuaJIT 2.1 (OpenResty branch), GC64 on amd64
  libconcurrentqueue-dev  # moodycamel::ConcurrentQueue
  libuv1-dev
  libdlpack-dev
  libxxhash-dev
  zlib1g-dev              # gzip-compressed tar shards and JSON lines
  libzstd-dev             # zstd-compressed JSON lines
  libjpeg62-turbo-dev libspng-dev    # image decode ops (libjpeg-turbo's jpeglib.h API)
  liburing-dev            # small-file reads in one io_uring submission per job
  libcurl4-openssl-dev ca-certificates  # s3:// and https:// shards (runtime/remote), the system's CA store
  libsnappy-dev libzstd-dev liblz4-dev libbrotli-dev  # Parquet page codecs (zlib above for GZIP)
  libsentencepiece-dev    # sluice.sentencepiece (runtime/text; -DSLUICE_SENTENCEPIECE=OFF builds without it)
)
# The rest: tests, the Python package, fuzzing (tools/test.sh).
test_packages=(
  catch2                  # Catch2 v2, with CMake integration for CTest
  libjpeg-turbo-progs     # cjpeg/djpeg: JPEG test files and reference pixels (ops tests)
  python3-pil             # PIL reference pixels (ops tests; compared when present)
  clang libclang-rt-14-dev  # libFuzzer for tools/fuzz.sh
  openmpi-bin             # mpirun, for the distributed test
  python3-dev pybind11-dev  # the Python extension module sluice._sluice (pip install ., tools/python-test.sh)
  python3-venv python3-pip python3-setuptools python3-pytest python3-torch  # its venv, offline build and tests
  python3-numpy           # .npz/.npy test files written by numpy itself (tests skip without it)
  python3-torchvision     # real torchvision transforms in the Python tests (augmentation seeding)
  nginx-light             # the HTTP server of the remote tests (Range, an access log to count requests)
  nodejs npm              # tests/npm: s3rver (the S3 server of the remote tests), DuckDB and parquet-wasm (Parquet oracles); tests skip without them
  python3-boto3           # uploads to s3rver in the remote tests (an independent S3 client)
  sentencepiece python3-sentencepiece  # spm_train models and the reference ids for the tokenizer tests
)

if [ "${1:-}" = "--cli" ]; then
  shift
  packages=("${cli_packages[@]}" "$@")
else
  packages=("${cli_packages[@]}" "${test_packages[@]}" "$@")
fi

missing=()
for p in "${packages[@]}"; do
  # A Node.js that ships its own npm (NodeSource's, for one) conflicts with Debian's npm package.
  if [ "$p" = npm ] && command -v npm > /dev/null; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all dependencies are installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
