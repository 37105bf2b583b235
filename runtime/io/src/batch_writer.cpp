#include "sluice/io/batch_writer.h"

#include <cstdio>
#include <cstring>

#include "sluice/error.h"
#include "sluice/record.h"
#include "sluice/state.h"

namespace sluice::io {
namespace {

constexpr std::string_view kLengths = ".lengths";

ShardWriterOptions with_fields(ShardWriterOptions out, std::vector<ManifestField> fields) {
  out.fields = std::move(fields);
  return out;
}

}  // namespace

std::map<std::string, std::string> write_plan(const Options& o, const std::string& script_hash) {
  std::map<std::string, std::string> plan;
  auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  plan["dataset_size"] = std::to_string(o.dataset_size);
  plan["batch_size"] = std::to_string(o.batch_size);
  plan["drop_last"] = flag(o.drop_last);
  plan["shuffle"] = flag(o.shuffle);
  plan["seed"] = std::to_string(o.seed);  // also the seed of the pipeline's own randomness
  if (o.shuffle && o.shuffle_window > 0) {
    plan["shuffle_window"] = std::to_string(o.shuffle_window);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx",
                  static_cast<unsigned long long>(
                      digest_bytes(o.shard_sizes.data(), o.shard_sizes.size() * sizeof(std::uint64_t))));
    plan["shard_sizes"] = hex;
  }
  plan["rank"] = std::to_string(o.rank);
  plan["world_size"] = std::to_string(o.world_size);
  if (o.world_size > 1) plan["shard_policy"] = name_of(o.shard_policy);
  plan["skip_fill"] = name_of(o.skip_fill);
  if (!script_hash.empty()) plan["script"] = script_hash;
  return plan;
}

std::vector<ManifestField> BatchWriter::describe(const std::vector<FieldSpec>& fields, std::vector<Source>& sources) {
  std::vector<ManifestField> out;
  auto find = [&](const std::string& name) -> std::int64_t {
    for (std::size_t i = 0; i < fields.size(); ++i)
      if (fields[i].name == name) return static_cast<std::int64_t>(i);
    return -1;
  };
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const FieldSpec& f = fields[i];
    const bool is_lengths = f.name.size() > kLengths.size() && f.name.ends_with(kLengths) && f.dtype == DType::i64 &&
                            f.shape.empty() && find(f.name.substr(0, f.name.size() - kLengths.size())) >= 0;
    if (is_lengths) continue;  // part of its values' field
    const std::int64_t lengths = find(f.name + std::string(kLengths));
    if (f.max_bytes > 0) {
      sources.push_back({i, -1, true});
      out.push_back({f.name, "bytes", {}, ""});
    } else if (lengths >= 0) {
      if (f.dtype != DType::u8 || f.shape.size() != 1)
        throw Error("field '" + f.name + "' has a variable length of " + std::string(dtype_name(f.dtype)) +
                    " rows; shards hold variable-length bytes and str only");
      sources.push_back({i, lengths, false});
      out.push_back({f.name, "bytes", {}, ""});
    } else {
      sources.push_back({i, -1, false});
      out.push_back({f.name, std::string(dtype_name(f.dtype)), f.shape, ""});
    }
  }
  return out;
}

BatchWriter::BatchWriter(const std::vector<FieldSpec>& fields, ShardWriterOptions out)
    : writer_(with_fields(std::move(out), describe(fields, sources_))),
      skip_rows_(writer_.resume_row()),
      values_(sources_.size()) {}

void BatchWriter::prepare(Options& options) const {
  options.epochs = 1;
  options.ordered = true;  // the shards follow the plan, whatever the workers' speeds
  options.resume.reset();
  if (writer_.shards_kept() == 0) return;
  LoaderState state = LoaderState::start_of(options);
  state.epoch = 0;
  state.batch = writer_.resume_batch();
  options.resume = state;
}

void BatchWriter::write(const Batch& batch) {
  const std::size_t n = batch.size();
  const auto ids = batch.sample_ids();
  std::vector<FieldView> views;
  views.reserve(batch.field_count());
  for (std::size_t f = 0; f < batch.field_count(); ++f) views.push_back(batch.field(f));
  for (std::size_t row = skip_rows_; row < n; ++row) {
    for (std::size_t k = 0; k < sources_.size(); ++k) {
      const Source& s = sources_[k];
      const FieldView& v = views[s.field];
      const std::size_t row_bytes = v.nbytes / n;
      const auto* base = static_cast<const std::byte*>(v.data) + row * row_bytes;
      if (s.max_bytes) {
        values_[k] = field_bytes(v, row);
      } else if (s.lengths >= 0) {
        std::int64_t length;
        std::memcpy(&length, static_cast<const std::byte*>(views[s.lengths].data) + row * 8, 8);
        if (length < 0 || static_cast<std::uint64_t>(length) > row_bytes)
          throw Error("field '" + std::string(v.name) + "', sample " + std::to_string(ids[row]) + ": length " +
                      std::to_string(length) + " does not fit its row of " + std::to_string(row_bytes) + " bytes");
        values_[k] = {base, static_cast<std::size_t>(length)};
      } else {
        values_[k] = {base, row_bytes};
      }
    }
    const bool last = row + 1 == n;
    writer_.add(ids[row], values_, last ? batch.index() + 1 : batch.index(), last ? 0 : row + 1);
    ++written_;
  }
  skip_rows_ = 0;
}

}  // namespace sluice::io
