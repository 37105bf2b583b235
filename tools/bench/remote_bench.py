"""Remote shards: local files against http:// and s3:// through the node cache,
cold and warm, and against boto3 + tarfile in a PyTorch IterableDataset, in one run.

Run by hand (not in CI), with a build's command line and Debian's python3
(torch, boto3), nginx and node; s3rver comes from tests/npm (npm install):

    /usr/bin/python3 tools/bench/remote_bench.py --sluice build-cc/tools/sluice \\
        [--shards 32] [--samples 64] [--sample-kib 64] [--workers 2] [--runs 3] [--rate 20m] [--index] [--json FILE]

The data: --shards WebDataset tar shards of --samples samples of --sample-kib KiB
(random bytes, a .bin member each). Every contender reads every sample once
and hands on its length, so the figures are I/O and transport, not compute.

  local        sluice run over the local shards (the baseline: ratios are against it)
  http_cold    http:// from nginx on 127.0.0.1 into an empty cache
  http_first   the same, the first batch only (`sluice run --batches 1`): how long a
               training job waits before it can start
  http_warm    the same again, the cache full: no request
  s3_cold      s3:// from s3rver on 127.0.0.1 into an empty cache
  s3_warm      the same again
  boto3        torch DataLoader(num_workers=--workers) over an IterableDataset whose
               workers each get their shards with boto3 get_object and read them
               with tarfile (the usual hand-written loader; no cache, so every
               epoch pays the network like a cold one)

--index publishes each shard's index beside it (`sluice index`: URL.idx), so
the remote sources open with the indexes only and the workers fetch the shards
in plan order (docs/pipelines.md); without it every shard is downloaded when
the source opens. Run it both ways to compare.

Each figure is the wall time of one whole pass, started as a fresh process
(sluice run, or python for the DataLoader: start-up included on both sides);
the median of --runs runs, the ratio local / contender (1.0 = as fast as local
files). --rate gives nginx a per-connection limit_rate (e.g. 20m = 20 MB/s);
s3rver has none. --link RATE,DELAY (root only, e.g. --link 400mbit,5ms) puts
both servers in a network namespace behind a veth pair whose two ends tc
shapes with a token bucket (tbf) at RATE, and the clients reach them through
a delaying TCP proxy on 127.0.0.1 that holds every chunk DELAY ms each way
(pipelined: a round trip costs 2 x DELAY, as to a store in the same region). Printed with the
machine's first-touch cost per 4 KiB page (tools/bench/README.md).
"""

import argparse
import io
import json
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
from pytorch_baseline import first_touch_us  # noqa: E402

PIPELINE = """local sluice = require('sluice')
return sluice.pipeline {{
  source = sluice.tar {{ '{source}' }},
  fields = {{ {{ 'len', 'int64' }} }},
  map = function(s, ctx) return {{ len = s.fields.bin.nbytes }} end,
  batch_size = 32, workers = {workers},
}}
"""

BOTO3_LOADER = r"""
import io, sys, tarfile, boto3, torch
endpoint, bucket, shards, workers = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4])

class Shards(torch.utils.data.IterableDataset):
    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        mine = shards[info.id::info.num_workers] if info else shards
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="S3RVER",
                          aws_secret_access_key="S3RVER", region_name="us-east-1")
        for key in mine:
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            with tarfile.open(fileobj=io.BytesIO(body)) as tar:
                for member in tar:
                    if member.name.endswith(".bin"):
                        yield len(tar.extractfile(member).read())

n = 0
for batch in torch.utils.data.DataLoader(Shards(), batch_size=32, num_workers=workers):
    n += len(batch)
print(n)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Link:
    """A network namespace with the servers, behind a shaped veth pair; host
    10.231.0.1, namespace 10.231.0.2. Removed on close."""

    def __init__(self, spec):
        rate, delay = spec.split(",")
        self.ns = f"sluice-bench-{os.getpid()}"
        host, inner = f"sbh{os.getpid() % 100000}", f"sbn{os.getpid() % 100000}"
        self.address = "10.231.0.2"
        run = lambda *a: subprocess.run(list(a), check=True)
        run("ip", "netns", "add", self.ns)
        run("ip", "link", "add", host, "type", "veth", "peer", "name", inner)
        run("ip", "link", "set", inner, "netns", self.ns)
        run("ip", "addr", "add", "10.231.0.1/24", "dev", host)
        run("ip", "link", "set", host, "up")
        ns = ["ip", "netns", "exec", self.ns]
        run(*ns, "ip", "addr", "add", "10.231.0.2/24", "dev", inner)
        run(*ns, "ip", "link", "set", inner, "up")
        run(*ns, "ip", "link", "set", "lo", "up")
        for prefix, dev in (([], host), (ns, inner)):
            run(*prefix, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", "256kb",
                "latency", "100ms")
        self.prefix = ns
        self.delay_s = float(delay.rstrip("ms")) / 1e3
        import asyncio
        import threading
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def proxy(self, port):
        """A delaying proxy on 127.0.0.1 to the namespace's `port`; returns its port."""
        import asyncio
        delay = self.delay_s

        async def pump(reader, writer):
            # Chunks are stamped when read and written DELAY later, in order:
            # latency without a cut in throughput.
            queue = asyncio.Queue()

            async def read():
                while True:
                    data = await reader.read(1 << 16)
                    await queue.put((self.loop.time() + delay, data))
                    if not data:
                        return

            reading = asyncio.ensure_future(read())
            while True:
                due, data = await queue.get()
                await asyncio.sleep(max(0.0, due - self.loop.time()))
                if not data:
                    break
                writer.write(data)
                await writer.drain()
            await reading
            writer.close()

        async def serve(client_reader, client_writer):
            try:
                server_reader, server_writer = await asyncio.open_connection(self.address, port)
                await asyncio.gather(pump(client_reader, server_writer), pump(server_reader, client_writer))
            except (ConnectionError, OSError):
                client_writer.close()

        async def start():
            server = await asyncio.start_server(serve, "127.0.0.1", 0)
            return server.sockets[0].getsockname()[1]

        return asyncio.run_coroutine_threadsafe(start(), self.loop).result()

    def close(self):
        subprocess.run(["ip", "netns", "del", self.ns], check=False)


