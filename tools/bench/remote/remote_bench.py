#!/usr/bin/python3
"""WebDataset shards over a shaped link: Sluice on local files, on s3:// cold
and warm, and boto3 + tarfile under PyTorch's DataLoader, in one run.

The benchmark makes a network namespace with a veth pair to it, serves the
shards from s3rver inside it, and shapes the link: bandwidth with `tc qdisc
tbf` on both ends of the veth, latency with a small TCP proxy (also inside the
namespace, in front of s3rver) that holds each request's first bytes for the
setting's delay before passing them on, so every request waits that long for
its response. The proxy counts requests and response bytes for every client
alike (Sluice reports its own counts too).

Cases, interleaved in each run (so that load from elsewhere hits them alike):
  local   `sluice run` on the shards in a local folder (in the page cache)
  cold    `sluice run` on s3://bench/train-{...}.tar with an empty node cache
  warm    the same again, with the cache the cold run left
  boto3   what a PyTorch user writes today: an IterableDataset whose workers
          each take every W-th shard, get_object it and stream the body
          through tarfile ("r|"), under DataLoader with the same worker count
          and batch size
Every pipeline touches every sample the same way: one byte per 64 (a sum),
its length and its label. Time to first batch and the epoch's time are taken
from the start of `sluice run` (Sluice) or of `iter(DataLoader)` (boto3: its
process start and `import torch` are not counted) to the arrival of the first
and last batch; samples/s = samples of the epoch / the epoch's time.
A setting's optional third part adds that many microseconds of CPU per sample
to both pipelines (a spin on the thread's CPU clock), standing for a decode, so
that the link can be faster than the pipeline consumes.
Per setting also: a probe of what the served path delivers (curl, 8 GETs at
once, as Sluice's transfer engine), and one extra cold run with cache_limit_mb
a quarter of the data set, reporting the most the cache directory held; the
CPU seconds Sluice's processes and the store's (s3rver, the proxy) used, and
the bound they set where the store shares the pipeline's cores: the cold
epoch cannot take less than their sum over the cores. --trace-cold FILE keeps
the first cold run's trace (downloads as spans beside each worker's fills).

Targets (from the issue): a cold epoch at >= 0.9 of local files whenever the
link is faster than the pipeline consumes; >= 2x the boto3 baseline;
downloaded bytes per epoch <= 1.05x the data set.

usage (as root; needs ip, tc, curl, node, and s3rver, which it installs with npm
from tests/npm/package.json when missing):
  /usr/bin/python3 tools/bench/remote/remote_bench.py [--sluice build-cc/tools/sluice]
      [--runs 3] [--workers 2] [--shards 48] [--samples 48] [--sample-kib 96]
      [--links 20ms:1gbit:0,20ms:1gbit:2000,50ms:200mbit:0] [--json FILE]
"""
import argparse
import atexit
import fcntl
import io
import json
import os
import platform
import random
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.dirname(HERE))
BUCKET = "bench"
NS = "sluicebench%d" % os.getpid()
VETH_HOST, VETH_NS = "sbh%d" % (os.getpid() % 100000), "sbn%d" % (os.getpid() % 100000)
HOST_IP, NS_IP = "10.213.%d.1" % (os.getpid() % 250), "10.213.%d.2" % (os.getpid() % 250)
PROXY_PORT, S3RVER_PORT = 9000, 9001
KEYS = {"AWS_ACCESS_KEY_ID": "S3RVER", "AWS_SECRET_ACCESS_KEY": "S3RVER", "AWS_REGION": "us-east-1"}
METHODS = (b"GET ", b"HEAD ", b"PUT ", b"POST ", b"DELETE ")


# ---------------------------------------------------------------- the proxy
# Runs as its own process inside the namespace: `remote_bench.py --proxy ...`.

