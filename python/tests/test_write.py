"""sluice.write: a Python map dataset of real photos into tar and TFRecord
shards, made in 1 and 2 workers (identical shards), read back by Python's
tarfile and through sluice.tfrecord, equal to the dataset read directly;
resuming after a kill; usage errors."""
import io
import json
import os
import pathlib
import signal
import subprocess
import sys
import tarfile
import time

import numpy as np
import pytest

import sluice
from conftest import REPO, free_port, wait_for_port

PHOTOS = REPO.parent / "shared" / "data" / "images" / "pillow-tests"
NAMES = ["hopper.jpg", "flower.jpg", "flower2.jpg", "rgb.jpg", "hopper.png", "pil168.png", "ftex_uncompressed.png"]


class Photos:
    """Each photo's bytes unchanged, a label, a caption (str) and a small
    uint8 thumbnail cut from the bytes (deterministic: no decode needed)."""

    def __init__(self):
        self.files = [(PHOTOS / n).read_bytes() for n in NAMES]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        raw = self.files[i]
        return {"img": raw, "label": i % 3, "caption": "photo %d: %s" % (i, NAMES[i]),
                "thumb": np.frombuffer(raw[:48], dtype=np.uint8).reshape(4, 4, 3)}


pytestmark = pytest.mark.skipif(not PHOTOS.is_dir(), reason="no real photos (%s)" % PHOTOS)


def files(folder):
    return {p.name: p.read_bytes() for p in sorted(pathlib.Path(folder).iterdir())}


@pytest.mark.parametrize("fmt", ["tar", "tfrecord"])
def test_dataset_written_in_1_and_2_workers_reads_back_equal(tmp_path, fmt):
    ds = Photos()
    room = {"img": 1 << 20}  # the largest photo's bytes fit (the default room is 4x the first's)
    one = sluice.write(ds, tmp_path / "one", format=fmt, shard_samples=3, workers=1, batch_size=2, ragged=room)
    two = sluice.write(ds, tmp_path / "two", format=fmt, shard_samples=3, workers=2, batch_size=2, ragged=room)
    assert one == two
    assert files(tmp_path / "one") == files(tmp_path / "two")
    assert one["complete"] and one["samples"] == 7 and [s["samples"] for s in one["shards"]] == [3, 3, 1]
    fields = {f["name"]: (f["dtype"], f["shape"], f["ext"]) for f in one["fields"]}
    assert fields["img"] == ("bytes", [], "img")
    assert fields["caption"] == ("bytes", [], "caption")
    assert fields["label"] == ("int64", [], "label.cls")
    assert fields["thumb"] == ("uint8", [4, 4, 3], "thumb.npy")
    if fmt == "tar":
        seen = 0
        for shard in one["shards"]:
            with tarfile.open(tmp_path / "one" / shard["name"]) as t:
                for m in t.getmembers():
                    key, ext = m.name.split(".", 1)
                    i, data = int(key), t.extractfile(m).read()
                    want = ds[i]
                    if ext == "img":
                        assert data == want["img"]
                        seen += 1
                    elif ext == "caption":
                        assert data.decode() == want["caption"]
                    elif ext == "label.cls":
                        assert int(data) == want["label"]
                    else:
                        assert ext == "thumb.npy"
                        assert np.array_equal(np.load(io.BytesIO(data)), want["thumb"])
        assert seen == 7
    else:
        (tmp_path / "read.lua").write_text("""local ffi = require("ffi")
local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.tfrecord{ "one/*.tfrecord" }, batch_size = 1, workers = 1,
  fields = { { "img", "bytes", 1000000 }, { "label", "int64" }, { "thumb", "uint8", { 4, 4, 3 } },
             { "key", "int64" } },
  map = function(s, ctx)
    local ex = sluice.example(s)
    ex:read("thumb", ctx.out.thumb)
    local key = ex:bytes("__key__")
    return { img = ex:bytes("img"), label = ex:int64s("label").data[0], thumb = ctx.out.thumb,
             key = tonumber(ffi.string(key.data, key.nbytes)) }
  end,
}
""")
        loader = sluice.Loader(str(tmp_path / "read.lua"), format="numpy")
        seen = 0
        for batch in loader:
            i = int(batch["key"][0])
            want = ds[i]
            row = np.asarray(batch["img"])[0]
            length = int(row[:8].view(np.uint64)[0])
            assert row[8:8 + length].tobytes() == want["img"]
            assert int(batch["label"][0]) == want["label"]
            assert np.array_equal(np.asarray(batch["thumb"])[0], want["thumb"])
            seen += 1
        loader.close()
        assert seen == 7


