// `sluice peek`: the first batches of a pipeline shown to a person, through
// the real command line, real worker processes and real image files; the
// contact sheets it writes are read back with PIL.
#include <catch2/catch.hpp>

#include "skip.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "support.h"

using Catch::Contains;
using sluice::test::CliResult;
using sluice::test::TempDir;

#ifdef SLUICE_CLI

namespace {

// Two classes of real photos (JPEG and PNG, various sizes); each sample is
// the 24 x 24 pixels at (8, 8) as uint8 HWC, the same normalized to float32
// CHW, its label, and its dataset index (an integer that is no label).
const char* kFolders = R"(local sluice = require("sluice")
local image = require("sluice.image")
return sluice.pipeline {
  source = sluice.folders("train"),
  batch_size = 4, shuffle = true, seed = 11, workers = 2,
  fields = { { "raw", "uint8", { 24, 24, 3 } }, { "image", "float32", { 3, 24, 24 } },
             { "label", "int64" }, { "index", "int64" } },
  map = function(s, ctx)
    local img = image.decode(s.bytes, { name = s.path, channels = 3 })
    image.crop(img, { x0 = 8, y0 = 8, x1 = 32, y1 = 32 }, ctx.out.raw)
    image.normalize(ctx.out.raw, ctx.out.image, { mean = image.IMAGENET_MEAN, std = image.IMAGENET_STD })
    return { raw = ctx.out.raw, image = ctx.out.image, label = s.label, index = ctx.index }
  end,
}
)";

// Reads peek's output and the sheets; prints "ok" or what is wrong.
const char* kCheck = R"(import math, re, sys
import numpy as np
from PIL import Image
out, sheets = open(sys.argv[1]).read(), sys.argv[2]
mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
problems = []
rows = re.findall(r"^  (\d+) +(\d+) (\w+) +(/\S+)$", out, re.M)
stats = re.findall(r"^  raw +uint8 +\[(\d+), 24, 24, 3\] +(\S+) +(\S+) +(\S+) +(\S+)$", out, re.M)
if len(rows) != 6 or len(stats) != 2: problems.append("rows %d, raw stats %d" % (len(rows), len(stats)))
crops = []
for sample, label, name, path in rows:
    if "/train/%s/" % name not in path: problems.append("%s is not in class %s" % (path, name))
    if ["cat", "dog"][int(label)] != name: problems.append("label %s named %s" % (label, name))
    crops.append(np.asarray(Image.open(path).convert("RGB").crop((8, 8, 32, 32))))
first = int(stats[0][0]) if stats else 0
for (n, lo, hi, mu, sd), group in zip(stats, (crops[:first], crops[first:])):
    values = np.stack(group).astype(np.float64)
    for got, want in zip((lo, hi, mu, sd), (values.min(), values.max(), values.mean(), values.std())):
        if not math.isclose(float(got), want, rel_tol=1e-5, abs_tol=1e-9): problems.append("stat %s != %r" % (got, want))
raw = np.asarray(Image.open(sheets + "/raw.png"))
if raw.shape != (2 + 2 * 26, 2 + 3 * 26, 3): problems.append("raw.png is %r" % (raw.shape,))
image = np.asarray(Image.open(sheets + "/image.png")).astype(np.float64)
normalized = [(c / 255.0 - mean) / std for c in crops]
lo, hi = min(v.min() for v in normalized), max(v.max() for v in normalized)
for t, (crop, norm) in enumerate(zip(crops, normalized)):
    y, x = 2 + (t // 3) * 26, 2 + (t % 3) * 26
    if not (raw[y:y + 24, x:x + 24] == crop).all(): problems.append("raw tile %d differs" % t)
    want = (norm - lo) * 255.0 / (hi - lo)
    if np.abs(image[y:y + 24, x:x + 24] - want).max() > 1.01: problems.append("image tile %d differs" % t)
print("; ".join(problems) or "ok")
)";

}  // namespace

