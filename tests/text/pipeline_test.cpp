// Token pipelines through real worker processes: packed rows as batches,
// identical for any worker count, resumed on another world size with the
// same global token stream (sluice verify --global).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/run_settings.h"
#include "skip.h"
#include "sluice/script.h"
#include "sluice/text/tokenizer.h"
#include "support.h"
#include "text_test_support.h"

using sluice::test::BatchCopy;
using sluice::test::CliResult;
using Catch::Contains;

namespace {

// A corpus of unique tokens (EOS = 0), in dir/corpus.bin, and a smaller one in dir/small.bin.
void write_corpora(const std::string& dir) {
  using namespace sluice::text::test;
  write_tokens(dir + "/corpus.bin", make_documents(lengths(400, 1, 60, 21), true), false);
  write_tokens(dir + "/small.bin", make_documents(lengths(40, 1, 30, 22), true), false);
}

std::string pipeline(const std::string& source, const std::string& pack, const std::string& extra = "") {
  return "local sluice = require(\"sluice\")\nreturn sluice.pipeline {\n  source = " + source +
         ",\n  pack = " + pack + ",\n  batch_size = 4, shuffle = true, seed = 5, epochs = 2,\n" + extra + "}\n";
}

const std::string kLicenses = "/usr/share/common-licenses";

// Why a SentencePiece model cannot be trained here, or "".
std::string spm_missing() {
#if !SLUICE_WITH_SENTENCEPIECE
  return "built without SentencePiece (configured with -DSLUICE_SENTENCEPIECE=OFF)";
#endif
  if (std::system("command -v spm_train > /dev/null 2>&1") != 0) return "spm_train not found (Debian package sentencepiece)";
  if (!std::filesystem::exists(kLicenses + "/GPL-3")) return kLicenses + "/GPL-3 is missing";
  return "";
}

// dir/m.model: a unigram model with byte fallback, trained on two licenses.
void train_model(const std::string& dir) {
  const std::string train = "spm_train --input=" + kLicenses + "/GPL-3," + kLicenses + "/Apache-2.0 --model_prefix=" +
                            dir + "/m --vocab_size=500 --byte_fallback=true --minloglevel=2 > /dev/null 2>&1";
  REQUIRE(std::system(train.c_str()) == 0);
}

std::vector<BatchCopy> run(const std::string& path, std::uint32_t workers) {
  sluice::Script script = sluice::load_script({.path = path, .workers = workers});
  sluice::Loader loader(script.options);
  return sluice::test::drain(loader);
}

// The position of the field `name` among the script's fields.
std::size_t field_index(const sluice::Script& script, const std::string& name) {
  for (std::size_t k = 0; k < script.options.fields.size(); ++k)
    if (script.options.fields[k].name == name) return k;
  FAIL("no field " << name);
  return 0;
}

// SLUICE_CACHE_DIR (where text is tokenized to) set for a scope.
struct CacheDirEnv {
  explicit CacheDirEnv(const std::string& dir) { ::setenv("SLUICE_CACHE_DIR", dir.c_str(), 1); }
  ~CacheDirEnv() { ::unsetenv("SLUICE_CACHE_DIR"); }
  CacheDirEnv(const CacheDirEnv&) = delete;
  CacheDirEnv& operator=(const CacheDirEnv&) = delete;
};

bool has_note(const sluice::Script& script, const std::string& text) {
  return std::any_of(script.notes.begin(), script.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

// The rows of seq_len tokens a packed pipeline over `docs` (concat, batches
// of 1) must deliver: the model's ids of each document and its EOS, end to end.
void check_packed_text(const sluice::Script& script, const std::string& model_path,
                       const std::vector<std::string>& docs, std::size_t seq_len) {
  auto model = sluice::text::SentencePiece::open(model_path);
  std::vector<std::int64_t> stream;
  std::vector<std::int32_t> ids;
  for (const std::string& d : docs) {
    model->encode(d, &ids);
    stream.insert(stream.end(), ids.begin(), ids.end());
    stream.push_back(model->eos_id());
  }
  REQUIRE(script.options.dataset_size == (stream.size() - 1) / seq_len);
  const std::size_t tokens_field = field_index(script, "tokens");
  sluice::Loader loader(script.options);
  for (const BatchCopy& b : sluice::test::drain(loader)) {
    const auto* t = reinterpret_cast<const std::int64_t*>(b.fields[tokens_field].data());
    const auto at = static_cast<std::ptrdiff_t>(b.samples[0] * seq_len);
    REQUIRE(std::vector<std::int64_t>(t, t + seq_len) ==
            std::vector<std::int64_t>(stream.begin() + at, stream.begin() + at + static_cast<std::ptrdiff_t>(seq_len)));
  }
}

const char* kTokens = "sluice.tokens{ \"corpus.bin\", dtype = \"uint16\", eos = 0 }";
const char* kMix =
    "sluice.mix{ { sluice.tokens{ \"corpus.bin\", dtype = \"uint16\", eos = 0 }, weight = 0.7 }, "
    "{ sluice.tokens{ \"small.bin\", dtype = \"uint16\", eos = 0 }, weight = 0.3 } }";

}  // namespace

TEST_CASE("packed rows are batches with the five fields, identical for 1, 2 and 3 workers") {
  sluice::test::TempDir dir;
  write_corpora(dir.path());
  for (const std::string& pack : {std::string("{ seq_len = 32 }"), std::string("{ seq_len = 32, mode = \"best_fit\", window = 16 }")}) {
    for (const std::string& source : {std::string(kTokens), std::string(kMix)}) {
      INFO(source << " pack = " << pack);
      const std::string path = dir.write("p.lua", pipeline(source, pack));
      sluice::Script script = sluice::load_script({.path = path, .workers = 1});
      REQUIRE(script.options.fields.size() == 5);
      std::map<std::string, sluice::FieldSpec> by_name;
      for (const auto& f : script.options.fields) by_name[f.name] = f;
      REQUIRE(by_name.at("tokens").dtype == sluice::DType::i64);
      REQUIRE(by_name.at("targets").dtype == sluice::DType::i64);
      REQUIRE(by_name.at("segment_ids").dtype == sluice::DType::i32);
      REQUIRE(by_name.at("positions").dtype == sluice::DType::i32);
      REQUIRE(by_name.at("loss_mask").dtype == sluice::DType::f32);
      REQUIRE(by_name.at("tokens").shape == std::vector<std::int64_t>{32});
      const auto one = run(path, 1);
      REQUIRE(!one.empty());
      CHECK(run(path, 2) == one);
      CHECK(run(path, 3) == one);
    }
  }
}

TEST_CASE("a concat epoch through the loader holds every row once and every token once") {
  sluice::test::TempDir dir;
  write_corpora(dir.path());
  const std::string path = dir.write("p.lua", pipeline(kTokens, "{ seq_len = 16 }"));
  sluice::Script script = sluice::load_script({.path = path, .epochs = 1, .workers = 2});
  const std::size_t tokens_field = field_index(script, "tokens");
  sluice::Loader loader(script.options);
  std::multiset<std::int64_t> seen;
  std::set<std::uint64_t> rows;
  for (const BatchCopy& b : sluice::test::drain(loader)) {
    rows.insert(b.samples.begin(), b.samples.end());
    const auto* t = reinterpret_cast<const std::int64_t*>(b.fields[tokens_field].data());
    for (std::size_t i = 0; i < b.fields[tokens_field].size() / 8; ++i) seen.insert(t[i]);
  }
  REQUIRE(rows.size() == script.options.dataset_size);
  // The inputs of an epoch are the corpus' stream up to its tail, once each.
  std::multiset<std::int64_t> want;
  std::uint64_t at = 0;
  for (const auto& doc : sluice::text::test::make_documents(sluice::text::test::lengths(400, 1, 60, 21), true))
    for (std::uint32_t t : doc)
      if (at++ < rows.size() * 16) want.insert(t);
  REQUIRE(seen == want);
}

TEST_CASE("sluice.tokens without pack gives documents to map") {
  sluice::test::TempDir dir;
  write_corpora(dir.path());
  const std::string path = dir.write("d.lua", R"(
local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.tokens{ "corpus.bin", dtype = "uint16", eos = 0 },
  map = function(s, ctx)
    local t = s.fields.tokens
    assert(t.dtype == "uint16" and t.data[t.shape[1] - 1] == 0)
    return { length = t.shape[1], first = t.data[0] }
  end,
  batch_size = 8,
}
)");
  sluice::Script script = sluice::load_script({.path = path, .workers = 2});
  REQUIRE(script.options.dataset_size == 400);
  sluice::Loader loader(script.options);
  REQUIRE(sluice::test::drain(loader).size() == 50);
}

TEST_CASE("token pipelines refuse what they cannot do, naming it") {
  sluice::test::TempDir dir;
  write_corpora(dir.path());
  auto error_of = [&](const std::string& text) {
    try {
      sluice::load_script({.path = dir.write("bad.lua", text)});
    } catch (const sluice::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(error_of(pipeline("sluice.range(10)", "{ seq_len = 8 }")), Contains("pack needs a token source"));
  CHECK_THAT(error_of("local sluice = require('sluice')\nreturn sluice.pipeline{ source = " + std::string(kMix) + " }"),
             Contains("add pack = { seq_len = n }"));
  CHECK_THAT(error_of("local sluice = require('sluice')\nreturn sluice.pipeline{ source = " + std::string(kTokens) + " }"),
             Contains("sluice.tokens gives documents of varying length") && Contains("pack = { seq_len = n }"));
  CHECK_THAT(error_of(pipeline(kTokens, "{ seq_len = 8, mode = 'pad' }")), Contains("pack.mode must be"));
  CHECK_THAT(error_of(pipeline("sluice.tokens{ \"corpus.bin\", dtype = \"uint16\", eos = 0, vocab_size = 20 }", "{ seq_len = 8 }")),
             Contains("corpus.bin") && Contains("not below vocab_size 20"));
  sluice::text::test::write_tokens(dir.path() + "/odd.bin", sluice::text::test::make_documents({3}, true), false);
  CHECK_THAT(error_of(pipeline("sluice.tokens{ \"odd.bin\", dtype = \"uint32\" }", "{ seq_len = 8 }")),
             Contains("odd.bin: 6 bytes is not a whole number of uint32 tokens"));
  CHECK_THAT(error_of(pipeline("sluice.mix{ { sluice.tokens{ \"corpus.bin\", dtype = \"uint16\" }, weight = 0 } }", "{ seq_len = 8 }")),
             Contains("weight must be a positive number"));
  CHECK_THAT(error_of(pipeline(std::string(kMix).substr(0, std::string(kMix).size() - 1) + ", size = 0 }", "{ seq_len = 8 }")),
             Contains("sluice.mix: size must be at least 1 row"));
}

TEST_CASE("stopped on 3 ranks, resumed on 2: the same global token stream (verify --global)") {
  sluice::test::TempDir dir;
  write_corpora(dir.path());
  for (const std::string& pack : {std::string("{ seq_len = 24 }"), std::string("{ seq_len = 24, mode = \"best_fit\" }")}) {
    const std::string script = dir.write("p.lua", pipeline(kMix, pack));
    std::filesystem::remove_all(dir.path() + "/records");
    std::filesystem::remove_all(dir.path() + "/states");
    std::filesystem::create_directories(dir.path() + "/records");
    std::filesystem::create_directories(dir.path() + "/states");
    auto cli = [&](std::vector<std::string> args) {
      CliResult r = sluice::test::run_cli(args);
      INFO(r.out << r.err);
      REQUIRE(r.status == 0);
      return r;
    };
    const std::vector<std::string> common = {"run", script, "--quiet", "--global-batch-size", "12"};
    auto with = [&](std::vector<std::string> more) {
      std::vector<std::string> args = common;
      args.insert(args.end(), more.begin(), more.end());
      return args;
    };
    cli(with({"--record", dir.path() + "/full.jsonl"}));
    for (int r = 0; r < 3; ++r) {
      const std::string rank = std::to_string(r);
      cli(with({"--rank", rank, "--world-size", "3", "--workers", std::to_string(1 + r), "--batches",
                std::to_string(3 + r), "--record", dir.path() + "/records/a_" + rank + ".jsonl", "--state",
                dir.path() + "/states/state_" + rank + ".json"}));
    }
    for (int r = 0; r < 2; ++r) {
      const std::string rank = std::to_string(r);
      cli(with({"--rank", rank, "--world-size", "2", "--resume", dir.path() + "/states/state_*.json", "--record",
                dir.path() + "/records/b_" + rank + ".jsonl"}));
    }
    CliResult v = sluice::test::run_cli({"verify", "--global", dir.path() + "/full.jsonl", dir.path() + "/records"});
    INFO(pack << ": " << v.out << v.err);
    CHECK(v.status == 0);
    CHECK_THAT(v.out, Contains("identical: ") && Contains("same samples and per-sample digests") &&
                          Contains("delivered 3 per-rank batches again after a resume"));
  }
}

TEST_CASE("sluice inspect shows a Megatron dataset by either file: dtype, documents, tokens") {
  sluice::test::TempDir dir;
  const std::string prefix = dir.path() + "/ds_text_document";
  sluice::text::test::write_megatron(prefix, {{5, 6, 7}, {70000, 2}}, true);
  for (const std::string& name : {prefix + ".idx", prefix + ".bin"}) {
    const CliResult r = sluice::test::run_cli({"inspect", name});
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Contains(name + ": Megatron-LM indexed dataset") && Contains("uint32 ids, 2 documents, 5 tokens") &&
                          Contains("document 0: 3 tokens: 5 6 7\n") && Contains("document 1: 2 tokens: 70000 2\n"));
  }
}

// The sample ids of `path`'s record of (epoch, batch), through `edit`.
void edit_record(const std::string& path, const std::string& at, const std::function<void(std::vector<std::string>&)>& edit) {
  std::ifstream in(path);
  std::string text, line;
  while (std::getline(in, line)) {
    if (line.rfind(at, 0) == 0) {
      const std::size_t open = line.find("\"samples\":[") + 11, close = line.find(']', open);
      std::vector<std::string> ids;
      std::stringstream list(line.substr(open, close - open));
      for (std::string id; std::getline(list, id, ',');) ids.push_back(id);
      edit(ids);
      std::string joined;
      for (const std::string& id : ids) joined += (joined.empty() ? "" : ",") + id;
      line = line.substr(0, open) + joined + line.substr(close);
    }
    text += line + "\n";
  }
  std::ofstream(path) << text;
}

TEST_CASE("verify --global: an epoch's tail differs between world sizes only as documented") {
  sluice::test::TempDir dir;
  write_corpora(dir.path());
  // 125 rows, global batch 12: 11 steps an epoch; the last holds 5 rows on 1
  // rank; on 2 and 3 ranks pad adds 1 row repeated from the epoch's start,
  // drop leaves 1 (2 ranks) or 2 (3 ranks) out.
  const std::string mix = std::string(kMix).substr(0, std::string(kMix).size() - 1) + ", size = 125 }";
  auto cli = [&](std::vector<std::string> args) {
    CliResult r = sluice::test::run_cli(args);
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
  };
  for (const std::string policy : {"pad", "drop"}) {
    const std::string script = dir.write("p.lua", pipeline(mix, "{ seq_len = 24 }"));
    const std::string full = dir.path() + "/full_" + policy + ".jsonl";
    cli({"run", script, "--quiet", "--shard-policy", policy, "--global-batch-size", "12", "--record", full});
    for (int world : {2, 3}) {
      const std::string records = dir.path() + "/" + policy + std::to_string(world);
      std::filesystem::create_directories(records);
      for (int r = 0; r < world; ++r)
        cli({"run", script, "--quiet", "--shard-policy", policy, "--global-batch-size", "12", "--rank", std::to_string(r), "--world-size",
             std::to_string(world), "--record", records + "/r" + std::to_string(r) + ".jsonl"});
      CliResult v = sluice::test::run_cli({"verify", "--global", full, records});
      INFO(policy << " on " << world << ": " << v.out << v.err);
      CHECK(v.status == 0);
      const std::string tail = policy == "pad" ? "5 samples on world size 1 and 6 on " + std::to_string(world) +
                                                     ": shard_policy = pad fills every rank of " + std::to_string(world) +
                                                     " with 1 sample(s) repeated from the epoch's start"
                                               : "5 samples on world size 1 and " + std::to_string(5 - (world - 1)) +
                                                     " on " + std::to_string(world) + ": shard_policy = drop leaves " +
                                                     std::to_string(world - 1) + " more of the epoch's last samples out";
      CHECK_THAT(v.out, Contains("identical: 22 global steps") &&
                            Contains("2 epoch tail(s) differ only as the world size makes them") &&
                            Contains("epoch 0, step 10: the epoch's last step holds " + tail));
    }
  }
  // Tails shaped otherwise are differences: pad's repeat replaced by a sample
  // not from the epoch's start (rank 1 of 2 holds the repeat, last in its
  // batch), or a sample of the tail missing (another's copy in its place).
  const std::string rank1 = dir.path() + "/pad2/r1.jsonl";
  const std::string saved = [&] {
    std::ifstream in(rank1);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }();
  edit_record(rank1, "{\"epoch\":0,\"batch\":10,", [](std::vector<std::string>& ids) { ids.back() = "124"; });
  CliResult swapped = sluice::test::run_cli({"verify", "--global", dir.path() + "/full_pad.jsonl", dir.path() + "/pad2"});
  CHECK(swapped.status != 0);
  CHECK_THAT(swapped.out + swapped.err, Contains("epoch 0, step 10: samples differ"));
  std::ofstream(rank1) << saved;
  edit_record(rank1, "{\"epoch\":0,\"batch\":10,", [](std::vector<std::string>& ids) { ids[0] = ids[1]; });
  CliResult short_tail = sluice::test::run_cli({"verify", "--global", dir.path() + "/full_pad.jsonl", dir.path() + "/pad2"});
  CHECK(short_tail.status != 0);
  CHECK_THAT(short_tail.out + short_tail.err, Contains("epoch 0, step 10: samples differ"));
}

TEST_CASE("sluice.sentencepiece tokenizes any source's bytes in the workers, as the C++ model does") {
  const std::string missing = spm_missing();
  if (!missing.empty()) SKIP_TEST(missing);
  sluice::test::TempDir dir;
  train_model(dir.path());
  const std::string path = dir.write("t.lua", R"(
local sluice = require("sluice")
local tok = sluice.sentencepiece("m.model")
assert(tok.encoder == "sluice unigram", tok.encoder)  -- a unigram model: Sluice's encoder, in each worker
local MAX = 16384
return sluice.pipeline {
  source = sluice.files{ "/usr/share/common-licenses/[A-M]*" },
  fields = { { "ids", "int32", { MAX } }, { "count", "int64" } },
  map = function(s, ctx)
    local ids = tok:encode(s.bytes)
    local out = ctx.out.ids
    local n = math.min(ids.shape[1], MAX)
    for i = 0, n - 1 do out.data[i] = ids.data[i] end
    for i = n, MAX - 1 do out.data[i] = -1 end
    return { ids = out, count = ids.shape[1] }
  end,
  batch_size = 3,
}
)");
  sluice::Script script = sluice::load_script({.path = path, .workers = 2});
  auto model = sluice::text::SentencePiece::open(dir.path() + "/m.model");
  sluice::Loader loader(script.options);
  std::size_t files = 0;
  std::vector<std::int32_t> want;
  for (const BatchCopy& b : sluice::test::drain(loader)) {
    for (std::size_t row = 0; row < b.samples.size(); ++row, ++files) {
      const std::string file = script.sample_file(b.samples[row]);
      std::ifstream in(file, std::ios::binary);
      const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      model->encode(text, &want);
      INFO(file);
      const auto* count = reinterpret_cast<const std::int64_t*>(b.fields[1].data()) + row;
      const auto* ids = reinterpret_cast<const std::int32_t*>(b.fields[0].data()) + row * 16384;
      REQUIRE(*count == static_cast<std::int64_t>(want.size()));
      REQUIRE(want.size() <= 16384);
      REQUIRE(std::vector<std::int32_t>(ids, ids + want.size()) == want);
    }
  }
  REQUIRE(files >= 5);
}

TEST_CASE("a run resumed with new mixture weights keeps what came before and logs them in its record") {
  sluice::test::TempDir dir;
  write_corpora(dir.path());
  const std::string before = dir.write("p.lua", pipeline(kMix, "{ seq_len = 24 }"));
  const std::string mix_later =
      "sluice.mix{ { sluice.tokens{ \"corpus.bin\", dtype = \"uint16\", eos = 0 }, weight = 0.7 }, "
      "{ sluice.tokens{ \"small.bin\", dtype = \"uint16\", eos = 0 }, weight = 0.3 }, phases = { { from_row = 20, weights = { 0.2, 0.8 } } } }";
  const std::string after = dir.write("q.lua", pipeline(mix_later, "{ seq_len = 24 }"));
  auto cli = [&](const std::vector<std::string>& args) {
    CliResult r = sluice::test::run_cli(args);
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    return r;
  };
  // Batches of 4: the run stops after 5 batches, at row 20, where the new weights start.
  cli({"run", before, "--quiet", "--record", dir.path() + "/full.jsonl"});
  cli({"run", before, "--quiet", "--batches", "5", "--state", dir.path() + "/s.json", "--record", dir.path() + "/a.jsonl"});
  cli({"run", after, "--quiet", "--resume", dir.path() + "/s.json", "--record", dir.path() + "/b.jsonl"});
  cli({"run", after, "--quiet", "--record", dir.path() + "/whole.jsonl"});
  const auto full = sluice::test::read_lines(dir.path() + "/full.jsonl");
  const auto a = sluice::test::read_lines(dir.path() + "/a.jsonl");
  const auto b = sluice::test::read_lines(dir.path() + "/b.jsonl");
  const auto whole = sluice::test::read_lines(dir.path() + "/whole.jsonl");
  REQUIRE(a.size() == 6);
  for (std::size_t i = 1; i < a.size(); ++i) CHECK(a[i] == full[i]);       // before the change: the old weights
  for (std::size_t i = 1; i < a.size(); ++i) CHECK(whole[i] == full[i]);   // a phase from row 20 leaves rows < 20 alone
  REQUIRE(b.size() + 5 == whole.size());
  for (std::size_t i = 1; i < b.size(); ++i) CHECK(b[i] == whole[i + 5]);  // after it: the new weights, as in a whole run
  CHECK(b.size() + 5 == full.size());
  bool differs = false;
  for (std::size_t i = 1; i < b.size(); ++i) differs = differs || b[i] != full[i + 5];
  CHECK(differs);
  CHECK_THAT(b[0], Contains("\"text\":[") && Contains("mix: from global row 20 (epoch 0, row 20) the weights are 0.2, 0.8"));

  // What would reorder the rows before row 20 is refused: other weights from
  // the start, a phase before row 20, the sources' shuffle turned off.
  std::string text = sluice::test::read_lines(dir.path() + "/s.json")[0];
  CHECK_THAT(text, Contains("\"order_key\":"));
  const std::string other_weights =
      "sluice.mix{ { sluice.tokens{ \"corpus.bin\", dtype = \"uint16\", eos = 0 }, weight = 0.2 }, "
      "{ sluice.tokens{ \"small.bin\", dtype = \"uint16\", eos = 0 }, weight = 0.8 } }";
  std::string early = mix_later;
  early.replace(early.find("from_row = 20"), 13, "from_row = 12");
  std::string unshuffled = pipeline(kMix, "{ seq_len = 24 }");
  unshuffled.replace(unshuffled.find("shuffle = true"), 14, "shuffle = false");
  for (const std::string& changed : {pipeline(other_weights, "{ seq_len = 24 }"), pipeline(early, "{ seq_len = 24 }"), unshuffled}) {
    INFO(changed);
    const CliResult r = sluice::test::run_cli({"run", dir.write("c.lua", changed), "--quiet", "--resume", dir.path() + "/s.json"});
    CHECK(r.status != 0);
    CHECK_THAT(r.err, Contains("cannot resume: the samples before the state's position (epoch 0, batch 5) would come in "
                               "another order: the source changed"));
  }
}

TEST_CASE("shuffle given as a run setting shuffles token pipelines as pipeline.lua's does, a mixture's schedule kept") {
  sluice::test::TempDir dir;
  write_corpora(dir.path());
  for (const char* source : {kMix, kTokens}) {
    INFO(source);
    const std::string in_lua = dir.write("in_lua.lua", pipeline(source, "{ seq_len = 24 }"));
    std::string text = pipeline(source, "{ seq_len = 24 }");
    text.replace(text.find("shuffle = true"), 14, "shuffle = false");
    const std::string plain = dir.write("plain.lua", text);
    sluice::RunSettings settings(plain);
    settings.set("shuffle", "true");
    sluice::Script script = settings.load();
    // The mixture's plan stays in schedule order (its sources' rows are
    // shuffled); a single source's packed rows are shuffled by the plan too.
    CHECK(script.options.shuffle == (std::string(source) != kMix));
    sluice::Loader loader(script.options);
    const std::vector<BatchCopy> overridden = sluice::test::drain(loader);
    CHECK(overridden == run(in_lua, 2));
    CHECK(overridden != run(plain, 2));
  }
}

TEST_CASE("sluice.tokens{ window = N } gives nanoGPT windows of N + 1 tokens, once each per epoch") {
  sluice::test::TempDir dir;
  write_corpora(dir.path());
  const std::string path = dir.write("w.lua", R"(
local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.tokens{ "corpus.bin", dtype = "uint16", eos = 0, window = 32 },
  batch_size = 5, shuffle = true, seed = 2,
}
)");
  sluice::Script script = sluice::load_script({.path = path, .workers = 2});
  REQUIRE(script.options.fields.size() == 1);
  REQUIRE(script.options.fields[0].shape == std::vector<std::int64_t>{33});
  std::vector<std::int64_t> stream;
  for (const auto& doc : sluice::text::test::make_documents(sluice::text::test::lengths(400, 1, 60, 21), true))
    stream.insert(stream.end(), doc.begin(), doc.end());
  REQUIRE(script.options.dataset_size == (stream.size() - 1) / 32);
  sluice::Loader loader(script.options);
  std::set<std::uint64_t> seen;
  const auto batches = sluice::test::drain(loader);
  for (const BatchCopy& b : batches) {
    const auto* t = reinterpret_cast<const std::int64_t*>(b.fields[0].data());
    for (std::size_t row = 0; row < b.samples.size(); ++row) {
      const std::uint64_t r = b.samples[row];
      REQUIRE(seen.insert(r).second);
      REQUIRE(std::vector<std::int64_t>(t + row * 33, t + row * 33 + 33) ==
              std::vector<std::int64_t>(stream.begin() + static_cast<std::ptrdiff_t>(r * 32),
                                        stream.begin() + static_cast<std::ptrdiff_t>(r * 32 + 33)));
    }
  }
  REQUIRE(seen.size() == script.options.dataset_size);
  sluice::Script two = sluice::load_script({.path = path, .workers = 3});
  sluice::Loader again(two.options);
  CHECK(sluice::test::drain(again) == batches);
}

TEST_CASE("sluice.tokens{ text = ..., tokenizer = ... } packs text tokenized at load, as the model encodes it") {
  const std::string missing = spm_missing();
  if (!missing.empty()) SKIP_TEST(missing);
  sluice::test::TempDir dir;
  const CacheDirEnv cache(dir.path() + "/cache");
  train_model(dir.path());
  const std::string path = dir.write("t.lua", R"(
local sluice = require("sluice")
local tok = sluice.sentencepiece("m.model")
return sluice.pipeline {
  source = sluice.tokens{ text = sluice.files{ "/usr/share/common-licenses/[A-C]*" }, tokenizer = tok },
  pack = { seq_len = 128 },
  batch_size = 4, workers = 2,
}
)");
  sluice::Script script = sluice::load_script({.path = path, .epochs = 1});
  // The stream: each file's ids, then EOS (the model's, 2), in the files' order.
  auto model = sluice::text::SentencePiece::open(dir.path() + "/m.model");
  REQUIRE(model->eos_id() == 2);
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(kLicenses)) {
    const std::string name = e.path().filename().string();
    if (!name.empty() && name[0] >= 'A' && name[0] <= 'C') files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::int64_t> stream;
  std::vector<std::int32_t> ids;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    model->encode(std::string{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()}, &ids);
    stream.insert(stream.end(), ids.begin(), ids.end());
    stream.push_back(2);
  }
  REQUIRE(script.options.dataset_size == (stream.size() - 1) / 128);
  const std::size_t tokens_field = field_index(script, "tokens");
  sluice::Loader loader(script.options);
  std::size_t rows = 0;
  for (const BatchCopy& b : sluice::test::drain(loader)) {
    const auto* t = reinterpret_cast<const std::int64_t*>(b.fields[tokens_field].data());
    for (std::size_t row = 0; row < b.samples.size(); ++row, ++rows) {
      const std::uint64_t r = b.samples[row];
      REQUIRE(std::vector<std::int64_t>(t + row * 128, t + row * 128 + 128) ==
              std::vector<std::int64_t>(stream.begin() + static_cast<std::ptrdiff_t>(r * 128),
                                        stream.begin() + static_cast<std::ptrdiff_t>(r * 128 + 128)));
    }
  }
  REQUIRE(rows == script.options.dataset_size);
}