def wait_port(port, address="127.0.0.1"):
    for _ in range(1000):
        try:
            socket.create_connection((address, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.01)
    raise RuntimeError(f"nothing listens on {port}")


def make_shards(root, shards, samples, sample_kib):
    root.mkdir(parents=True)
    names = []
    for s in range(shards):
        name = f"train-{s:06d}.tar"
        with tarfile.open(root / name, "w") as tar:
            for i in range(samples):
                data = os.urandom(sample_kib * 1024)
                member = tarfile.TarInfo(f"{s * samples + i:08d}.bin")
                member.size = len(data)
                tar.addfile(member, io.BytesIO(data))
        names.append(name)
    return names


def start_nginx(work, root, rate, prefix=(), address="127.0.0.1"):
    port = free_port()
    t = str(work)
    conf = work / "nginx.conf"
    conf.write_text(
        f"daemon off; master_process off; worker_processes 1; pid {t}/nginx.pid; error_log {t}/nginx-error.log;\n"
        f"events {{ worker_connections 256; }}\nhttp {{ access_log off; keepalive_requests 10000;\n"
        + (f"  limit_rate {rate};\n" if rate else "")
        + "".join(f"  {k}_temp_path {t};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        + f"  server {{ listen {address}:{port}; root {root}; location / {{ }} }}\n}}\n")
    proc = subprocess.Popen([*prefix, "/usr/sbin/nginx", "-e", f"{t}/nginx-error.log", "-p", t, "-c", str(conf)])
    wait_port(port, address)
    return proc, port


def start_s3rver(work, prefix=(), address="127.0.0.1"):
    js = REPO / "build-cc" / "npm" / "node_modules" / "s3rver" / "bin" / "s3rver.js"
    if not js.exists():
        prefix = work / "npm"
        prefix.mkdir()
        shutil.copy(REPO / "tests" / "npm" / "package.json", prefix)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix)], check=True,
                       stdout=subprocess.DEVNULL)
        js = prefix / "node_modules" / "s3rver" / "bin" / "s3rver.js"
    port = free_port()
    (work / "s3").mkdir()
    proc = subprocess.Popen([*prefix, "/usr/bin/node", "--openssl-legacy-provider", str(js), "-d", str(work / "s3"),
                             "-p", str(port), "-a", address, "--silent", "--configure-bucket", "bench"],
                            stdout=subprocess.DEVNULL)
    wait_port(port, address)
    return proc, f"http://{address}:{port}"


