#include "sluice/record.h"

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <vector>

#include "json.h"
#include "owned_resources.h"
#include "sluice/error.h"

namespace sluice {

namespace {

constexpr const char* kVersion = "0.1.0";

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

struct RecordedBatch {
  std::size_t line = 0;  // 1-based line in its file
  std::uint64_t epoch = 0, batch = 0;
  std::vector<std::uint64_t> samples;
  std::vector<std::pair<std::string, std::string>> digests;  // field name, hex digest
  std::vector<std::string> sample_digests;  // hex, one per sample; empty in older records
};

struct Record {
  detail::JsonValue header;
  std::vector<RecordedBatch> batches;
  std::vector<std::uint64_t> skipped;  // from skip lines, in file order
  std::string note;                    // a last line that was cut off, left out
};

Record read_record(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open: " + std::strerror(errno));
  Record r;
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    try {
      detail::JsonValue v = detail::parse_json(line);
      if (number == 1) {
        if (!v.find("sluice_record")) throw Error("not a Sluice run record (no \"sluice_record\" header)");
        r.header = std::move(v);
        continue;
      }
      if (const detail::JsonValue* skip = v.find("skip")) {
        r.skipped.push_back(skip->at("sample").as_u64("sample"));
        continue;
      }
      RecordedBatch b;
      b.line = number;
      b.epoch = v.at("epoch").as_u64("epoch");
      b.batch = v.at("batch").as_u64("batch");
      for (const auto& s : v.at("samples").as_array("samples")) b.samples.push_back(s.as_u64("samples"));
      const detail::JsonValue& d = v.at("digests");
      for (const auto& [name, value] : d.members) b.digests.emplace_back(name, value.as_string("digest"));
      if (const detail::JsonValue* sd = v.find("sample_digests")) {
        for (const auto& x : sd->as_array("sample_digests")) b.sample_digests.push_back(x.as_string("sample_digests"));
        if (b.sample_digests.size() != b.samples.size()) {
          throw Error("sample_digests has " + std::to_string(b.sample_digests.size()) + " entries for " +
                      std::to_string(b.samples.size()) + " samples");
        }
      }
      r.batches.push_back(std::move(b));
    } catch (const Error& e) {
      // A last line without its newline is one a killed run was writing:
      // what came before it is a record still.
      if (in.eof() && number > 1) {
        r.note = path + ":" + std::to_string(number) + ": the last line is cut off (" + e.what() +
                 "): the run was stopped while writing it; left out";
        break;
      }
      throw Error(path + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  if (number == 0) throw Error(path + ": empty file, not a Sluice run record");
  return r;
}

std::string where(const RecordedBatch& b) {
  return "epoch " + std::to_string(b.epoch) + ", batch " + std::to_string(b.batch);
}

}  // namespace

std::uint64_t digest_bytes(const void* data, std::size_t size) { return XXH64(data, size, 0); }

RunRecorder::RunRecorder(const std::string& path, const RecordHeader& h)
    : path_(path), bytes_fields_(h.bytes_fields), made_in_generation_(detail::fork_generation()) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) throw Error(path + ": cannot create the run record: " + std::strerror(errno));
  std::string line = "{\"sluice_record\":1,\"version\":";
  detail::append_json_string(line, kVersion);
  line += ",\"script_hash\":";
  detail::append_json_string(line, h.script_hash);
  line += ",\"seed\":" + std::to_string(h.seed) + ",\"rank\":" + std::to_string(h.rank) +
          ",\"world_size\":" + std::to_string(h.world_size) + ",\"options\":";
  line += h.options_json.empty() ? "{}" : h.options_json;
  line += "}\n";
  write(line);
}

RunRecorder::~RunRecorder() {
  if (file_ && detail::fork_generation() == made_in_generation_) std::fclose(file_);
}

void RunRecorder::record(const Batch& b) {
  std::string line = "{\"epoch\":" + std::to_string(b.epoch()) + ",\"batch\":" + std::to_string(b.index()) +
                     ",\"samples\":[";
  auto ids = b.sample_ids();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ',';
    line += std::to_string(ids[i]);
  }
  line += "],\"digests\":{";
  // Sample j's row of field v: all of it, or a bytes field's length and bytes.
  auto is_bytes_field = [&](const FieldView& v) {
    return std::find(bytes_fields_.begin(), bytes_fields_.end(), v.name) != bytes_fields_.end();
  };
  auto row_of = [&](const FieldView& v, std::size_t j) -> std::span<const std::byte> {
    if (is_bytes_field(v)) {
      const std::span<const std::byte> bytes = field_bytes(v, j);  // after its 8-byte length
      return {bytes.data() - 8, bytes.size() + 8};
    }
    const std::size_t row = v.nbytes / ids.size();
    return {static_cast<const std::byte*>(v.data) + j * row, row};
  };
  for (std::size_t f = 0; f < b.field_count(); ++f) {
    FieldView v = b.field(f);
    if (f) line += ',';
    detail::append_json_string(line, v.name);
    std::uint64_t d = 0;
    if (!is_bytes_field(v)) {
      d = digest_bytes(v.data, v.nbytes);
    } else {
      for (std::size_t j = 0; j < ids.size(); ++j) {
        const std::span<const std::byte> row = row_of(v, j);
        d = XXH64(row.data(), row.size(), d);
      }
    }
    line += ":\"" + hex64(d) + "\"";
  }
  // Per sample, its rows of every field chained through XXH64's seed: the
  // content of one sample, comparable across batch sizes and world sizes.
  line += "},\"sample_digests\":[";
  for (std::size_t j = 0; j < ids.size(); ++j) {
    std::uint64_t d = 0;
    for (std::size_t f = 0; f < b.field_count(); ++f) {
      const std::span<const std::byte> row = row_of(b.field(f), j);
      d = XXH64(row.data(), row.size(), d);
    }
    line += (j ? ",\"" : "\"") + hex64(d) + "\"";
  }
  line += "]}\n";
  write(line);
  flush();  // so that a failed write is this batch's: the lines before it are whole in the file
}