TEST_CASE("sluice.tokens{ text = sluice.jsonl{...} } tokenizes each line's field, not its other keys") {
  const std::string missing = spm_missing();
  if (!missing.empty()) SKIP_TEST(missing);
  sluice::test::TempDir dir;
  const CacheDirEnv cache(dir.path() + "/cache");
  train_model(dir.path());
  // Three documents as JSON lines, each with a key besides "text".
  const std::vector<std::string> docs = {"The quick brown fox jumps over the lazy dog.\nTwice.",
                                         "Permission is hereby granted, free of charge, to any person \"obtaining\"",
                                         "\tTabs, back\\slashes and unicode: caf\xc3\xa9."};
  std::string lines;
  for (const std::string& d : docs) {
    std::string escaped;
    for (char c : d) {
      if (c == '"' || c == '\\') escaped += std::string("\\") + c;
      else if (c == '\n') escaped += "\\n";
      else if (c == '\t') escaped += "\\t";
      else escaped += c;
    }
    lines += R"({"meta": "not part of the document", "text": ")" + escaped + "\"}\n";
  }
  dir.write("docs.jsonl", lines);
  const std::string path = dir.write("t.lua", R"(
local sluice = require("sluice")
local tok = sluice.sentencepiece("m.model")
return sluice.pipeline {
  source = sluice.tokens{ text = sluice.jsonl{ "docs.jsonl" }, tokenizer = tok },
  pack = { seq_len = 8 },
  batch_size = 1, workers = 1,
}
)");
  sluice::Script script = sluice::load_script({.path = path, .epochs = 1});
  check_packed_text(script, dir.path() + "/m.model", docs, 8);
  // A row names its document's line and the token cache's file (peek's "file" column).
  CHECK_THAT(script.sample_file(0), Catch::Matchers::StartsWith(dir.path() + "/docs.jsonl: line 1, token 0 (" + dir.path() +
                                                                "/cache/tokens/"));
  CHECK_THAT(script.sample_file(script.options.dataset_size - 1), Contains("docs.jsonl: line 3, token "));
  // Kept in the cache: a second load tokenizes nothing; changed text is tokenized again.
  REQUIRE(has_note(script, "tokenized into"));
  sluice::Script again = sluice::load_script({.path = path, .epochs = 1});
  REQUIRE(has_note(again, "tokenized by an earlier run"));
  REQUIRE(again.options.dataset_size == script.options.dataset_size);
  dir.write("docs.jsonl", lines + "{\"text\": \"one more document, long enough for another row or two of eight\"}\n");
  sluice::Script changed = sluice::load_script({.path = path, .epochs = 1});
  REQUIRE(has_note(changed, "tokenized into"));
  REQUIRE(changed.options.dataset_size > script.options.dataset_size);
}