def test_a_pipeline_and_a_loader_too(tmp_path):
    (tmp_path / "p.lua").write_text("""local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(10), batch_size = 4,
  map = function(i, ctx) return { x = i * 2 } end,
}
""")
    m = sluice.write(str(tmp_path / "p.lua"), tmp_path / "a", shard_samples=4, workers=2)
    assert m["samples"] == 10 and len(m["shards"]) == 3
    with tarfile.open(tmp_path / "a" / "shard-000002.tar") as t:
        assert t.extractfile("000000009.x.cls").read() == b"18"
    loader = sluice.Loader(dataset=Photos(), workers=2, ragged={"img": 1 << 20})
    m = sluice.write(loader, tmp_path / "b", shard_size="1MB")
    assert m["samples"] == 7 and all(s["bytes"] <= 1000000 for s in m["shards"][:-1])
    loader.close()


def test_skipped_samples_are_returned_and_warned(tmp_path):
    (tmp_path / "p.lua").write_text("""local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(10), batch_size = 4, on_error = "skip",
  map = function(i, ctx)
    if i == 3 or i == 7 then error("sample " .. i .. " is bad") end
    return { x = i * 2 }
  end,
}
""")
    with pytest.warns(UserWarning, match=r"sluice.write: 2 samples skipped \(on_error = \"skip\"\), not in the shards; "
                                         r"the first: sample 3: .*sample 3 is bad"):
        m = sluice.write(str(tmp_path / "p.lua"), tmp_path / "a", shard_samples=4, workers=2)
    assert m["samples"] == 8
    assert [s["sample"] for s in m["skipped"]] == [3, 7]
    assert "sample 7 is bad" in m["skipped"][1]["reason"]


SLOW = """
import sys, time
import numpy as np
import sluice

class Slow:
    def __len__(self):
        return 40
    def __getitem__(self, i):
        time.sleep(0.02)
        return {"v": np.arange(6, dtype=np.float32) * i, "blob": bytes([i]) * (i % 7)}

sluice.write(Slow(), sys.argv[1], shard_samples=4, workers=2, batch_size=2)
"""


def test_killed_write_resumes_to_the_same_shards(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text(SLOW)
    subprocess.run([sys.executable, str(script), str(tmp_path / "whole")], check=True, timeout=120)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "cut")], start_new_session=True)
    deadline = time.time() + 60
    listed = 0
    while time.time() < deadline and listed < 3:
        try:
            listed = len(json.loads((tmp_path / "cut" / "manifest.json").read_text())["shards"])
        except (OSError, ValueError):
            pass
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)  # the writer and its workers
    proc.wait()
    assert listed >= 3
    cut = json.loads((tmp_path / "cut" / "manifest.json").read_text())
    assert not cut["complete"]
    subprocess.run([sys.executable, str(script), str(tmp_path / "cut")], check=True, timeout=120)
    assert files(tmp_path / "whole") == files(tmp_path / "cut")


def test_a_write_with_another_plan_is_refused(tmp_path):
    out, fresh = tmp_path / "out", tmp_path / "fresh"
    plan = dict(shard_samples=2, batch_size=1, ragged={"img": 1 << 20}, seed=0)
    sluice.write(Photos(), fresh, workers=1, **plan)
    sluice.write(Photos(), out, workers=1, **plan)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["plan"]["dataset_size"] == "7"
    assert "workers" not in manifest["plan"]
    # As a killed write leaves it: the first two shards listed, not complete.
    manifest["shards"] = manifest["shards"][:2]
    manifest["samples"], manifest["complete"], manifest["resume"] = 4, False, {"batch": 4, "row": 0}
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(sluice.Error, match=r"another plan.*seed 5 \(written with 0\).*shuffle true"):
        sluice.write(Photos(), out, workers=1, **dict(plan, seed=5), shuffle=True)
    # The worker count is not part of the plan: the same settings resume, to the same shards.
    back = sluice.write(Photos(), out, workers=2, **plan)
    assert back["complete"] and back["samples"] == 7
    assert files(out) == files(fresh)


