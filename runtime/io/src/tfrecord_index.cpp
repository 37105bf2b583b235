// Building, writing and loading TFRecord offset indexes (see sluice/io/tfrecord.h).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "file_util.h"
#include "sluice/error.h"
#include "sluice/io/tfrecord.h"
#include "tfrecord_format.h"

namespace sluice::io {

TFRecordIndex scan_tfrecord(const std::string& path, OnError on_error, SkipLog* skips) {
  detail::Fd fd = detail::open_read(path);
  const std::uint64_t size = detail::file_size(fd.get(), path);
  posix_fadvise(fd.get(), 0, 0, POSIX_FADV_RANDOM);  // headers only: no read-ahead of the data
  TFRecordIndex index;
  std::uint64_t offset = 0;
  auto stop = [&](const std::string& why) {
    std::string msg = detail::record_at(path, index.offsets.size(), offset, why);
    if (on_error == OnError::fail) throw Error(msg);
    if (skips) skips->add(index.offsets.size(), msg);
  };
  while (offset < size) {
    std::array<std::byte, detail::kTFRecordHeader> header;
    if (detail::pread_full(fd.get(), header, offset, path) < header.size()) {
      stop("truncated header (" + std::to_string(size - offset) + " bytes left, 12 needed)");
      break;
    }
    std::string why;
    std::optional<std::uint64_t> length = detail::tfrecord_length(header, &why);
    if (!length) {
      stop(why);
      break;
    }
    const std::uint64_t left = size - std::min(size, offset + detail::kTFRecordHeader);
    if (auto truncated = detail::tfrecord_truncated(*length, left)) {
      stop(*truncated);
      break;
    }
    index.offsets.push_back(offset);
    offset += *length + detail::kTFRecordOverhead;
  }
  index.offsets.push_back(offset);  // the end of the last good record
  return index;
}

std::string tfrecord_index_path(const std::string& shard, const std::string& index_dir) {
  return detail::sidecar_path(shard, index_dir, ".idx");
}

void write_tfrecord_index(const std::string& index_path, const TFRecordIndex& index) {
  detail::write_atomically(index_path, [&](std::ostream& out) {
    for (std::uint64_t i = 0; i < index.records(); ++i)
      out << index.offsets[i] << ' ' << index.offsets[i + 1] - index.offsets[i] << '\n';
  });
}

std::optional<TFRecordIndex> read_tfrecord_index(const std::string& index_path) {
  std::ifstream in(index_path);
  if (!in) return std::nullopt;
  TFRecordIndex index;
  std::uint64_t offset, frame, expected = 0;
  while (in >> offset >> frame) {
    if (offset != expected || frame < detail::kTFRecordOverhead) return std::nullopt;
    index.offsets.push_back(offset);
    expected = offset + frame;
  }
  if (!in.eof()) return std::nullopt;
  index.offsets.push_back(expected);
  return index;
}

std::optional<TFRecordIndex> load_tfrecord_index(const std::string& index_path,
                                                 const std::string& shard) {
  struct stat ss;
  if (!detail::not_older(index_path, shard) || ::stat(shard.c_str(), &ss) != 0) return std::nullopt;
  std::optional<TFRecordIndex> index = read_tfrecord_index(index_path);
  if (!index || index->offsets.back() != static_cast<std::uint64_t>(ss.st_size)) return std::nullopt;
  return index;
}

}  // namespace sluice::io