void RunRecorder::write(const std::string& line) {
  if (!file_ || std::fputs(line.c_str(), file_) < 0) throw Error(path_ + ": write failed: " + std::strerror(errno));
}

void RunRecorder::record_skip(std::uint64_t sample, std::string_view reason) {
  write("{\"skip\":" + skip_json(sample, std::nullopt, reason) + "}\n");
}

std::string json_string(std::string_view s) {
  std::string text;
  detail::append_json_string(text, s);
  return text;
}

std::string skip_json(std::uint64_t sample, std::optional<std::uint64_t> epoch, std::string_view reason) {
  std::string text = "{\"sample\":" + std::to_string(sample);
  if (epoch) text += ",\"epoch\":" + std::to_string(*epoch);
  return text + ",\"reason\":" + json_string(reason) + "}";
}

void RunRecorder::flush() {
  if (file_ && std::fflush(file_) != 0) throw Error(path_ + ": write failed: " + std::strerror(errno));
}

void RunRecorder::close() {
  if (!file_ || detail::fork_generation() != made_in_generation_) return;
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0) throw Error(path_ + ": closing the run record failed: " + std::strerror(errno));
}

VerifyResult verify_records(const std::string& path_a, const std::string& path_b) {
  Record a = read_record(path_a), b = read_record(path_b);
  VerifyResult result;
  for (const Record* r : {&a, &b}) {
    if (!r->note.empty()) result.notes.push_back(r->note);
  }
  // The determinism contract holds after ordering: compare by (epoch, batch).
  auto key = [](const RecordedBatch& x) { return std::pair(x.epoch, x.batch); };
  auto by_key = [&](const RecordedBatch& x, const RecordedBatch& y) { return key(x) < key(y); };
  const bool a_sorted = std::is_sorted(a.batches.begin(), a.batches.end(), by_key);
  const bool b_sorted = std::is_sorted(b.batches.begin(), b.batches.end(), by_key);
  std::stable_sort(a.batches.begin(), a.batches.end(), by_key);
  std::stable_sort(b.batches.begin(), b.batches.end(), by_key);

  const std::size_t n = std::min(a.batches.size(), b.batches.size());
  for (std::size_t i = 0; i < n; ++i) {
    const RecordedBatch& x = a.batches[i];
    const RecordedBatch& y = b.batches[i];
    result.batches_compared = i + 1;
    std::string at = "batch #" + std::to_string(i) + " (" + path_a + ":" + std::to_string(x.line) + ", " + path_b +
                     ":" + std::to_string(y.line) + ")";
    if (key(x) != key(y)) {
      result.message = at + ": " + path_a + " has " + where(x) + " where " + path_b + " has " + where(y);
      return result;
    }
    if (x.samples != y.samples) {
      std::vector<std::uint64_t> sx = x.samples, sy = y.samples;
      std::sort(sx.begin(), sx.end());
      std::sort(sy.begin(), sy.end());
      if (sx == sy) {
        result.message = at + ", " + where(x) + ": order differs: the same samples in another order";
      } else {
        std::size_t j = 0;
        while (j < x.samples.size() && j < y.samples.size() && x.samples[j] == y.samples[j]) ++j;
        auto show = [&](const std::vector<std::uint64_t>& s) {
          return j < s.size() ? std::to_string(s[j]) : std::string("(end)");
        };
        result.message = at + ", " + where(x) + ": samples differ: position " + std::to_string(j) + " holds " +
                         show(x.samples) + " in " + path_a + " and " + show(y.samples) + " in " + path_b;
      }
      return result;
    }
    if (x.digests != y.digests) {
      std::string field = "?";
      for (std::size_t f = 0; f < std::min(x.digests.size(), y.digests.size()); ++f) {
        if (x.digests[f] != y.digests[f]) {
          field = x.digests[f].first == y.digests[f].first ? x.digests[f].first
                                                           : x.digests[f].first + "/" + y.digests[f].first;
          break;
        }
      }
      if (field == "?") field = "(the field lists differ)";
      result.message = at + ", " + where(x) + ": content differs: same samples, field '" + field + "' differs";
      return result;
    }
  }
  if (a.batches.size() != b.batches.size()) {
    result.message = path_a + " has " + std::to_string(a.batches.size()) + " batches and " + path_b + " has " +
                     std::to_string(b.batches.size()) + "; the first " + std::to_string(n) + " are identical";
    return result;
  }
  // Skips are found in whatever order the workers meet them: compare the sets.
  std::sort(a.skipped.begin(), a.skipped.end());
  std::sort(b.skipped.begin(), b.skipped.end());
  if (a.skipped != b.skipped) {
    result.message = "the " + std::to_string(n) + " batches are identical, but the skipped samples differ: " +
                     std::to_string(a.skipped.size()) + " skipped in " + path_a + ", " +
                     std::to_string(b.skipped.size()) + " in " + path_b;
    return result;
  }
  result.identical = true;
  result.message = "identical: " + std::to_string(n) + " batches, same samples and field digests";
  if (!a.skipped.empty()) {
    result.message += ", the same " + std::to_string(a.skipped.size()) +
                      (a.skipped.size() == 1 ? " sample skipped" : " samples skipped");
  }
  if (a_sorted != b_sorted) result.message += " (delivered in a different order; identical after ordering)";
  return result;
}

