#include "file_util.h"
#include "sluice/error.h"
#include "sluice/io/manifest.h"
#include "sluice/io/tar.h"

namespace sluice::io {

TarSource::TarSource(std::vector<std::string> shards, TarOptions options)
    : shards_(std::move(shards)), options_(options) {
  for (std::uint32_t s = 0; s < shards_.size(); ++s) {
    verify_listed_shard(shards_[s]);  // a written dataset's shard: its checksum first (manifest.h)
    SkipLog skips;  // ids counted within the shard
    TarIndex index = scan_tar(shards_[s], options_.on_error, &skips);
    for (const SkippedSample& skipped : skips.entries()) index_skips_.add(samples_.size() + skipped.id, skipped.reason);
    add_shard(s, std::move(index));
  }
}

TarSource::TarSource(std::vector<std::string> shards, std::vector<TarIndex> indexes, TarOptions options)
    : shards_(std::move(shards)), options_(options) {
  if (indexes.size() != shards_.size())
    throw Error("TarSource: " + std::to_string(shards_.size()) + " shards but " + std::to_string(indexes.size()) +
                " indexes");
  for (std::uint32_t s = 0; s < shards_.size(); ++s) add_shard(s, std::move(indexes[s]));
}

void TarSource::add_shard(std::uint32_t shard, TarIndex index) {
  std::uint64_t record = 0;
  for (TarIndexSample& sample : index.samples) {
    names_.push_back(std::move(sample.key));
    samples_.push_back({shard, static_cast<std::uint32_t>(names_.size() - 1), record++,
                        static_cast<std::uint32_t>(members_.size()), 0});
    for (TarIndexMember& member : sample.members) {
      names_.push_back(std::move(member.field));
      members_.push_back({member.offset, member.size, static_cast<std::uint32_t>(names_.size() - 1)});
      ++samples_.back().member_count;
    }
  }
}

SampleLocation TarSource::locate(std::uint64_t id) const {
  const SampleEntry& s = samples_[id];
  const Member& first = members_[s.first_member];
  const Member& last = members_[s.first_member + s.member_count - 1];
  SampleLocation where;
  where.id = id;
  where.file = s.shard;
  where.offset = first.data_offset;
  where.length = last.data_offset + last.size - first.data_offset;
  return where;
}

void TarSource::decode(const SampleLocation& where, std::span<const std::byte> raw,
                       Sample& out) const {
  const SampleEntry& s = samples_[where.id];
  out.reset(where.id, shards_[s.shard], names_[s.key], -1, s.record, where.offset);
  for (std::uint32_t m = s.first_member; m < s.first_member + s.member_count; ++m) {
    const Member& member = members_[m];
    const std::uint64_t at = member.data_offset - where.offset;
    if (at + member.size > raw.size())
      throw Error(detail::at_offset(shards_[s.shard], member.data_offset,
                                    "tar member extends past the bytes read"));
    out.fields.push_back({names_[member.field], raw.subspan(at, member.size)});
  }
}

}  // namespace sluice::io
