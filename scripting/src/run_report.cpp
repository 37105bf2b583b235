#include "sluice/run_report.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "sluice/error.h"

namespace sluice {
namespace {

// What the token sources said at load (packing, a mixture's weights and the
// phases that change them), for the run record's header: a run resumed with
// new weights shows them there.
std::string text_notes_json(const std::vector<std::string>& notes) {
  std::string list;
  for (const std::string& note : notes) {
    if (!note.starts_with("pack: ") && !note.starts_with("mix: ") && !note.starts_with("source ")) continue;
    list += (list.empty() ? "" : ",") + json_string(note);
  }
  return list.empty() ? "" : ",\"text\":[" + list + "]";
}

// What shapes the data, for the run record's header.
std::string options_json(const Options& o, const std::string& script_path, const std::vector<std::string>& notes) {
  char text[256];
  std::snprintf(text, sizeof text, ",\"dataset_size\":%llu,\"batch_size\":%u,\"drop_last\":%s,\"shuffle\":%s,"
                "\"epochs\":%u,\"skip_fill\":\"%s\",\"shard_policy\":\"%s\",\"fields\":",
                static_cast<unsigned long long>(o.dataset_size), o.batch_size, o.drop_last ? "true" : "false",
                o.shuffle ? "true" : "false", o.epochs, name_of(o.skip_fill), name_of(o.shard_policy));
  return "{\"script\":" + json_string(script_path) + text + json_string(describe_fields(o)) + text_notes_json(notes) +
         "}";
}

}  // namespace

std::string describe_fields(const Options& o) {
  std::string text;
  for (const FieldSpec& f : o.fields) {
    if (!text.empty()) text += ", ";
    text += f.name + " " + std::string(dtype_name(f.dtype)) + "[";
    for (std::size_t d = 0; d < f.shape.size(); ++d) {
      text += (d ? "," : "") + std::to_string(f.shape[d]);
    }
    text += "]";
  }
  return text;
}

RecordHeader record_header(const Script& script) {
  const Options& o = script.options;
  const std::string& source = script.text;  // as run, whatever the file is now
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(digest_bytes(source.data(), source.size())));
  RecordHeader h{hash, options_json(o, script.path, script.notes), o.seed, o.rank, o.world_size, {}};
  for (const FieldSpec& f : o.fields)
    if (f.max_bytes > 0) h.bytes_fields.push_back(f.name);
  return h;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot read: " + std::strerror(errno));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

SkipReport::SkipReport(const std::string& log_path, RunRecorder* recorder) : path_(log_path), recorder_(recorder) {
  if (path_.empty()) return;
  log_ = std::fopen(path_.c_str(), "w");
  if (!log_) throw Error(path_ + ": cannot create the skip log: " + std::strerror(errno));
}

SkipReport::~SkipReport() {
  if (log_) std::fclose(log_);
}

void SkipReport::update(const Stats& stats) {
  for (; written_ < stats.skipped_samples.size(); ++written_) {
    const std::uint64_t id = stats.skipped_samples[written_];
    const std::string reason = written_ < stats.skip_reasons.size() ? stats.skip_reasons[written_] : "";
    if (recorder_) recorder_->record_skip(id, reason);
    if (log_) {
      const std::string line = skip_json(id, std::nullopt, reason) + "\n";
      if (std::fputs(line.c_str(), log_) < 0 || std::fflush(log_) != 0) {
        throw Error(path_ + ": write failed: " + std::strerror(errno));
      }
    }
  }
}

}  // namespace sluice
