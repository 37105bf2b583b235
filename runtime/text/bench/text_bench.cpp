// sluice_text_bench: language-model batches, one worker, against baselines
// measured in the same run (medians of --runs runs, page cache warm):
//
//   packed    tokens/s into packed [seq_len] batches (sluice.tokens + pack,
//             concat) from a uint16 token file, against memcpy of the same
//             token bytes (the file's bytes, 2 per token), and against memcpy
//             of the bytes the batches hold (28 per token: five fields).
//   spm       tokens/s of SentencePiece tokenization in a map (the Debian
//             license texts whole through sluice.files, and their lines as
//             TFRecord records), against python3-sentencepiece in a PyTorch
//             DataLoader with the same worker count over the same texts.
//   jsonl     tokens/s into packed batches from JSON lines tokenized by
//             SentencePiece (sluice.tokens{ text = sluice.jsonl{...} }), the
//             whole run timed, load included: cold (tokenized into the token
//             cache, one thread per usable core) and warm (a later run over
//             the cache), against python3-sentencepiece in a DataLoader with
//             as many workers as those threads, per epoch.
//   padding   best_fit's padding fraction against naive pad-to-length (one
//             document per row, longer ones split) on the same documents.
//
// Each ratio is printed with the first write to a fresh page's cost on this
// machine (tools/bench/harness.h first_touch_us).
//
// usage: sluice_text_bench [--dir DIR] [--runs N] [--mtokens N] [--workers N] [--no-python]
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "harness.h"
#include "loader_rate.h"
#include "sluice/io/tfrecord_writer.h"
#include "sluice/loader.h"
#include "sluice/script.h"
#include "sluice/text/packing.h"
#include "sluice/text/token_file.h"

namespace fs = std::filesystem;
using sluice::bench::median;
using sluice::bench::Stopwatch;

namespace {

// Documents of lognormal lengths (median ~400 tokens, a long tail past 8k),
// each ending with EOS = 0, ids in [1, 50000).
std::vector<std::uint64_t> write_corpus(const std::string& path, std::uint64_t tokens) {
  std::mt19937_64 gen(1);
  std::lognormal_distribution<double> length(6.0, 1.0);
  std::uniform_int_distribution<std::uint32_t> id(1, 49999);
  std::vector<std::uint16_t> data;
  data.reserve(tokens);
  std::vector<std::uint64_t> lengths;
  while (data.size() < tokens) {
    const auto n = std::max<std::uint64_t>(2, static_cast<std::uint64_t>(length(gen)));
    for (std::uint64_t i = 0; i + 1 < n; ++i) data.push_back(static_cast<std::uint16_t>(id(gen)));
    data.push_back(0);
    lengths.push_back(n);
  }
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data.data()),
                                              static_cast<std::streamsize>(data.size() * 2));
  return lengths;
}

// Bytes per second of memcpy from the file's mapping (read once, so warm)
// into a 4 MiB buffer faulted in beforehand.
double memcpy_rate(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> src{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<char> dst(4 << 20, 1);
  std::uint64_t sum = 0;
  const Stopwatch clock;
  for (std::size_t at = 0; at < src.size(); at += dst.size()) {
    const std::size_t n = std::min(dst.size(), src.size() - at);
    std::memcpy(dst.data(), src.data() + at, n);
    sum += static_cast<unsigned char>(dst[n - 1]);
  }
  sluice::bench::keep(sum);
  return static_cast<double>(src.size()) / clock.seconds();
}

// Items per second over one epoch, from the first batch (start-up excluded);
// `count(batch)` says how many items a batch holds.
template <typename Count>
double pipeline_rate(const std::string& script, std::uint32_t workers, Count count) {
  sluice::Script s = sluice::load_script({.path = script, .workers = workers});
  sluice::Loader loader(s.options);
  return sluice::bench::loader_rate(loader, count);
}

// `text` as a JSON string's contents.
std::string json_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char u[8];
      std::snprintf(u, sizeof u, "\\u%04x", c);
      out += u;
    } else {
      out += c;
    }
  }
  return out;
}