def proxy_main(listen, upstream_port, delay_s, control_path):
    # Two threads a connection. Requests (small) pass through Python, each
    # one's first bytes held delay_s; responses are moved by the kernel
    # (splice through a pipe), not copied through Python: the proxy stands for
    # the network, and its CPU is on the pipeline's cores.
    counts = {"requests": 0, "response_bytes": 0, "connections": 0}
    lock = threading.Lock()

    def shut(sock):
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def pump_up(src, dst):
        # Client to server. A chunk that starts a request waits delay_s first;
        # later chunks (bodies) follow it in order, undelayed.
        try:
            while data := src.recv(1 << 18):
                if data.startswith(METHODS):
                    with lock:
                        counts["requests"] += 1
                    if delay_s > 0:
                        time.sleep(delay_s)
                dst.sendall(data)
        except OSError:
            pass
        shut(dst)

    def pump_down(src, dst):
        r, w = os.pipe()
        try:
            fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 1 << 20)
        except OSError:
            pass  # the default pipe size: more splices, same bytes
        try:
            while n := os.splice(src.fileno(), w, 1 << 20):
                with lock:
                    counts["response_bytes"] += n
                while n:
                    n -= os.splice(r, dst.fileno(), n)
        except OSError:
            pass
        finally:
            os.close(r)
            os.close(w)
        shut(dst)

    def handle(client):
        with lock:
            counts["connections"] += 1
        try:
            server = socket.create_connection(("127.0.0.1", upstream_port))
        except OSError:
            client.close()
            return
        up = threading.Thread(target=pump_up, args=(client, server), daemon=True)
        up.start()
        pump_down(server, client)
        up.join()
        client.close()
        server.close()

    def control():
        with socket.socket(socket.AF_UNIX) as u:
            u.bind(control_path)
            u.listen()
            while True:
                conn, _ = u.accept()
                with conn, lock:
                    conn.sendall(json.dumps(counts).encode())

    threading.Thread(target=control, daemon=True).start()
    host, port = listen.rsplit(":", 1)
    with socket.socket() as l:
        l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        l.bind((host, int(port)))
        l.listen(256)
        while True:
            client, _ = l.accept()
            threading.Thread(target=handle, args=(client,), daemon=True).start()


def proxy_counts(control_path):
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(control_path)
        data = b""
        while chunk := s.recv(4096):
            data += chunk
    return json.loads(data)


# ---------------------------------------------------------------- the boto3 baseline
# Runs as its own process: `remote_bench.py --boto3 ...`; prints one JSON line.

def boto3_main(endpoint, keys, workers, batch_size, work_us, seed):
    import boto3
    import botocore.config
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info

    class Shards(IterableDataset):
        def __init__(self, keys):
            self.keys = keys

        def __iter__(self):
            info = get_worker_info()
            keys = list(self.keys)
            random.Random(seed).shuffle(keys)
            if info is not None:
                keys = keys[info.id::info.num_workers]
            s3 = boto3.client("s3", endpoint_url=endpoint, config=botocore.config.Config(retries={"max_attempts": 6}))
            for key in keys:
                body = s3.get_object(Bucket=BUCKET, Key=key)["Body"]
                sample = {}
                with tarfile.open(fileobj=body, mode="r|") as tar:
                    for member in tar:
                        stem, ext = member.name.split(".", 1)
                        data = tar.extractfile(member).read()
                        if sample and sample["key"] != stem:
                            yield touch(sample)
                            sample = {}
                        sample["key"] = stem
                        sample[ext] = data
                if sample:
                    yield touch(sample)

    def touch(sample):
        payload = np.frombuffer(sample["bin"], np.uint8)
        if work_us > 0:
            stop = time.thread_time() + work_us / 1e6
            while time.thread_time() < stop:
                pass
        return {"sum": int(payload[::64].sum(dtype=np.int64)), "len": len(sample["bin"]), "label": int(sample["cls"])}

    loader = DataLoader(Shards(keys), batch_size=batch_size, num_workers=workers)
    start = time.perf_counter()
    first = None
    samples = 0
    for batch in loader:
        if first is None:
            first = time.perf_counter() - start
        samples += len(batch["len"])
    print(json.dumps({"ttfb": first, "seconds": time.perf_counter() - start, "samples": samples,
                      "torch": torch.__version__}))


# ---------------------------------------------------------------- set-up

