// sluice/io/tar_stream.h: WebDataset tar shards read front to back, plain or
// gzip-compressed (zlib detects which), with the sample grouping of tar.h.
//
// Shard order, partition among workers and the shuffle buffer follow
// StreamOptions. A corrupt header or a truncated member loses the rest of its
// shard: on_error = fail throws sluice::Error naming file and byte offset (in
// the uncompressed stream); skip notes it in skips() and goes on. A shard
// that a manifest beside it lists (manifest.h) is checked against its size
// and checksum when first opened: a corrupt one is an error naming it
// (on_error = fail), or is skipped whole and noted (skip).
//
// Thread safety: none (see record_stream.h).
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sluice/io/record_stream.h"

namespace sluice::io {

class SLUICE_API TarStream final : public RecordStream {
 public:
  TarStream(std::vector<std::string> shards, StreamOptions options = {});
  ~TarStream() override;

  void reset(std::uint64_t epoch) override;
  bool next(Sample& out) override;
  const SkipLog& skips() const override { return skips_; }

 private:
  struct Member {
    std::string field;
    std::vector<std::byte> bytes;
  };
  struct Group {  // one sample: its members and where it came from
    std::string key;
    std::vector<Member> members;
    std::uint32_t shard = 0;
    std::uint64_t record = 0, offset = 0, id = 0;
  };
  bool read_group(Group& group);          // next sample of the epoch; false at the end
  bool read_member(std::string& key, Member& member, std::uint64_t& offset);
  bool open_next_shard();
  void close_shard();

  std::vector<std::string> shards_;
  StreamOptions options_;
  std::vector<std::uint32_t> order_;
  std::size_t next_shard_ = 0;
  void* gz_ = nullptr;                    // gzFile of the open shard
  std::uint32_t shard_ = 0;
  std::uint64_t position_ = 0;            // uncompressed offset in the open shard
  std::uint64_t record_ = 0;
  std::uint64_t read_count_ = 0;
  bool have_lookahead_ = false;           // a member read ahead, starting the next sample
  std::string lookahead_key_;
  Member lookahead_;
  std::uint64_t lookahead_offset_ = 0;
  std::vector<Group> buffer_;
  Group current_;
  std::mt19937_64 rng_;
  SkipLog skips_;
};

}  // namespace sluice::io
