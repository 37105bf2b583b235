#include <array>
#include <cstring>

#include "file_util.h"
#include "sluice/error.h"
#include "sluice/io/manifest.h"
#include "sluice/io/tar.h"
#include "tar_format.h"

namespace sluice::io {

TarSource::TarSource(std::vector<std::string> shards, TarOptions options)
    : shards_(std::move(shards)), options_(options) {
  for (std::uint32_t s = 0; s < shards_.size(); ++s) index_shard(s);
}

void TarSource::index_shard(std::uint32_t shard) {
  const std::string& path = shards_[shard];
  verify_listed_shard(path);  // a written dataset's shard: its checksum first (manifest.h)
  detail::Fd fd = detail::open_read(path);
  const std::uint64_t size = detail::file_size(fd.get(), path);
  posix_fadvise(fd.get(), 0, 0, POSIX_FADV_RANDOM);

  std::array<std::byte, detail::kTarBlock> block;
  std::uint64_t offset = 0;
  std::uint64_t record = 0;
  std::string next_path;            // from a pax or GNU long-name entry
  std::string current_key;          // key of the sample being grouped
  bool open_sample = false;
  auto stop = [&](const std::string& why) {
    std::string msg = detail::at_offset(path, offset, why);
    if (options_.on_error == OnError::fail) throw Error(msg);
    index_skips_.add(samples_.size(), msg);
  };
  if (size >= 2 && detail::pread_full(fd.get(), std::span(block).first(2), 0, path) == 2 &&
      block[0] == std::byte{0x1f} && block[1] == std::byte{0x8b})
    throw Error(path + ": gzip-compressed tar cannot be read at random offsets; read it with "
                       "TarStream (streaming), or decompress it to a plain .tar");

  bool ended = false;  // by the end-of-archive blocks, as every tar writer ends one
  while (offset < size) {
    if (detail::pread_full(fd.get(), block, offset, path) < block.size()) {
      stop("truncated tar header (" + std::to_string(size - offset) + " bytes left)");
      break;
    }
    detail::TarHeader h;
    std::string why;
    if (!detail::parse_tar_header(block, h, why)) {
      stop(why);
      break;
    }
    if (h.entry == detail::TarEntry::end) {
      ended = true;
      break;
    }
    const std::uint64_t data = offset + detail::kTarBlock;
    if (h.size > size || data + h.size > size) {
      stop("truncated tar member " + h.path + ": " + std::to_string(h.size) + " bytes declared, " +
           std::to_string(size - data) + " left");
      break;
    }
    if (h.entry == detail::TarEntry::pax || h.entry == detail::TarEntry::gnu_longname) {
      std::string text(h.size, '\0');
      detail::pread_full(fd.get(), std::as_writable_bytes(std::span(text)), data, path);
      next_path = h.entry == detail::TarEntry::pax ? detail::pax_path(text)
                                                   : std::string(text.c_str());
    } else if (h.entry == detail::TarEntry::file) {
      const std::string member = next_path.empty() ? h.path : next_path;
      next_path.clear();
      std::string_view key, field;
      detail::webdataset_split(member, key, field);
      if (!open_sample || key != current_key) {
        current_key = key;
        names_.emplace_back(key);
        samples_.push_back({shard, static_cast<std::uint32_t>(names_.size() - 1), record++,
                            static_cast<std::uint32_t>(members_.size()), 0});
        open_sample = true;
      }
      names_.emplace_back(field);
      members_.push_back({data, h.size, static_cast<std::uint32_t>(names_.size() - 1)});
      ++samples_.back().member_count;
    } else {
      next_path.clear();
    }
    offset = data + detail::tar_padded(h.size);
  }
  // Cut at a member boundary, the archive would look whole but for its end
  // blocks (GNU tar: "Unexpected EOF in archive"), and its last sample could
  // lack members.
  if (!ended && offset >= size) {
    stop("the archive ends without its end-of-archive blocks after " + std::to_string(samples_.size()) +
         " samples: it was cut short");
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
