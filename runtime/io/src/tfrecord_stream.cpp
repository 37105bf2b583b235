#include "sluice/io/tfrecord_stream.h"

#include <algorithm>
#include <cstring>

#include "sequential_file.h"
#include "sluice/error.h"
#include "sluice/io/manifest.h"
#include "stream_order.h"
#include "tfrecord_format.h"

namespace sluice::io {

TFRecordStream::TFRecordStream(std::vector<std::string> shards, StreamOptions options)
    : shards_(std::move(shards)), options_(options),
      file_(std::make_unique<detail::SequentialFile>()) {
  reset(0);
}

TFRecordStream::~TFRecordStream() = default;

void TFRecordStream::reset(std::uint64_t epoch) {
  order_ = detail::stream_shards(static_cast<std::uint32_t>(shards_.size()), options_, epoch);
  rng_.seed(detail::stream_seed(options_, epoch));
  next_shard_ = 0;
  file_->close();
  read_count_ = 0;
  buffer_.clear();
  skips_.clear();
}

bool TFRecordStream::open_next_shard() {
  file_->close();
  while (next_shard_ < order_.size()) {
    shard_ = order_[next_shard_++];
    record_ = 0;
    try {
      verify_listed_shard(shards_[shard_]);  // a written dataset's shard: its checksum first (manifest.h)
      file_->open(shards_[shard_]);
      return true;
    } catch (const Error& e) {
      if (options_.on_error == OnError::fail) throw;
      skips_.add(read_count_, e.what());
    }
  }
  return false;
}

bool TFRecordStream::read_record(std::span<const std::byte>& data, Held& meta) {
  for (;;) {
    if (!file_->is_open() && !open_next_shard()) return false;
    detail::SequentialFile& f = *file_;
    const std::uint64_t offset = f.position();
    auto bad = [&](const std::string& why, bool rest_of_shard) {
      std::string msg = detail::record_at(f.path(), record_, offset, why);
      if (options_.on_error == OnError::fail) throw Error(msg);
      skips_.add(read_count_++, msg);
      ++record_;
      if (rest_of_shard) file_->close();
    };
    std::span<const std::byte> header = f.take(detail::kTFRecordHeader);
    if (header.empty()) {  // a clean end of shard
      file_->close();
      continue;
    }
    if (header.size() < detail::kTFRecordHeader) {
      bad("truncated header (" + std::to_string(header.size()) + " of 12 bytes)", true);
      continue;
    }
    std::uint64_t length;
    if (options_.verify_crc) {
      std::string why;
      std::optional<std::uint64_t> l =
          detail::tfrecord_length(header.first<detail::kTFRecordHeader>(), &why);
      if (!l) {
        bad(why, true);
        continue;
      }
      length = *l;
    } else {
      std::memcpy(&length, header.data(), 8);
    }
    // Checked against the file's size first, so a corrupt length never sizes a
    // read; then against what the read got, in case the file shrank.
    const std::uint64_t need = length + detail::kTFRecordFooter;
    const std::uint64_t left = f.size() - std::min(f.size(), f.position());
    std::optional<std::string> truncated = detail::tfrecord_truncated(length, left);
    std::span<const std::byte> body;
    if (!truncated) {
      body = f.take(static_cast<std::size_t>(need));
      if (body.size() < need) truncated = detail::tfrecord_truncated(length, body.size());
    }
    if (truncated) {
      bad(*truncated, true);
      continue;
    }
    data = body.first(static_cast<std::size_t>(length));
    if (options_.verify_crc) {
      std::string why;
      if (!detail::tfrecord_data_ok(data, body.last<detail::kTFRecordFooter>(), &why)) {
        bad(why, false);
        continue;
      }
    }
    meta.shard = shard_;
    meta.record = record_++;
    meta.offset = offset;
    meta.id = read_count_++;
    return true;
  }
}

void TFRecordStream::fill(Sample& out, std::span<const std::byte> data, const Held& meta) const {
  out.reset(meta.id, shards_[meta.shard], {}, -1, meta.record, meta.offset);
  out.fields.push_back({"data", data});
}

bool TFRecordStream::next(Sample& out) {
  std::span<const std::byte> data;
  if (options_.shuffle_buffer == 0) {  // file order: hand out the bytes in place
    if (!read_record(data, current_)) return false;
    fill(out, data, current_);
    return true;
  }
  // Keep the buffer full; then hand out a random one and put the next record in its place.
  while (buffer_.size() < options_.shuffle_buffer) {
    Held held;
    if (!read_record(data, held)) break;
    held.bytes.assign(data.begin(), data.end());
    buffer_.push_back(std::move(held));
  }
  if (buffer_.empty()) return false;
  std::uniform_int_distribution<std::size_t> pick(0, buffer_.size() - 1);
  const std::size_t j = pick(rng_);
  std::swap(current_, buffer_[j]);
  if (read_record(data, buffer_[j])) {
    buffer_[j].bytes.assign(data.begin(), data.end());
  } else {
    buffer_[j] = std::move(buffer_.back());
    buffer_.pop_back();
  }
  fill(out, current_.bytes, current_);
  return true;
}

}  // namespace sluice::io