TEST_CASE("sluice peek shows fields, class names and files, and writes contact sheets PIL reads", "[cli][peek]") {
  if (::access("/usr/bin/python3", X_OK) != 0) SKIP_TEST("no /usr/bin/python3 to read the sheets with");
  if (std::system("/usr/bin/python3 -c 'import numpy, PIL' 2>/dev/null") != 0) SKIP_TEST("no numpy and PIL");
  TempDir dir;
  const std::string train = sluice::test::pillow_folder(
      dir, {{"cat", {"hopper.png", "flower.jpg", "rgb.jpg"}}, {"dog", {"pil168.png", "flower2.jpg", "ftex_uncompressed.png"}}});
  if (train.empty()) SKIP_TEST("no real images");
  const std::string script = dir.write("peek.lua", kFolders);
  const std::string sheets = dir.path() + "/sheets";

  // -b 3 overrides the script's batch size: two batches hold all six files.
  const CliResult r = sluice::test::run_cli({"peek", script, "--batches", "2", "-b", "3", "--png", sheets});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("classes     2 (sluice.folders): cat, dog"));
  CHECK_THAT(r.out, Contains("batch 0 of epoch 0: 3 samples") && Contains("batch 1 of epoch 0: 3 samples"));
  CHECK_THAT(r.out, Contains("label          int64    [3]"));
  CHECK_THAT(r.out, Contains("(sluice.folders labels)"));
  const std::size_t index_line = r.out.find("\n  index ");
  REQUIRE(index_line != std::string::npos);
  const std::string index_stats = r.out.substr(index_line + 1, r.out.find('\n', index_line + 1) - index_line - 1);
  CHECK_THAT(index_stats, !Contains("labels"));  // the dataset index is an integer, but no label
  CHECK_THAT(r.out, Contains("contact sheet image: " + sheets + "/image.png, 3 columns x 2 rows of 24 x 24 tiles "
                             "(6 samples), CHW, float32 scaled from"));
  CHECK_THAT(r.out, Contains("contact sheet raw: " + sheets + "/raw.png, 3 columns x 2 rows of 24 x 24 tiles "
                             "(6 samples), HWC\n"));
  CHECK_THAT(r.out, !Contains("contact sheet label"));

  const std::string out = dir.write("peek.txt", r.out);
  const std::string check = dir.write("check.py", kCheck);
  const std::string result = dir.path() + "/result.txt";
  REQUIRE(std::system(("/usr/bin/python3 " + check + " " + out + " " + sheets + " > " + result).c_str()) == 0);
  const auto lines = sluice::test::read_lines(result);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "ok");
  CHECK(sluice::test::wait_for_no_descendants(5000).empty());
}

TEST_CASE("sluice peek on a source without files lists sample ids, and names bad usage and failures", "[cli][peek]") {
  TempDir dir;
  const std::string script = dir.write("range.lua", R"(local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.range(10),
  fields = { { "x", "float64", { 2 } } },
  batch_size = 4, workers = 1,
  map = function(i, ctx)
    if i == 9 then error("sample nine is bad") end
    ctx.out.x.data[0], ctx.out.x.data[1] = i, -i
    return { x = ctx.out.x }
  end,
}
)");
  // Batch 0 is samples 0..3: x = 0, 0, 1, -1, 2, -2, 3, -3.
  const CliResult r = sluice::test::run_cli({"peek", script, "--png", dir.path() + "/png"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("  x              float64  [4, 2]                       -3            3            0      1.87083\n"));
  CHECK_THAT(r.out, Contains("  samples  0, 1, 2, 3\n"));
  CHECK_THAT(r.out, Contains("contact sheets: no field is an image"));
  CHECK_THAT(r.out, !Contains("batch 1 of"));

  const CliResult failed = sluice::test::run_cli({"peek", script, "--batches", "3"});
  CHECK(failed.status == 1);
  CHECK_THAT(failed.err, Contains("sluice peek: error: ") && Contains("range.lua:7: sample nine is bad"));

  const CliResult skipped = sluice::test::run_cli({"peek", script, "--batches", "3", "--on-error", "skip"});
  INFO(skipped.out << skipped.err);
  CHECK(skipped.status == 0);
  CHECK_THAT(skipped.out, Contains("batch 2 of epoch 0: 1 samples"));
  CHECK_THAT(skipped.out, Contains("skipped     1 sample (on_error = \"skip\"): ids 9\n") &&
                              Contains("sample 9: ") && Contains("range.lua:7: sample nine is bad"));

  const CliResult typo = sluice::test::run_cli({"peek", script, "--pgn", "x"});
  CHECK(typo.status == 2);
  CHECK_THAT(typo.err, Contains("unknown option --pgn; did you mean --png? (see sluice peek --help)"));
  CHECK(sluice::test::run_cli({"peek", script, "--batches", "0"}).status == 2);
  CHECK(sluice::test::run_cli({"peek"}).status == 2);
  CHECK(sluice::test::wait_for_no_descendants(5000).empty());
}

#endif