// Packed tokens per second over a whole run of one epoch, load included.
double whole_run_rate(const std::string& script, std::uint32_t workers, std::uint32_t seq_len) {
  const Stopwatch clock;
  sluice::Script s = sluice::load_script({.path = script, .epochs = 1, .workers = workers});
  sluice::Loader loader(s.options);
  const double tokens =
      sluice::bench::drain_items(loader, [&](const sluice::Batch& b) { return static_cast<double>(b.size()) * seq_len; });
  return tokens / clock.seconds();
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = (fs::temp_directory_path() / "sluice-text-bench").string();
  int runs = 5;
  std::uint64_t mtokens = 32;
  std::uint32_t workers = 1;
  bool python = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-python") python = false;
    else if (i + 1 < argc && a == "--dir") dir = argv[++i];
    else if (i + 1 < argc && a == "--runs") runs = std::stoi(argv[++i]);
    else if (i + 1 < argc && a == "--mtokens") mtokens = std::stoull(argv[++i]);
    else if (i + 1 < argc && a == "--workers") workers = static_cast<std::uint32_t>(std::stoul(argv[++i]));
    else {
      std::fprintf(stderr, "usage: sluice_text_bench [--dir DIR] [--runs N] [--mtokens N] [--workers N] [--no-python]\n");
      return 2;
    }
  }
  fs::create_directories(dir);
  const double touch_us = sluice::bench::first_touch_us();
  std::printf("first write to a fresh page: %.2f us\n", touch_us);

  // packed
  const std::string corpus = dir + "/corpus.bin";
  const std::vector<std::uint64_t> lengths = write_corpus(corpus, mtokens << 20);
  const std::uint32_t L = 2048;
  const std::string packed = dir + "/packed.lua";
  std::ofstream(packed) << "local sluice = require('sluice')\n"
                           "return sluice.pipeline {\n"
                           "  source = sluice.tokens{ '" << corpus << "', dtype = 'uint16', eos = 0 },\n"
                           "  pack = { seq_len = " << L << " },\n"
                           "  batch_size = 8, shuffle = true, seed = 1,\n}\n";
  std::vector<double> copy, piped;
  for (int r = 0; r < runs; ++r) {
    copy.push_back(memcpy_rate(corpus));
    piped.push_back(pipeline_rate(packed, workers, [&](const sluice::Batch& b) { return double(b.size()) * L; }));
  }
  const double bytes_s = median(copy), tokens_s = median(piped);
  std::printf("packed (concat, seq_len %u, batch 8, %u worker%s): %.1f M tokens/s; memcpy %.0f MB/s = %.1f M tokens/s "
              "of file bytes (ratio %.2f, target >= 0.5), %.1f M tokens/s of batch bytes (ratio %.2f); first touch %.2f us\n",
              L, workers, workers == 1 ? "" : "s", tokens_s / 1e6, bytes_s / 1e6, bytes_s / 2 / 1e6,
              tokens_s / (bytes_s / 2), bytes_s / 28 / 1e6, tokens_s / (bytes_s / 28), touch_us);
  std::printf("  runs: pipeline %s M tokens/s; memcpy %s MB/s\n",
              sluice::bench::format_values([&] { auto v = piped; for (auto& x : v) x /= 1e6; return v; }(), 1).c_str(),
              sluice::bench::format_values([&] { auto v = copy; for (auto& x : v) x /= 1e6; return v; }(), 0).c_str());

  // padding
  auto tokens = sluice::text::TokenCorpus::open({corpus}, {.dtype = sluice::text::TokenType::uint16, .eos = 0});
  for (std::uint32_t window : {16u, 64u, 256u}) {
    sluice::text::Packing fit(tokens, {.seq_len = L, .mode = sluice::text::PackMode::best_fit, .window = window});
    std::uint64_t naive_rows = 0;
    for (std::uint64_t n : lengths) naive_rows += (n + L - 1) / L;
    const double naive = 1.0 - static_cast<double>(tokens->tokens()) / static_cast<double>(naive_rows * L);
    const double best = static_cast<double>(fit.padding_tokens()) / static_cast<double>(fit.rows() * L);
    std::printf("padding (seq_len %u, %zu documents, median %llu tokens): best_fit window %u %.2f%% (%llu rows), "
                "pad-to-length %.2f%% (%llu rows)\n",
                L, lengths.size(), static_cast<unsigned long long>([&] { auto v = lengths; std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end()); return v[v.size() / 2]; }()),
                window, 100 * best, static_cast<unsigned long long>(fit.rows()), 100 * naive,
                static_cast<unsigned long long>(naive_rows));
  }
  fs::remove(corpus);

  // spm
  if (std::system("command -v spm_train > /dev/null 2>&1") != 0) {
    std::printf("spm: skipped (spm_train not found: Debian package sentencepiece)\n");
    return 0;
  }
  const std::string texts = dir + "/texts";
  fs::create_directories(texts);
  std::vector<std::string> licenses;
  for (const auto& e : fs::directory_iterator("/usr/share/common-licenses"))
    if (e.is_regular_file() && !e.is_symlink()) licenses.push_back(e.path().string());
  std::sort(licenses.begin(), licenses.end());
  for (int copy_index = 0; copy_index < 20; ++copy_index)
    for (std::size_t k = 0; k < licenses.size(); ++k)
      fs::copy_file(licenses[k], texts + "/" + std::to_string(copy_index) + "_" + fs::path(licenses[k]).filename().string(),
                    fs::copy_options::overwrite_existing);
  const std::string model = dir + "/m";
  const std::string train = "spm_train --input=" + licenses[0] + "," + licenses[1] + "," + licenses[2] +
                            " --model_prefix=" + model + " --vocab_size=1000 --hard_vocab_limit=false --byte_fallback=true --minloglevel=2 > /dev/null 2>&1";
  if (std::system(train.c_str()) != 0) {
    std::printf("spm: spm_train failed\n");
    return 1;
  }
  // Whole files (10-35 KB, the library's own speed dominates) and their lines
  // (~60 bytes, one TFRecord record each: the per-sample cost dominates).
  const std::string lines = dir + "/lines.tfrecord";
  std::uint64_t line_count = 0;
  {
    sluice::io::TFRecordWriter writer(lines);
    for (int copy_index = 0; copy_index < 4; ++copy_index)
      for (const auto& license : licenses) {
        std::ifstream in(license);
        for (std::string line; std::getline(in, line);) {
          if (line.empty()) continue;
          writer.write(std::as_bytes(std::span(line.data(), line.size())));
          ++line_count;
        }
      }
    writer.close();
  }
  const std::string py_script = dir + "/spm_dataloader.py";
  std::ofstream(py_script)
      << "import glob, struct, sys, time, torch, sentencepiece as spm\n"
         "model, what, workers, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])\n"
         "if what.endswith('.tfrecord'):\n"
         "    data, texts, at = open(what, 'rb').read(), [], 0\n"
         "    while at < len(data):\n"
         "        n = struct.unpack_from('<Q', data, at)[0]; texts.append(data[at + 12:at + 12 + n]); at += 16 + n\n"
         "else:\n"
         "    texts = sorted(glob.glob(what + '/*'))\n"
         "class Texts(torch.utils.data.Dataset):\n"
         "    def __init__(self): self.sp = None\n"
         "    def __len__(self): return len(texts)\n"
         "    def __getitem__(self, i):\n"
         "        if self.sp is None: self.sp = spm.SentencePieceProcessor(model_file=model)\n"
         "        t = texts[i] if isinstance(texts[i], bytes) else open(texts[i], 'rb').read()\n"
         "        return len(self.sp.encode(t.decode('utf-8')))\n"
         "loader = torch.utils.data.DataLoader(Texts(), batch_size=batch, num_workers=workers)\n"
         "it = iter(loader); n = 0; next(it); t = time.perf_counter()\n"
         "for b in it: n += int(b.sum())\n"
         "print(n / (time.perf_counter() - t))\n";
  const bool have_python = python && std::system("/usr/bin/python3 -c 'import torch, sentencepiece' > /dev/null 2>&1") == 0;
  struct Case {
    const char* name;
    std::string source, what;
    int batch;
  };
  const Case cases[] = {
      {"whole files", "sluice.files{ '" + texts + "/*' }", texts, 8},
      {"lines", "sluice.tfrecord{ '" + lines + "' }", lines, 64},
  };
  for (const Case& c : cases) {
    const std::string spm = dir + "/spm.lua";
    std::ofstream(spm) << "local sluice = require('sluice')\n"
                          "local tok = sluice.sentencepiece('" << model << ".model')\n"
                          "return sluice.pipeline {\n"
                          "  source = " << c.source << ",\n"
                          "  fields = { { 'count', 'int64' } },\n"
                          "  map = function(s, ctx) return { count = tok:encode(s.bytes).shape[1] } end,\n"
                          "  batch_size = " << c.batch << ",\n}\n";
    std::vector<double> sl, py;
    for (int r = 0; r < runs; ++r) {
      sl.push_back(pipeline_rate(spm, workers, [](const sluice::Batch& b) {
        const auto* count = static_cast<const std::int64_t*>(b.field(0).data);
        double n = 0;
        for (std::size_t i = 0; i < b.size(); ++i) n += static_cast<double>(count[i]);
        return n;
      }));
      if (!have_python) continue;
      const std::string cmd = "/usr/bin/python3 " + py_script + " " + model + ".model " + c.what + " " +
                              std::to_string(workers) + " " + std::to_string(c.batch) + " > " + dir + "/py.out";
      if (std::system(cmd.c_str()) != 0) continue;
      std::ifstream in(dir + "/py.out");
      double rate = 0;
      in >> rate;
      py.push_back(rate);
    }
    const double s = median(sl);
    const std::uint64_t samples = c.what == lines ? line_count : licenses.size() * 20;
    std::printf("spm, %s (%llu samples, batch %d, %u worker%s): sluice %.2f M tokens/s (runs %s)", c.name,
                static_cast<unsigned long long>(samples), c.batch, workers, workers == 1 ? "" : "s", s / 1e6,
                sluice::bench::format_values([&] { auto v = sl; for (auto& x : v) x /= 1e6; return v; }(), 2).c_str());
    if (py.empty()) {
      std::printf("; python3-sentencepiece + DataLoader: skipped\n");
      continue;
    }
    const double p = median(py);
    std::printf("; python3-sentencepiece in a DataLoader %.2f M tokens/s (runs %s): ratio %.2f (target >= 3); "
                "first touch %.2f us\n",
                p / 1e6, sluice::bench::format_values([&] { auto v = py; for (auto& x : v) x /= 1e6; return v; }(), 2).c_str(),
                s / p, touch_us);
  }

  // jsonl: the license texts as JSON lines, tokenized once into the token cache, packed.
  const std::string jsonl = dir + "/texts.jsonl";
  {
    std::ofstream out(jsonl, std::ios::binary);
    for (int copy_index = 0; copy_index < 20; ++copy_index)
      for (const auto& license : licenses) {
        std::ifstream in(license, std::ios::binary);
        const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        out << "{\"id\": " << copy_index << ", \"text\": \"" << json_escape(text) << "\"}\n";
      }
  }
  cpu_set_t cpus;
  const unsigned threads = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? std::min(CPU_COUNT(&cpus), 16) : 1;
  const std::uint32_t seq = 512;
  const std::string text_lua = dir + "/text.lua";
  std::ofstream(text_lua) << "local sluice = require('sluice')\n"
                             "local tok = sluice.sentencepiece('" << model << ".model')\n"
                             "return sluice.pipeline {\n"
                             "  source = sluice.tokens{ text = sluice.jsonl{ '" << jsonl << "' }, tokenizer = tok },\n"
                             "  pack = { seq_len = " << seq << " },\n"
                             "  batch_size = 8, shuffle = true, seed = 1,\n}\n";
  std::ofstream(dir + "/jsonl_dataloader.py")
      << "import json, sys, time, torch, sentencepiece as spm\n"
         "model, path, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
         "lines = open(path, 'rb').read().splitlines()\n"
         "class Texts(torch.utils.data.Dataset):\n"
         "    def __init__(self): self.sp = None\n"
         "    def __len__(self): return len(lines)\n"
         "    def __getitem__(self, i):\n"
         "        if self.sp is None: self.sp = spm.SentencePieceProcessor(model_file=model)\n"
         "        return len(self.sp.encode(json.loads(lines[i])['text'])) + 1\n"
         "t = time.perf_counter(); n = 0\n"
         "for b in torch.utils.data.DataLoader(Texts(), batch_size=8, num_workers=workers): n += int(b.sum())\n"
         "print(n / (time.perf_counter() - t))\n";
  std::vector<double> cold, warm, py;
  for (int r = 0; r < runs; ++r) {
    const std::string cache = dir + "/token-cache-" + std::to_string(r);
    fs::remove_all(cache);
    ::setenv("SLUICE_CACHE_DIR", cache.c_str(), 1);
    cold.push_back(whole_run_rate(text_lua, workers, seq));
    warm.push_back(whole_run_rate(text_lua, workers, seq));
    ::unsetenv("SLUICE_CACHE_DIR");
    fs::remove_all(cache);
    if (!have_python) continue;
    const std::string cmd = "/usr/bin/python3 " + dir + "/jsonl_dataloader.py " + model + ".model " + jsonl + " " +
                            std::to_string(threads) + " > " + dir + "/py.out";
    if (std::system(cmd.c_str()) != 0) continue;
    std::ifstream in(dir + "/py.out");
    double rate = 0;
    in >> rate;
    py.push_back(rate);
  }
  auto millions = [](std::vector<double> v) {
    for (auto& x : v) x /= 1e6;
    return sluice::bench::format_values(v, 2);
  };
  std::printf("jsonl -> packed (seq_len %u, %zu documents, %u tokenizing threads, %u worker%s): cold %.2f M tokens/s "
              "(runs %s), warm %.2f M tokens/s (runs %s)",
              seq, licenses.size() * 20, threads, workers, workers == 1 ? "" : "s", median(cold) / 1e6,
              millions(cold).c_str(), median(warm) / 1e6, millions(warm).c_str());
  if (py.empty()) {
    std::printf("; python3-sentencepiece + DataLoader: skipped\n");
  } else {
    const double p = median(py);
    std::printf("; python3-sentencepiece in a DataLoader (%u workers) %.2f M tokens/s per epoch (runs %s): "
                "cold ratio %.2f, warm ratio %.2f (target >= 3); first touch %.2f us\n",
                threads, p / 1e6, millions(py).c_str(), median(cold) / p, median(warm) / p, touch_us);
  }
  return 0;
}