TEST_CASE("sluice.tokens{ text = sluice.parquet{...} } tokenizes a string column, its nulls refused or left out") {
  const std::string missing = spm_missing();
  if (!missing.empty()) SKIP_TEST(missing);
  sluice::test::TempDir dir;
  const CacheDirEnv cache(dir.path() + "/cache");
  train_model(dir.path());
  // parquet-mr's DELTA_BYTE_ARRAY strings, 31 of 1000 e-mail addresses null;
  // the documents expected are the corpus's own CSV of its values.
  const std::string data = std::string(SLUICE_IO_TEST_DATA) + "/parquet-testing/data/delta_byte_array";
  std::vector<std::string> docs;
  {
    std::ifstream csv(data + "_expect.csv");
    std::string line;
    std::getline(csv, line);  // the header
    while (std::getline(csv, line)) {
      std::vector<std::string> cells(1);
      bool quoted = false, was_quoted = false;
      std::vector<bool> null_cell;
      for (const char c : line) {
        if (c == '"') quoted = !quoted, was_quoted = true;
        else if (c == ',' && !quoted) null_cell.push_back(!was_quoted), cells.emplace_back(), was_quoted = false;
        else cells.back() += c;
      }
      null_cell.push_back(!was_quoted);
      REQUIRE(cells.size() == 9);
      if (!null_cell[7]) docs.push_back(cells[7]);  // c_email_address
    }
  }
  REQUIRE(docs.size() == 969);
  const std::string pipeline = R"(
local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.tokens{ text = sluice.parquet{ ")" + data + R"(.parquet", COLUMNS },
                          tokenizer = sluice.sentencepiece("m.model") },
  pack = { seq_len = 8 }, batch_size = 1, workers = 1, on_error = ON_ERROR,
}
)";
  auto script_with = [&](const std::string& columns, const std::string& on_error) {
    std::string text = pipeline;
    text.replace(text.find("COLUMNS"), 7, columns);
    text.replace(text.find("ON_ERROR"), 8, "\"" + on_error + "\"");
    return dir.write("p.lua", text);
  };
  const std::string emails = "columns = { \"c_email_address\" }";
  CHECK_THROWS_WITH(sluice::load_script({.path = script_with(emails, "fail"), .epochs = 1}),
                    Contains("delta_byte_array.parquet row ") && Contains("column 'c_email_address' is null, not a document"));
  sluice::Script script = sluice::load_script({.path = script_with(emails, "skip"), .epochs = 1});
  check_packed_text(script, dir.path() + "/m.model", docs, 8);
  CHECK(has_note(script, "31 of 1000 text documents left out of the tokens"));
  REQUIRE(has_note(sluice::load_script({.path = script_with(emails, "skip"), .epochs = 1}), "tokenized by an earlier run"));
  // Nine string columns, none named "text": which one is the text must be said.
  CHECK_THROWS_WITH(sluice::load_script({.path = script_with("row_groups = 2", "skip"), .epochs = 1}),
                    Contains("reads one column as the documents") && Contains("c_customer_id, c_salutation"));
  const std::string numbers = std::string(SLUICE_IO_TEST_DATA) + "/parquet-testing/data/alltypes_plain";
  std::string text = pipeline;
  text.replace(text.find(data), data.size(), numbers);
  text.replace(text.find("COLUMNS"), 7, "columns = { \"id\" }");
  text.replace(text.find("ON_ERROR"), 8, "\"fail\"");
  CHECK_THROWS_WITH(sluice::load_script({.path = dir.write("n.lua", text), .epochs = 1}),
                    Contains("column 'id' is INT32") && Contains("not text"));
}