namespace {

// One run seen by global step: every rank's part of each (epoch, step).
struct GlobalRun {
  struct Step {
    std::multiset<std::uint64_t> samples;
    std::map<std::uint64_t, std::string> digests;  // sample id -> its content digest
    std::uint32_t world = 0;  // the world size that recorded it whole (0: none did)
  };
  std::map<std::pair<std::uint64_t, std::uint64_t>, Step> steps;
  std::set<std::uint64_t> skipped;
  std::set<std::uint32_t> world_sizes;
  bool all_digests = true;  // every batch has per-sample digests
  std::uint64_t redelivered = 0;  // per-rank batches seen again after a resume, not counted twice
  // What fixes the shape of an epoch's last step on each world size, from the
  // headers (known: every record names the same data set size, global
  // batch and shard_policy, and drop_last is off).
  struct Plan {
    bool known = false;
    std::uint64_t samples = 0;       // options.dataset_size
    std::uint64_t global_batch = 0;  // batch_size x world_size
    bool pad = true;                 // shard_policy
  } plan;
  std::string name;               // for messages: the files, shortened
  std::vector<std::string> notes;  // records' cut-off last lines
};

// What one rank of one world size recorded for a step.
struct RankPart {
  std::vector<std::uint64_t> samples;
  std::vector<std::string> digests;
  std::string path;
};
// A step's parts by (world size, rank).
using StepParts = std::map<std::pair<std::uint32_t, std::uint32_t>, RankPart>;

// The step as the run delivered it. A resume continues from the slowest
// rank's step, so the faster ranks' batches of the steps after it are
// delivered again, by the resumed run (on the same world size: the same rank's
// part again; on another: a whole step of that world size). Of the world sizes
// that recorded the step, the one whose every rank did is the step; the other
// parts are re-deliveries. With no complete world size, every part counts (and
// the comparison names what is missing).
// Two complete world sizes of one step (a run resumed from an older state)
// must agree: the same samples with the same digests.
GlobalRun::Step assemble(const StepParts& parts, std::uint64_t& redelivered) {
  std::map<std::uint32_t, GlobalRun::Step> by_world;
  std::map<std::uint32_t, std::uint32_t> ranks_of;
  for (const auto& [key, part] : parts) {
    GlobalRun::Step& step = by_world[key.first];
    step.samples.insert(part.samples.begin(), part.samples.end());
    for (std::size_t j = 0; j < part.digests.size(); ++j) step.digests.emplace(part.samples[j], part.digests[j]);
    ++ranks_of[key.first];
  }
  const GlobalRun::Step* whole = nullptr;
  std::uint32_t whole_world = 0;
  for (const auto& [world, step] : by_world) {
    if (ranks_of[world] != world) continue;
    if (whole && (whole->samples != step.samples || whole->digests != step.digests)) {
      throw Error("a step was recorded whole on " + std::to_string(whole_world) + " and on " + std::to_string(world) +
                  " ranks, with different samples or content");
    }
    whole = &step;
    whole_world = world;
  }
  if (!whole) {
    GlobalRun::Step all;
    for (const auto& [world, step] : by_world) {
      all.samples.insert(step.samples.begin(), step.samples.end());
      all.digests.insert(step.digests.begin(), step.digests.end());
    }
    return all;
  }
  for (const auto& [key, part] : parts) redelivered += key.first != whole_world;
  GlobalRun::Step step = *whole;
  step.world = whole_world;
  return step;
}

GlobalRun read_global(std::span<const std::string> paths) {
  if (paths.empty()) throw Error("no run record given");
  GlobalRun run;
  run.name = paths[0] + (paths.size() > 1 ? " (+" + std::to_string(paths.size() - 1) + " more)" : "");
  std::map<std::pair<std::uint64_t, std::uint64_t>, StepParts> steps;
  for (const std::string& path : paths) {
    Record r = read_record(path);
    if (!r.note.empty()) run.notes.push_back(r.note);
    std::uint32_t world = 1, rank = 0;
    if (const detail::JsonValue* w = r.header.find("world_size")) {
      world = static_cast<std::uint32_t>(w->as_u64("world_size"));
    }
    if (const detail::JsonValue* k = r.header.find("rank")) rank = static_cast<std::uint32_t>(k->as_u64("rank"));
    run.world_sizes.insert(world);
    GlobalRun::Plan plan;
    const detail::JsonValue* o = r.header.find("options");
    const detail::JsonValue* n = o ? o->find("dataset_size") : nullptr;
    const detail::JsonValue* b = o ? o->find("batch_size") : nullptr;
    const detail::JsonValue* policy = o ? o->find("shard_policy") : nullptr;
    const detail::JsonValue* drop_last = o ? o->find("drop_last") : nullptr;
    if (n && b && policy && policy->kind == detail::JsonValue::string &&
        !(drop_last && drop_last->kind == detail::JsonValue::boolean && drop_last->b)) {
      plan = {true, n->as_u64("dataset_size"), b->as_u64("batch_size") * world, policy->text != "drop"};
    }
    const bool first = path == paths[0];
    if (first) run.plan = plan;
    else if (!plan.known || plan.samples != run.plan.samples || plan.global_batch != run.plan.global_batch ||
             plan.pad != run.plan.pad)
      run.plan.known = false;
    for (const RecordedBatch& b : r.batches) {
      if (b.sample_digests.empty() && !b.samples.empty()) run.all_digests = false;
      RankPart part{b.samples, b.sample_digests, path};
      auto [at, fresh] = steps[{b.epoch, b.batch}].try_emplace({world, rank}, std::move(part));
      if (fresh) continue;
      // The same rank of the same world size again: a resume re-delivered it,
      // and must have delivered the very same batch.
      if (at->second.samples != b.samples || at->second.digests != b.sample_digests) {
        throw Error("epoch " + std::to_string(b.epoch) + ", step " + std::to_string(b.batch) + ": rank " +
                    std::to_string(rank) + " of " + std::to_string(world) + " recorded it twice, differently (" +
                    at->second.path + " and " + path + ")");
      }
      ++run.redelivered;
    }
    run.skipped.insert(r.skipped.begin(), r.skipped.end());
  }
  for (const auto& [key, parts] : steps) {
    try {
      run.steps.emplace(key, assemble(parts, run.redelivered));
    } catch (const Error& e) {
      throw Error("epoch " + std::to_string(key.first) + ", step " + std::to_string(key.second) + ": " + e.what());
    }
  }
  return run;
}

std::string world_sizes(const GlobalRun& run) {
  std::string text;
  for (std::uint32_t w : run.world_sizes) text += (text.empty() ? "" : ", ") + std::to_string(w);
  return (run.world_sizes.size() == 1 ? "world size " : "world sizes ") + text;
}

// The first sample whose count differs between two multisets, and how.
std::string first_sample_difference(const GlobalRun& a, const std::multiset<std::uint64_t>& x, const GlobalRun& b,
                                    const std::multiset<std::uint64_t>& y) {
  std::set<std::uint64_t> ids(x.begin(), x.end());
  ids.insert(y.begin(), y.end());
  for (std::uint64_t id : ids) {
    const std::size_t in_a = x.count(id), in_b = y.count(id);
    if (in_a == in_b) continue;
    std::string text = "samples differ: sample " + std::to_string(id) + " is there " + std::to_string(in_a) +
                       " time(s) in " + a.name + " and " + std::to_string(in_b) + " in " + b.name + " (" +
                       std::to_string(x.size()) + " and " + std::to_string(y.size()) + " samples in the step)";
    if (std::set<std::uint64_t>(x.begin(), x.end()) == std::set<std::uint64_t>(y.begin(), y.end())) {
      text += "; only repeats differ: shard_policy = pad repeats samples at the end of an epoch to fill "
              "every rank, as many as the world size needs";
    }
    return text;
  }
  return "samples differ";
}

using StepAt = std::map<std::pair<std::uint64_t, std::uint64_t>, GlobalRun::Step>::const_iterator;

// An epoch's last step on world size w, as guarantees.md fixes it: pad
// fills it with (-N mod w) samples repeated from the epoch's start, drop
// leaves the last N mod w out. extra: its samples past N (< 0: short of it).
struct Tail {
  std::uint64_t step = 0, size = 0;
  std::int64_t extra = 0;
};

Tail tail_of(const GlobalRun::Plan& plan, std::uint32_t w) {
  const std::uint64_t rest = plan.samples % w;
  const std::uint64_t n = plan.pad ? plan.samples + (rest ? w - rest : 0) : plan.samples - rest;
  const std::uint64_t steps = (n + plan.global_batch - 1) / plan.global_batch;
  return {steps - 1, n - (steps - 1) * plan.global_batch,
          static_cast<std::int64_t>(n) - static_cast<std::int64_t>(plan.samples)};
}

// Two steps whose samples differ may both be their epoch's last step on
// different world sizes, differing as guarantees.md says it does: then what
// it is, for the verdict; else "". Only where both runs' headers fix the
// tail (the same data set size, global batch and shard_policy, no
// drop_last), the step is the last one both world sizes compute, each holds
// exactly the samples its world size gives it, one is the other plus
// exactly the difference in padding (or drop), and pad's extra samples are
// among the first global step of the epoch in the other run (they repeat the
// epoch's first positions).
std::string tail_difference(const GlobalRun& a, StepAt ia, const GlobalRun& b, StepAt ib) {
  const GlobalRun::Step& x = ia->second;
  const GlobalRun::Step& y = ib->second;
  const GlobalRun::Plan& p = a.plan;
  if (!p.known || !b.plan.known || p.samples != b.plan.samples || p.global_batch != b.plan.global_batch ||
      p.pad != b.plan.pad || x.world == 0 || y.world == 0 || x.world == y.world)
    return "";
  const Tail tx = tail_of(p, x.world), ty = tail_of(p, y.world);
  const std::uint64_t step = ia->first.second;
  if (tx.step != step || ty.step != step || x.samples.size() != tx.size || y.samples.size() != ty.size) return "";
  const bool a_more = tx.extra > ty.extra;
  const GlobalRun::Step& big = a_more ? x : y;
  const GlobalRun::Step& small = a_more ? y : x;
  if (!std::includes(big.samples.begin(), big.samples.end(), small.samples.begin(), small.samples.end())) return "";
  std::vector<std::uint64_t> extra;
  std::set_difference(big.samples.begin(), big.samples.end(), small.samples.begin(), small.samples.end(),
                      std::back_inserter(extra));
  if (p.pad) {
    const GlobalRun& other = a_more ? b : a;
    const auto first = other.steps.find({ia->first.first, 0});
    if (first == other.steps.end()) return "";
    for (std::uint64_t id : extra)
      if (first->second.samples.count(id) == 0) return "";
  }
  const std::string sizes = "the epoch's last step holds " + std::to_string(x.samples.size()) + " samples on world size " +
                            std::to_string(x.world) + " and " + std::to_string(y.samples.size()) + " on " +
                            std::to_string(y.world) + ": ";
  if (p.pad)
    return sizes + "shard_policy = pad fills every rank of " + std::to_string(a_more ? x.world : y.world) + " with " +
           std::to_string(extra.size()) + " sample(s) repeated from the epoch's start";
  return sizes + "shard_policy = drop leaves " + std::to_string(extra.size()) + " more of the epoch's last samples out on " +
         std::to_string(a_more ? y.world : x.world) + " ranks";
}

}  // namespace