def timed(command, env):
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sluice", default=str(REPO / "build-cc" / "tools" / "sluice"))
    parser.add_argument("--shards", type=int, default=32)
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--sample-kib", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rate", default="", help="nginx limit_rate per connection, e.g. 20m")
    parser.add_argument("--link", default="", help="RATE,DELAY: servers in a netns behind tc, e.g. 400mbit,10ms")
    parser.add_argument("--index", action="store_true", help="publish each shard's index beside it (lazy remote reads)")
    parser.add_argument("--json", default="")
    args = parser.parse_args()

    import numpy
    work = pathlib.Path(tempfile.mkdtemp(prefix="sluice-remote-bench-"))
    servers = []
    link = None
    try:
        names = make_shards(work / "shards", args.shards, args.samples, args.sample_kib)
        if args.index:
            subprocess.run([args.sluice, "index", *(str(work / "shards" / n) for n in names)], check=True,
                           stdout=subprocess.DEVNULL)
        prefix, address = (), "127.0.0.1"
        if args.link:
            link = Link.__new__(Link)
            link.ns = f"sluice-bench-{os.getpid()}"  # removed in `finally` even if set-up fails
            link.__init__(args.link)
            prefix, address = link.prefix, link.address
        nginx, http_port = start_nginx(work, work / "shards", args.rate, prefix, address)
        servers.append(nginx)
        s3rver, endpoint = start_s3rver(work, prefix, address)
        servers.append(s3rver)
        if link:  # the clients go through the delaying proxies
            http_port = link.proxy(http_port)
            endpoint = f"http://127.0.0.1:{link.proxy(int(endpoint.rsplit(':', 1)[1]))}"
            address = "127.0.0.1"
        import boto3
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER",
                          region_name="us-east-1")
        for name in names + ([n + ".idx" for n in names] if args.index else []):
            s3.upload_file(str(work / "shards" / name), "bench", "train/" + name)

        last = f"{args.shards - 1:06d}"
        sources = {
            "local": str(work / "shards" / "train-*.tar"),
            "http": f"http://{address}:{http_port}/train-{{000000..{last}}}.tar",
            "s3": "s3://bench/train/*.tar",
        }
        for kind, source in sources.items():
            (work / f"{kind}.lua").write_text(PIPELINE.format(source=source, workers=args.workers))
        (work / "boto3_loader.py").write_text(BOTO3_LOADER)
        base_env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="S3RVER",
                        AWS_SECRET_ACCESS_KEY="S3RVER", AWS_REGION="us-east-1")

        times = {k: [] for k in ("local", "http_cold", "http_first", "http_warm", "s3_cold", "s3_warm", "boto3")}
        for run in range(args.runs):
            for kind in ("local", "http", "s3"):
                env = dict(base_env, SLUICE_CACHE_DIR=str(work / f"cache-{kind}-{run}"))
                command = [args.sluice, "run", str(work / f"{kind}.lua"), "--quiet"]
                if kind == "local":
                    times["local"].append(timed(command, env))
                else:
                    if kind == "http":
                        first = dict(env, SLUICE_CACHE_DIR=str(work / f"cache-first-{run}"))
                        times["http_first"].append(timed(command + ["--batches", "1"], first))
                    times[f"{kind}_cold"].append(timed(command, env))
                    times[f"{kind}_warm"].append(timed(command, env))
            keys = ",".join("train/" + n for n in names)
            times["boto3"].append(timed(["/usr/bin/python3", str(work / "boto3_loader.py"), endpoint, "bench", keys,
                                         str(args.workers)], base_env))

        touch = first_touch_us(numpy)
        data_mb = args.shards * args.samples * args.sample_kib * 1024 / 1e6
        local = statistics.median(times["local"])
        results = {"data_mb": data_mb, "shards": args.shards, "workers": args.workers, "runs": args.runs,
                   "rate": args.rate or None, "link": args.link or None, "index": args.index, "first_touch_us": touch,
                   "cases": {}}
        print(f"{data_mb:.0f} MB in {args.shards} shards, {args.workers} workers, medians of {args.runs} runs, "
              f"first touch {touch:.2f} us per 4 KiB page" + (f", nginx limit_rate {args.rate}" if args.rate else "")
              + (f", link {args.link} (tbf rate, a delaying proxy each way)" if args.link else "")
              + (", indexes beside the shards (the workers fetch them)" if args.index else ", no indexes (all fetched at open)"))
        for case, values in times.items():
            median = statistics.median(values)
            if case == "http_first":  # one batch, not the data: no rate; the ratio is to a whole local pass
                results["cases"][case] = {"seconds": median, "ratio_vs_local": local / median, "per_run": values}
                print(f"  {case:10s} {median:7.2f} s  {'(first batch)':>13s}  ratio vs local {local / median:5.2f}")
                continue
            results["cases"][case] = {"seconds": median, "mb_per_s": data_mb / median, "ratio_vs_local": local / median,
                                      "per_run": values}
            print(f"  {case:10s} {median:7.2f} s  {data_mb / median:8.1f} MB/s  ratio vs local {local / median:5.2f}")
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(results, indent=2))
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait()
        if link:
            link.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