TEST_CASE("text lines that do not read stop tokenization naming them, or are left out with on_error = skip") {
  const std::string missing = spm_missing();
  if (!missing.empty()) SKIP_TEST(missing);
  sluice::test::TempDir dir;
  const CacheDirEnv cache(dir.path() + "/cache");
  train_model(dir.path());
  const std::string good1 = "The quick brown fox jumps over the lazy dog.";
  const std::string good2 = "Permission is hereby granted, free of charge.";
  dir.write("docs.jsonl", "{\"text\": \"" + good1 + "\"}\n"
                          "{\"text\": \"broken\", }\n"              // not JSON
                          "{\"text\": null}\n"                      // not a string: not the document "null"
                          "{\"body\": \"no text key\"}\n"
                          "{\"text\": \"latin-1 caf\xe9\"}\n"       // not UTF-8
                          "{\"text\": \"" + good2 + "\"}\n");
  auto write = [&](const std::string& on_error) {
    return dir.write("t.lua", R"(
local sluice = require("sluice")
return sluice.pipeline {
  source = sluice.tokens{ text = sluice.jsonl{ "docs.jsonl" }, tokenizer = sluice.sentencepiece("m.model") },
  pack = { seq_len = 4 }, batch_size = 1, workers = 1, on_error = ")" + on_error + R"(",
}
)");
  };
  auto error_of = [](const std::string& path) {
    try {
      sluice::load_script({.path = path, .epochs = 1});
    } catch (const sluice::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(error_of(write("fail")), Contains("docs.jsonl: line 2: column 20: expected a key in quotes") &&
                                          Contains("on_error = \"skip\""));
  const std::string path = write("skip");
  sluice::Script script = sluice::load_script({.path = path, .epochs = 1});
  CHECK(has_note(script, "on_error = \"skip\": 4 of 6 text documents left out of the tokens; the first: "));
  CHECK(has_note(script, "docs.jsonl: line 2: column 20: expected a key in quotes"));
  check_packed_text(script, dir.path() + "/m.model", {good1, good2}, 4);
  // Documents left out: a token document is no longer its line's number, so only the cache's file is named.
  CHECK_THAT(script.sample_file(0), Catch::Matchers::StartsWith(dir.path() + "/cache/tokens/"));
  // Reused from the cache, it still says what was left out.
  sluice::Script again = sluice::load_script({.path = path, .epochs = 1});
  CHECK(has_note(again, "tokenized by an earlier run"));
  CHECK(has_note(again, "4 of 6 text documents left out of the tokens when they were tokenized"));
}