VerifyResult verify_records_global(std::span<const std::string> paths_a, std::span<const std::string> paths_b) {
  const GlobalRun a = read_global(paths_a), b = read_global(paths_b);
  VerifyResult result;
  result.notes = a.notes;
  result.notes.insert(result.notes.end(), b.notes.begin(), b.notes.end());
  auto at_step = [](const std::pair<std::uint64_t, std::uint64_t>& key) {
    return "epoch " + std::to_string(key.first) + ", step " + std::to_string(key.second);
  };
  std::vector<std::string> tails;  // epoch tails that differ only as their world sizes make them
  auto ia = a.steps.begin(), ib = b.steps.begin();
  for (; ia != a.steps.end() && ib != b.steps.end(); ++ia, ++ib) {
    if (ia->first != ib->first) {
      const bool a_lacks = ib->first < ia->first;
      const auto& missing = a_lacks ? ib->first : ia->first;
      result.message = at_step(missing) + ": " + (a_lacks ? a.name : b.name) + " has no batch of this step, " +
                       (a_lacks ? b.name : a.name) + " has; the first " + std::to_string(result.batches_compared) +
                       " global steps are identical";
      return result;
    }
    const GlobalRun::Step& x = ia->second;
    const GlobalRun::Step& y = ib->second;
    if (x.samples != y.samples) {
      const std::string tail = tail_difference(a, ia, b, ib);
      if (tail.empty()) {
        result.message = at_step(ia->first) + ": " + first_sample_difference(a, x.samples, b, y.samples);
        return result;
      }
      tails.push_back(at_step(ia->first) + ": " + tail);
    }
    for (const auto& [id, digest] : x.digests) {
      auto other = y.digests.find(id);
      if (other != y.digests.end() && other->second != digest) {
        result.message = at_step(ia->first) + ": content of sample " + std::to_string(id) + " differs (digest " +
                         digest + " in " + a.name + ", " + other->second + " in " + b.name + ")";
        return result;
      }
    }
    ++result.batches_compared;
  }
  if (ia != a.steps.end() || ib != b.steps.end()) {
    const bool a_shorter = ia == a.steps.end();
    result.message = (a_shorter ? a.name : b.name) + " is shorter: it ends before " +
                     at_step(a_shorter ? ib->first : ia->first) + " (" + std::to_string(a.steps.size()) + " and " +
                     std::to_string(b.steps.size()) + " global steps); the first " +
                     std::to_string(result.batches_compared) + " are identical";
    return result;
  }
  if (a.skipped != b.skipped) {
    result.message = "the " + std::to_string(result.batches_compared) +
                     " global steps are identical, but the skipped samples differ: " +
                     std::to_string(a.skipped.size()) + " skipped in " + a.name + ", " +
                     std::to_string(b.skipped.size()) + " in " + b.name;
    return result;
  }
  result.identical = true;
  result.message = "identical: " + std::to_string(result.batches_compared) + " global steps, same samples" +
                   (a.all_digests && b.all_digests
                        ? std::string(" and per-sample digests")
                        : std::string(" (content not compared: a record without per-sample digests)")) +
                   "; " + a.name + ": " + world_sizes(a) + ", " + b.name + ": " + world_sizes(b);
  if (!a.skipped.empty()) result.message += ", the same " + std::to_string(a.skipped.size()) + " skipped";
  if (!tails.empty())
    result.message += "; " + std::to_string(tails.size()) +
                      " epoch tail(s) differ only as the world size makes them (guarantees.md), the first: " + tails[0];
  for (const GlobalRun* run : {&a, &b}) {
    if (run->redelivered == 0) continue;
    result.message += "; " + run->name + " delivered " + std::to_string(run->redelivered) +
                      " per-rank batches again after a resume (its ranks stopped at different steps; counted once)";
  }
  return result;
}

}  // namespace sluice
