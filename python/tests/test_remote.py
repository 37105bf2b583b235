"""Remote shards from Python: a pipeline.lua over http:// (Debian's nginx on
127.0.0.1, started and stopped here) gives the batches the local shards give,
and stats()["remote"] counts the downloads, then the warm cache's hits."""
import os
import pathlib
import shutil
import subprocess
import tarfile

import pytest

import sluice
from conftest import free_port, wait_for_port

NGINX = "/usr/sbin/nginx"


@pytest.fixture
def http_root(tmp_path):
    if not os.path.exists(NGINX):
        pytest.skip("nginx is not installed (tools/install-deps.sh installs nginx-light)")
    root = tmp_path / "www"
    root.mkdir()
    for s in range(3):
        with tarfile.open(root / f"shard-{s}.tar", "w") as tar:
            for i in range(4):
                key = str(100 + s * 4 + i)
                path = tmp_path / f"{key}.txt"
                path.write_bytes(b"x" * (10 + s * 4 + i))
                tar.add(path, arcname=f"{key}.txt")
    port, conf = free_port(), tmp_path / "nginx.conf"
    t = str(tmp_path)
    conf.write_text(
        f"daemon off; master_process off; worker_processes 1; pid {t}/nginx.pid; error_log {t}/error.log;\n"
        f"events {{ worker_connections 64; }}\nhttp {{ access_log {t}/access.log;\n"
        + "".join(f"  {k}_temp_path {t};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        + f"  server {{ listen 127.0.0.1:{port}; root {root}; location / {{ }} }}\n}}\n")
    server = subprocess.Popen([NGINX, "-e", f"{t}/error.log", "-p", t, "-c", str(conf)])
    try:
        wait_for_port(port)
        yield root, f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait()


def write_pipeline(path, source):
    path.write_text(
        "local sluice = require('sluice')\n"
        "return sluice.pipeline {\n"
        f"  source = sluice.tar {{ '{source}' }},\n"
        "  fields = { { 'key', 'int32' }, { 'len', 'int32' } },\n"
        "  map = function(s, ctx) return { key = tonumber(s.key), len = s.fields.txt.nbytes } end,\n"
        "  batch_size = 5, shuffle = true, seed = 4, workers = 2,\n"
        "}\n")
    return str(path)


def batches(path):
    loader = sluice.Loader(path, format="numpy")
    out = [(b["key"].tolist(), b["len"].tolist()) for b in loader]
    return out, loader.stats().get("remote")


def test_http_shards_match_local_ones_and_the_cache_is_counted(http_root, tmp_path, monkeypatch):
    root, base = http_root
    monkeypatch.setenv("SLUICE_CACHE_DIR", str(tmp_path / "cache"))
    local, none = batches(write_pipeline(tmp_path / "local.lua", f"{root}/shard-*.tar"))
    assert none is None
    remote_path = write_pipeline(tmp_path / "remote.lua", base + "/shard-{0..2}.tar")
    cold, stats = batches(remote_path)
    assert cold == local
    assert stats["objects"] == 3 and stats["cache_misses"] == 3 and stats["cache_hits"] == 0
    assert stats["bytes_downloaded"] == sum(p.stat().st_size for p in root.glob("*.tar"))
    warm, stats = batches(remote_path)
    assert warm == local
    # No data request: one conditional HEAD an object found the cached copies current.
    assert stats["cache_hits"] == 3 and stats["requests"] == 0
    assert stats["revalidated"] == 3 and stats["changed"] == 0


def test_a_missing_shard_is_one_error_naming_it(http_root, tmp_path, monkeypatch):
    _, base = http_root
    monkeypatch.setenv("SLUICE_CACHE_DIR", str(tmp_path / "cache"))
    path = write_pipeline(tmp_path / "missing.lua", base + "/nope.tar")
    with pytest.raises(Exception, match=r"nope\.tar: HTTP 404"):
        sluice.Loader(path)


def test_cache_dir_keyword_names_the_cache_directory(http_root, tmp_path, monkeypatch):
    _, base = http_root
    monkeypatch.setenv("SLUICE_CACHE_DIR", str(tmp_path / "elsewhere"))
    path = write_pipeline(tmp_path / "remote.lua", base + "/shard-{0..2}.tar")
    loader = sluice.Loader(path, cache_dir=tmp_path / "mine")
    assert sum(1 for _ in loader) > 0
    assert sorted(p.name.split("-", 1)[1] for p in (tmp_path / "mine").glob("*-shard-*.tar")) == [
        "shard-0.tar", "shard-1.tar", "shard-2.tar"]
    assert not (tmp_path / "elsewhere").exists()
