#include <algorithm>
#include <cstring>

#include "file_util.h"
#include "sluice/error.h"
#include "sluice/io/manifest.h"
#include "sluice/io/tfrecord.h"
#include "tfrecord_format.h"

namespace sluice::io {

TFRecordSource::TFRecordSource(std::vector<std::string> shards, TFRecordOptions options)
    : shards_(std::move(shards)), options_(std::move(options)) {
  starts_.push_back(0);
  for (const std::string& shard : shards_) {
    verify_listed_shard(shard);  // a written dataset's shard: its checksum first (manifest.h)
    const std::string index_path = tfrecord_index_path(shard, options_.index_dir);
    std::optional<TFRecordIndex> index = load_tfrecord_index(index_path, shard);
    if (!index) {
      const std::size_t skipped_before = index_skips_.count();
      index = scan_tfrecord(shard, options_.on_error, &index_skips_);
      // A shard cut short is not cached: its sidecar would hide the damage.
      if (options_.write_index && index_skips_.count() == skipped_before) {
        try {
          write_tfrecord_index(index_path, *index);
        } catch (const Error& e) {
          unsaved_indexes_.push_back(e.what());  // the index stays in memory for this run
        }
      }
    }
    starts_.push_back(starts_.back() + index->records());
    indexes_.push_back(std::move(*index));
  }
}

TFRecordSource::TFRecordSource(std::vector<std::string> shards, std::vector<TFRecordIndex> indexes,
                               TFRecordOptions options)
    : shards_(std::move(shards)), options_(std::move(options)), indexes_(std::move(indexes)) {
  if (indexes_.size() != shards_.size())
    throw Error("TFRecordSource: " + std::to_string(shards_.size()) + " shards but " +
                std::to_string(indexes_.size()) + " indexes");
  starts_.push_back(0);
  for (const TFRecordIndex& index : indexes_) starts_.push_back(starts_.back() + index.records());
}

SampleLocation TFRecordSource::locate(std::uint64_t id) const {
  auto it = std::upper_bound(starts_.begin(), starts_.end(), id);
  const auto shard = static_cast<std::size_t>(it - starts_.begin() - 1);
  const std::uint64_t r = id - starts_[shard];
  const TFRecordIndex& index = indexes_[shard];
  SampleLocation where;
  where.id = id;
  where.file = static_cast<std::uint32_t>(shard);
  where.offset = index.offsets[r];
  where.length = index.offsets[r + 1] - index.offsets[r];
  return where;
}

void TFRecordSource::decode(const SampleLocation& where, std::span<const std::byte> raw,
                            Sample& out) const {
  const std::string& path = shards_[where.file];
  const std::uint64_t record = where.id - starts_[where.file];
  auto fail = [&](const std::string& why) {
    throw Error(detail::record_at(path, record, where.offset, why));
  };
  if (raw.size() < detail::kTFRecordOverhead) fail("record shorter than its framing");
  std::uint64_t length;
  if (options_.verify_crc) {
    std::string why;
    std::optional<std::uint64_t> l =
        detail::tfrecord_length(raw.first<detail::kTFRecordHeader>(), &why);
    if (!l) fail(why);
    length = *l;
  } else {
    std::memcpy(&length, raw.data(), 8);
  }
  if (length + detail::kTFRecordOverhead != raw.size())
    fail("length " + std::to_string(length) + " disagrees with the index (frame of " +
         std::to_string(raw.size()) + " bytes); rebuild the index");
  std::span<const std::byte> data = raw.subspan(detail::kTFRecordHeader, length);
  if (options_.verify_crc) {
    std::string why;
    if (!detail::tfrecord_data_ok(data, raw.last<detail::kTFRecordFooter>(), &why)) fail(why);
  }
  out.reset(where.id, path, {}, -1, record, where.offset);
  out.fields.push_back({"data", data});
}

}  // namespace sluice::io