def sh(*cmd, check=True, **kw):
    return subprocess.run(list(cmd), check=check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def make_shards(folder, shards, samples, sample_kib, seed):
    """WebDataset shards: per sample NNNNNN.bin (random bytes, 0.5x-1.5x sample_kib) and NNNNNN.cls."""
    rng = random.Random(seed)
    os.makedirs(folder, exist_ok=True)
    names, total = [], 0
    for s in range(shards):
        name = "train-%06d.tar" % s
        path = os.path.join(folder, name)
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
            for i in range(samples):
                key = "%06d" % (s * samples + i)
                for ext, data in (("bin", os.urandom(int(sample_kib * 1024 * rng.uniform(0.5, 1.5)))),
                                  ("cls", str(rng.randrange(1000)).encode())):
                    info = tarfile.TarInfo(key + "." + ext)
                    info.size = len(data)
                    info.mtime = 0
                    tar.addfile(info, fileobj=io.BytesIO(data))
        names.append(name)
        total += os.path.getsize(path)
    return names, total


class Link:
    """The namespace, the veth pair, s3rver and the proxy; torn down by close() (also at exit and on signals)."""

    def __init__(self, work, s3rver_js):
        self.work = work
        self.procs = []
        self.closed = False
        atexit.register(self.close)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, lambda n, f: sys.exit(128 + n))
        sh("ip", "netns", "add", NS)
        sh("ip", "link", "add", VETH_HOST, "type", "veth", "peer", "name", VETH_NS)
        sh("ip", "link", "set", VETH_NS, "netns", NS)
        sh("ip", "addr", "add", HOST_IP + "/30", "dev", VETH_HOST)
        sh("ip", "link", "set", VETH_HOST, "up")
        self.ns("ip", "addr", "add", NS_IP + "/30", "dev", VETH_NS)
        self.ns("ip", "link", "set", VETH_NS, "up")
        self.ns("ip", "link", "set", "lo", "up")
        store = os.path.join(work, "s3rver")
        os.makedirs(store, exist_ok=True)
        # s3rver's listing tokens use DES, which Node's OpenSSL 3 keeps in its legacy provider.
        self.s3rver = self.spawn(["/usr/bin/node", "--openssl-legacy-provider", s3rver_js, "-d", store, "-p",
                                  str(S3RVER_PORT), "-a", "127.0.0.1", "--silent", "--configure-bucket", BUCKET],
                                 os.path.join(work, "s3rver.log"))
        self.proxy = None
        self.control = os.path.join(work, "proxy.sock")

    def ns(self, *cmd):
        return sh("ip", "netns", "exec", NS, *cmd)

    def spawn(self, cmd, log):
        proc = subprocess.Popen(["ip", "netns", "exec", NS] + cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def shape(self, delay_ms, rate):
        """tbf at `rate` on both ends of the veth; a proxy with `delay_ms` in front of s3rver."""
        for dev, run in ((VETH_NS, self.ns), (VETH_HOST, lambda *c: sh(*c))):
            run("tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate, "burst", "1mb", "latency", "100ms")
        if self.proxy:
            self.stop(self.proxy)
        if os.path.exists(self.control):
            os.unlink(self.control)
        self.proxy = self.spawn([sys.executable, os.path.abspath(__file__), "--proxy", "%s:%d" % (NS_IP, PROXY_PORT),
                                 str(S3RVER_PORT), str(delay_ms / 1000), self.control],
                                os.path.join(self.work, "proxy.log"))
        deadline = time.time() + 20
        while not os.path.exists(self.control):
            if time.time() > deadline or self.proxy.poll() is not None:
                sys.exit("the proxy did not start: see " + os.path.join(self.work, "proxy.log"))
            time.sleep(0.05)

    def endpoint(self):
        return "http://%s:%d" % (NS_IP, PROXY_PORT)

    def counts(self):
        return proxy_counts(self.control)

    def store_cpu(self):
        """CPU seconds so far of s3rver and of the proxy."""
        return cpu_seconds(self.s3rver.pid), (cpu_seconds(self.proxy.pid) if self.proxy else 0.0)

    def stop(self, proc):
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def close(self):
        if self.closed:
            return
        self.closed = True
        for proc in reversed(self.procs):
            self.stop(proc)
        sh("ip", "link", "del", VETH_HOST, check=False)
        sh("ip", "netns", "del", NS, check=False)


def upload(endpoint, folder, names):
    import boto3
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER")
    deadline = time.time() + 30
    while True:
        try:
            s3.head_bucket(Bucket=BUCKET)
            break
        except Exception:
            if time.time() > deadline:
                raise
            time.sleep(0.2)
    for name in names:
        with open(os.path.join(folder, name), "rb") as f:
            s3.put_object(Bucket=BUCKET, Key=name, Body=f.read())


def s3rver_path(given):
    if given:
        return given
    prefix = os.path.join(ROOT, "build-cc", "npm")
    js = os.path.join(prefix, "node_modules", "s3rver", "bin", "s3rver.js")
    if not os.path.exists(js):
        os.makedirs(prefix, exist_ok=True)
        shutil.copy(os.path.join(ROOT, "tests", "npm", "package.json"), prefix)
        if subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", prefix]).returncode != 0:
            sys.exit("npm could not install s3rver into " + prefix)
    return js


# ---------------------------------------------------------------- the cases

PIPELINE = """local sluice = require("sluice")
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock, bench_timespec* t);
]]
local WORK_US, ts = %d, ffi.new("bench_timespec")
local function cpu_us()  -- this thread's CPU time
  ffi.C.clock_gettime(3, ts)
  return tonumber(ts.tv_sec) * 1e6 + tonumber(ts.tv_nsec) / 1e3
end
return sluice.pipeline {
  source = sluice.tar { %s },
  fields = { { "sum", "int64" }, { "len", "int64" }, { "label", "int64" } },
  map = function(s, ctx)
    local bin = s.fields.bin
    local p, n, acc = bin.data, bin.nbytes, 0
    for i = 0, n - 1, 64 do acc = acc + p[i] end
    if WORK_US > 0 then
      local stop = cpu_us() + WORK_US
      while cpu_us() < stop do end
    end
    return { sum = acc, len = n, label = tonumber(ffi.string(s.fields.cls.data, s.fields.cls.nbytes)) }
  end,
  batch_size = %d, shuffle = true, seed = 1, epochs = 1, workers = %d,
}
"""
# --format tfrecord: the same samples as tf.train.Example records, written from
# the tar shards by `sluice write` (which puts each shard's index, NAME.idx,
# beside it: uploaded too, so that the workers fetch the shards lazily).
PIPELINE_TFRECORD = PIPELINE.replace("sluice.tar { %s }", "sluice.tfrecord { %s }").replace(
    """    local bin = s.fields.bin
    local p, n, acc = bin.data, bin.nbytes, 0""",
    """    local ex = sluice.example(s)
    local bin = ex:bytes("bin")
    local p, n, acc = bin.data, bin.nbytes, 0""").replace(
    "label = tonumber(ffi.string(s.fields.cls.data, s.fields.cls.nbytes))",
    "label = tonumber(ex:int64s(\"cls\").data[0])")
assert PIPELINE_TFRECORD.count("sluice.example") == 1
CONVERT = """local sluice = require("sluice")
local ffi = require("ffi")
return sluice.pipeline {
  source = sluice.tar { %s },
  fields = { { "bin", "bytes", %d }, { "cls", "int64" } },
  map = function(s, ctx)
    return { bin = ffi.string(s.fields.bin.data, s.fields.bin.nbytes),
             cls = tonumber(ffi.string(s.fields.cls.data, s.fields.cls.nbytes)) }
  end,
  batch_size = 16, workers = 2,
}
"""


def make_tfrecords(sluice, tar_folder, names, folder, samples, sample_kib, work):
    """The tar shards' samples as TFRecord shards (+ NAME.idx), `samples` a shard, by `sluice write`."""
    script = os.path.join(work, "convert.lua")
    with open(script, "w") as f:
        f.write(CONVERT % (", ".join('"%s"' % os.path.join(tar_folder, n) for n in names), int(sample_kib * 1024 * 1.5) + 64))
    sh(sluice, "write", script, "--to", folder, "--format", "tfrecord", "--shard-samples", str(samples), cwd=work)
    out = sorted(n for n in os.listdir(folder) if n.endswith(".tfrecord"))
    return out + [n + ".idx" for n in out], sum(os.path.getsize(os.path.join(folder, n)) for n in out)


PROGRESS = re.compile(r"^\[\s*[\d.]+s\] .*? batch (\d+)")
REMOTE = re.compile(r"^remote +(\d+) objects: (\d+) from the node cache, (\d+) downloaded \(([\d.]+) MB, (\d+) requests")
DELIVERED = re.compile(r"^delivered +(\d+) batches, (\d+) samples")


def du(folder):
    total = 0
    for entry in os.scandir(folder):
        if entry.is_file(follow_symlinks=False):
            try:
                total += entry.stat().st_size
            except FileNotFoundError:
                pass
    return total


def run_sluice(sluice, script, env, cwd, watch=None, extra=()):
    """Times one `sluice run` epoch from its start to its first and last batch; `watch`: a folder whose size is polled."""
    peak = [0, None]  # bytes, seconds at which the folder first held its final size
    stop = threading.Event()
    start = time.perf_counter()

    def poll():
        while not stop.wait(0.02):
            size = du(watch)
            if size > peak[0]:
                peak[0], peak[1] = size, time.perf_counter() - start

    poller = threading.Thread(target=poll, daemon=True) if watch else None
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen([sluice, "run", script, "--interval", "0.000001", *extra], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if poller:
        poller.start()
    first = last = None
    err = []
    for line in proc.stderr:
        if PROGRESS.match(line):
            last = time.perf_counter() - start
            if first is None:
                first = last
        else:
            err.append(line)
    out = proc.stdout.read()
    proc.wait()
    stop.set()
    if poller:
        poller.join()
    if proc.returncode != 0 or first is None:
        sys.exit("sluice run %s failed (%d):\n%s%s" % (script, proc.returncode, out, "".join(err)))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = {"ttfb": first, "seconds": last, "samples": None,
              "cpu": after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime,
              "notes": [l.strip() for l in err if l.startswith("note:")]}
    for line in out.splitlines():
        m = DELIVERED.match(line)
        if m:
            result["samples"] = int(m.group(2))
        m = REMOTE.match(line)
        if m:
            result.update(objects=int(m.group(1)), hits=int(m.group(2)), misses=int(m.group(3)),
                          sluice_mb=float(m.group(4)), sluice_requests=int(m.group(5)))
    if watch:
        result["cache_peak_bytes"], result["cache_full_at"] = peak
    return result


def run_boto3(endpoint, names, workers, batch_size, work_us, env):
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--boto3", endpoint, ",".join(names),
                           str(workers), str(batch_size), str(work_us)], env=env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    if proc.returncode != 0:
        sys.exit("the boto3 baseline failed:\n" + proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def probe(endpoint, names, work):
    """MB/s of the served path (proxy, s3rver, the shaped veth): curl GETs every shard, 8 at once as Sluice does."""
    config = os.path.join(work, "probe.curl")
    with open(config, "w") as f:
        for name in names:
            f.write('url = "%s/%s/%s"\noutput = "/dev/null"\n' % (endpoint, BUCKET, name))
    start = time.perf_counter()
    proc = subprocess.run(["curl", "-sS", "--fail", "-Z", "--parallel-max", "8", "--aws-sigv4", "aws:amz:us-east-1:s3",
                           "--user", "S3RVER:S3RVER", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-w", "%{size_download}\n", "-K", config],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit("curl could not fetch the shards: " + proc.stderr)
    return sum(int(n) for n in proc.stdout.split()) / 1e6 / seconds


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far (0 once it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def measured(link, fn):
    """fn()'s result with the proxy's request and byte counts over its call, and the CPU seconds the store's
    processes (s3rver and the proxy, on this machine's cores as the pipeline) spent meanwhile."""
    before = link.counts()
    cpu_before = link.store_cpu()
    result = fn()
    after = link.counts()
    result["requests"] = after["requests"] - before["requests"]
    result["bytes"] = after["response_bytes"] - before["response_bytes"]
    cpu_after = link.store_cpu()
    result["store_cpu"] = sum(cpu_after) - sum(cpu_before)
    result["proxy_cpu"] = cpu_after[1] - cpu_before[1]
    return result


def med(runs, key):
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sluice", default=os.path.join(ROOT, "build-cc", "tools", "sluice"))
    ap.add_argument("--s3rver", default="", help="s3rver's bin/s3rver.js (default: build-cc/npm, installed if missing)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--shards", type=int, default=48)
    ap.add_argument("--samples", type=int, default=48, help="samples per shard")
    ap.add_argument("--sample-kib", type=float, default=96, help="mean payload per sample")
    ap.add_argument("--links", default="20ms:1gbit:0,20ms:1gbit:2000,50ms:200mbit:0",
                    help="DELAY:RATE[:WORK],...: RATE as tc takes it; WORK: microseconds of CPU per sample that "
                         "both pipelines spend (as a decode would), so that the link can be faster than the pipeline")
    ap.add_argument("--format", choices=("tar", "tfrecord"), default="tar",
                    help="the shards Sluice reads: tar, or TFRecord with each shard's index beside it in the store "
                         "(written from the tar shards by `sluice write`; the workers fetch them as the plan needs "
                         "them); the boto3 baseline reads the tar shards either way")
    ap.add_argument("--index", action="store_true",
                    help="tar: publish each shard's index beside it (NAME.idx, by `sluice index`), so that the "
                         "workers fetch the shards as the plan needs them instead of all at open")
    ap.add_argument("--shuffle-window", type=int, default=0,
                    help="Sluice's pipelines shuffle shards, then samples within windows of this many shards "
                         "(the locality shuffle); 0: one global shuffle, whose every batch draws on every shard")
    ap.add_argument("--json", default="", help="also write every figure to this file")
    ap.add_argument("--trace-cold", default="", help="write the first cold run's Chrome trace (sluice run --trace) here")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("remote_bench.py needs root (ip netns, tc)")
    for tool in ("ip", "tc", "/usr/bin/node"):
        if not shutil.which(tool):
            sys.exit(tool + " is missing")
    if not os.access(args.sluice, os.X_OK):
        sys.exit(args.sluice + " is not built (ninja -C build-cc sluice)")
    s3rver_js = s3rver_path(args.s3rver)

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    import numpy
    from pytorch_baseline import first_touch_us  # tools/bench: the cost DataLoader's ratios are printed with
    touch = first_touch_us(numpy)
    print("machine     %s, %d cores (%s), Linux %s, %.1f GiB" % (
        platform.node(), os.cpu_count(), cpu, platform.release(),
        os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30))
    print("first touch %.3f us per 4 KiB page (64 MiB of fresh pages, median of 3)" % touch)
    print("load        %.2f %.2f %.2f before" % os.getloadavg())

    work = tempfile.mkdtemp(prefix="sluice-remote-bench-")
    atexit.register(shutil.rmtree, work, True)
    local = os.path.join(work, "local")
    names, dataset = make_shards(local, args.shards, args.samples, args.sample_kib, seed=7)
    tar_names = names
    if args.format == "tfrecord":
        uploads, dataset = make_tfrecords(args.sluice, local, names, os.path.join(work, "tfrecord"), args.samples,
                                          args.sample_kib, work)
    samples = args.shards * args.samples
    print("data set    %d shards, %d samples, %.1f MB (mean sample %.0f KiB), batch %d, %d workers" % (
        args.shards, samples, dataset / 1e6, args.sample_kib, args.batch_size, args.workers))

    link = Link(work, s3rver_js)
    link.shape(0, "10gbit")
    if args.format == "tar" and args.index:
        sh(args.sluice, "index", *[os.path.join(local, n) for n in names])
        upload(link.endpoint(), local, [n + ".idx" for n in names])
    upload(link.endpoint(), local, names)
    shards_lua = ", ".join('"%s"' % os.path.join(local, n) for n in names)
    url = "s3://%s/train-{%06d..%06d}.tar" % (BUCKET, 0, args.shards - 1)
    pipeline = PIPELINE
    if args.format == "tfrecord":
        tf_folder = os.path.join(work, "tfrecord")
        upload(link.endpoint(), tf_folder, uploads)
        shards_lua = ", ".join('"%s"' % os.path.join(tf_folder, n) for n in uploads if n.endswith(".tfrecord"))
        url = "s3://%s/shard-{%06d..%06d}.tfrecord" % (BUCKET, 0, args.shards - 1)
        pipeline = PIPELINE_TFRECORD
    limit_mb = max(1, dataset // 4 >> 20)
    cache = os.path.join(work, "cache")
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    s3_env = dict(base_env, SLUICE_CACHE_DIR=cache, AWS_ENDPOINT_URL=link.endpoint(), **KEYS)

    report = {"machine": {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release()},
              "first_touch_us": touch, "dataset_bytes": dataset, "samples": samples, "links": []}
    for spec in args.links.split(","):
        delay, rate, work_us = (spec.split(":") + ["0"])[:3]
        delay_ms, work_us = float(delay.rstrip("ms")), int(work_us)
        link.shape(delay_ms, rate)
        scripts = {}
        for name, source in (("local", shards_lua), ("s3", '"%s"' % url)):
            scripts[name] = os.path.join(work, name + ".lua")
            with open(scripts[name], "w") as f:
                text = pipeline % (work_us, source, args.batch_size, args.workers)
                if args.shuffle_window > 0:
                    text = text.replace("shuffle = true,", "shuffle = true, shuffle_window = %d," % args.shuffle_window)
                f.write(text)
        runs = {"local": [], "cold": [], "warm": [], "boto3": []}
        for i in range(args.runs):
            runs["local"].append(run_sluice(args.sluice, scripts["local"], base_env, work))
            shutil.rmtree(cache, ignore_errors=True)
            os.makedirs(cache)
            trace = ("--trace", os.path.abspath(args.trace_cold)) if args.trace_cold and i == 0 else ()
            runs["cold"].append(measured(link, lambda: run_sluice(args.sluice, scripts["s3"], s3_env, work, cache,
                                                                  trace)))
            runs["warm"].append(measured(link, lambda: run_sluice(args.sluice, scripts["s3"], s3_env, work)))
            runs["boto3"].append(measured(link, lambda: run_boto3(link.endpoint(), tar_names, args.workers,
                                                                    args.batch_size, work_us, s3_env)))
        probe_mb_s = probe(link.endpoint(), names, work)
        shutil.rmtree(cache, ignore_errors=True)
        os.makedirs(cache)
        limited = measured(link, lambda: run_sluice(args.sluice, scripts["s3"], s3_env, work, cache,
                                                          ("--cache-limit-mb", str(limit_mb))))

        rate_mb = None
        m = re.match(r"([\d.]+)([kmg]?)bit", rate.lower())
        if m:
            rate_mb = float(m.group(1)) * {"": 1e-6, "k": 1e-3, "m": 1, "g": 1e3}[m.group(2)] / 8
        print()
        print("link        %s ms per request, %s (%s MB/s); pipeline work %d us CPU per sample; medians of %d runs" % (
            delay.rstrip("ms"), rate, "%.0f" % rate_mb if rate_mb else "?", work_us, args.runs))
        print("%-7s %9s %11s %10s %10s %9s   %s" % ("case", "ttfb s", "epoch s", "samples/s", "MB down",
                                                 "requests", "per run: epoch s"))
        summary = {}
        for case, rs in runs.items():
            for r in rs:
                r["rate"] = r["samples"] / r["seconds"]
            summary[case] = {k: med(rs, k) for k in ("ttfb", "seconds", "rate", "bytes", "requests",
                                                     "sluice_mb", "sluice_requests", "cache_full_at", "store_cpu",
                                                     "proxy_cpu", "cpu")}
            s = summary[case]
            print("%-7s %9.3f %11.3f %10.0f %10s %9s   %s" % (
                case, s["ttfb"], s["seconds"], s["rate"],
                "%.1f" % (s["bytes"] / 1e6) if s["bytes"] is not None else "-",
                "%.0f" % s["requests"] if s["requests"] is not None else "-",
                " ".join("%.2f" % r["seconds"] for r in rs)))
        local_mb_s = dataset / 1e6 / summary["local"]["seconds"]
        faster = rate_mb is not None and min(rate_mb, probe_mb_s) > local_mb_s
        cold_vs_local = summary["cold"]["rate"] / summary["local"]["rate"]
        cold_vs_boto3 = summary["cold"]["rate"] / summary["boto3"]["rate"]
        warm_vs_boto3 = summary["warm"]["rate"] / summary["boto3"]["rate"]
        bytes_ratio = summary["cold"]["bytes"] / dataset
        print("link probe  curl, 8 GETs at once: %.0f MB/s through the proxy and s3rver" % probe_mb_s)
        print("pipeline    consumes %.0f MB/s on local files; the link is %s than that" % (
            local_mb_s, "faster" if faster else "slower"))
        print("sluice      own count, cold epoch: %.1f MB, %.0f requests (the proxy: %.1f MB, %.0f requests)" % (
            summary["cold"]["sluice_mb"] or 0, summary["cold"]["sluice_requests"] or 0,
            summary["cold"]["bytes"] / 1e6, summary["cold"]["requests"]))
        print("store CPU   s3rver and the proxy, on this machine's %d cores: %.2f s in the cold epoch (%.2f cores "
              "of its %.2f s; the proxy %.2f s of it), %.2f s in boto3's (%.2f cores)" % (
                  os.cpu_count(), summary["cold"]["store_cpu"], summary["cold"]["store_cpu"] / summary["cold"]["seconds"],
                  summary["cold"]["seconds"], summary["cold"]["proxy_cpu"], summary["boto3"]["store_cpu"],
                  summary["boto3"]["store_cpu"] / summary["boto3"]["seconds"]))
        print("sluice CPU  user + system of its processes: local %.2f s, cold %.2f s, warm %.2f s" % (
            summary["local"]["cpu"], summary["cold"]["cpu"], summary["warm"]["cpu"]))
        # What the cores allow: the cold epoch's CPU, Sluice's and the store's, spread over every core
        # with no idle moment, against the local epoch's time.
        cpu_bound = (summary["cold"]["cpu"] + summary["cold"]["store_cpu"]) / os.cpu_count()
        print("cpu bound   the cold epoch's CPU (Sluice's and the store's) needs %.2f s of %d cores: cold / local "
              "at most %.2f here, where the store shares the pipeline's cores" % (
                  cpu_bound, os.cpu_count(), min(1.0, summary["local"]["seconds"] / cpu_bound)))
        print("downloads   cold: the cache held the whole data set %.2f s after start, first batch at %.2f s" % (
            summary["cold"]["cache_full_at"] or float("nan"), summary["cold"]["ttfb"]))
        print("ratio       cold / local  %.2f samples/s  (target >= 0.9 %s)  [first touch %.3f us/page]" % (
            cold_vs_local, ("met" if cold_vs_local >= 0.9 else "NOT met") if faster else
            "applies only when the link is faster", touch))
        print("ratio       cold / boto3  %.2f samples/s  (target >= 2: %s)  [first touch %.3f us/page]" % (
            cold_vs_boto3, "met" if cold_vs_boto3 >= 2 else "NOT met", touch))
        print("ratio       warm / boto3  %.2f samples/s  [first touch %.3f us/page]" % (warm_vs_boto3, touch))
        print("ratio       cold bytes / data set  %.3f  (target <= 1.05: %s; boto3 %.3f)" % (
            bytes_ratio, "met" if bytes_ratio <= 1.05 else "NOT met", summary["boto3"]["bytes"] / dataset))
        print("cache limit cache_limit_mb = %d (%.0f%% of the data set): the cache dir peaked at %.1f MB; "
              "%.1f MB downloaded, epoch %.2f s%s" % (
                  limit_mb, 100 * (limit_mb << 20) / dataset, limited["cache_peak_bytes"] / 1e6,
                  limited["bytes"] / 1e6, limited["seconds"],
                  "; " + " ".join(limited["notes"])[:160] if limited["notes"] else ""))
        print("shuffle     %s" % ("shuffle_window = %d (the locality shuffle)" % args.shuffle_window
                                   if args.shuffle_window else "global (every batch draws on every shard)"))
        report["links"].append({"delay_ms": delay_ms, "rate": rate, "work_us": work_us, "rate_mb_s": rate_mb, "runs": runs,
                                "medians": summary, "cold_vs_local": cold_vs_local, "cold_vs_boto3": cold_vs_boto3,
                                "warm_vs_boto3": warm_vs_boto3, "cold_bytes_vs_dataset": bytes_ratio,
                                "link_faster_than_pipeline": faster, "probe_mb_s": probe_mb_s, "cache_limited": limited})
    print()
    print("load        %.2f %.2f %.2f after" % os.getloadavg())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    link.close()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--proxy":
        proxy_main(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5])
    elif len(sys.argv) > 1 and sys.argv[1] == "--boto3":
        boto3_main(sys.argv[2], sys.argv[3].split(","), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), seed=1)
    else:
        main()