def test_usage_errors(tmp_path):
    with pytest.raises(sluice.Error, match="only local folders and s3://, http:// and https:// URLs can be written"):
        sluice.write(Photos(), "ftp://host/shards")
    with pytest.raises(sluice.Error, match="staging= is for"):
        sluice.write(Photos(), tmp_path / "x", staging=tmp_path / "s")
    with pytest.raises(sluice.Error, match="format"):
        sluice.write(Photos(), tmp_path / "x", format="zip")
    with pytest.raises(sluice.Error, match="not both"):
        sluice.write(Photos(), tmp_path / "x", shard_size="1MB", shard_samples=3)
    with pytest.raises(sluice.Error, match="shard_size"):
        sluice.write(Photos(), tmp_path / "x", shard_size="12XB")
    with pytest.raises(sluice.Error, match="workers=0"):
        sluice.write(Photos(), tmp_path / "x", workers=0)


def s3rver(tmp_path):
    """s3rver (tests/npm/package.json, installed under a build's npm/ by the C++ remote tests) on 127.0.0.1."""
    found = sorted(REPO.glob("build*/npm/node_modules/s3rver/bin/s3rver.js"))
    if not found or not os.path.exists("/usr/bin/node"):
        pytest.skip("s3rver is not installed under build*/npm (remote_tests installs it with npm) or node is missing")
    port = free_port()
    (tmp_path / "s3").mkdir()
    server = subprocess.Popen(["/usr/bin/node", "--openssl-legacy-provider", str(found[0]), "-d", str(tmp_path / "s3"),
                               "-p", str(port), "-a", "127.0.0.1", "--silent", "--configure-bucket", "bkt"])
    wait_for_port(port)
    return server, "http://127.0.0.1:%d" % port


def test_write_to_s3_gives_the_objects_a_local_write_gives(tmp_path, monkeypatch):
    boto3 = pytest.importorskip("boto3")
    server, endpoint = s3rver(tmp_path)
    try:
        for k, v in {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "S3RVER", "AWS_SECRET_ACCESS_KEY": "S3RVER",
                     "AWS_REGION": "us-east-1", "SLUICE_CACHE_DIR": str(tmp_path / "cache")}.items():
            monkeypatch.setenv(k, v)
        local = sluice.write(Photos(), tmp_path / "a", format="tfrecord", shard_samples=3, workers=2,
                             ragged={"img": 1 << 20})
        remote = sluice.write(Photos(), "s3://bkt/py/", format="tfrecord", shard_samples=3, workers=2,
                              ragged={"img": 1 << 20}, staging=tmp_path / "staging")
        assert remote == local
        assert not (tmp_path / "staging").exists()
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER",
                          region_name="us-east-1")
        listed = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="bkt", Prefix="py/")["Contents"])
        assert listed == ["py/" + n for n in files(tmp_path / "a")]
        for name, data in files(tmp_path / "a").items():
            assert s3.get_object(Bucket="bkt", Key="py/" + name)["Body"].read() == data, name
        with pytest.raises(sluice.Error, match="NoSuchBucket"):
            sluice.write(Photos(), "s3://nobucket/py/", shard_samples=3, workers=1)
        # The uploads retry as remote_retries says: with the store gone, 0 fails at once.
        server.terminate()
        server.wait()
        with pytest.raises(sluice.Error, match=r"py3/manifest.json: .*\(gave up after 0 retries\)"):
            sluice.write(Photos(), "s3://bkt/py3/", shard_samples=3, workers=1, remote_retries=0)
    finally:
        server.terminate()
        server.wait()


def test_a_float64_field_in_a_tfrecord_is_float32_as_the_manifest_and_a_warning_say(tmp_path):
    class Readings:
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return {"t": 1.1 * i, "n": i}  # a Python float: float64

    with pytest.warns(UserWarning, match="field 't' is float64: a TFRecord holds it as float32"):
        manifest = sluice.write(Readings(), tmp_path / "tf", format="tfrecord", shard_samples=4, workers=1)
    dtypes = {f["name"]: f["dtype"] for f in manifest["fields"]}
    assert dtypes["t"] == "float32" and dtypes["n"] == "int64"
    manifest = sluice.write(Readings(), tmp_path / "tar", format="tar", shard_samples=4, workers=1)
    assert {f["name"]: f["dtype"] for f in manifest["fields"]}["t"] == "float64"
