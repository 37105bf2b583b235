// sluice/io/tar.h: WebDataset tar shards with random access.
//
// WebDataset layout: consecutive members sharing a key form one sample; the
// key is the member path up to the first '.' of its file name, the rest is the
// field name ("data/0.txt" -> key "data/0", field "txt"; "a/x.seg.png" -> key
// "a/x", field "seg.png"). Directories and other non-file members are ignored;
// POSIX (pax) and GNU long names are honoured.
//
// TarSource indexes uncompressed shards by reading their headers only (each
// header's checksum is verified; scan_tar in tar_index.h), or takes each
// shard's index as given (a sidecar read beside a remote shard), then a sample
// is one read spanning its members. Gzip-compressed shards cannot be read at
// random offsets: the constructor refuses them and names TarStream
// (sluice/io/tar_stream.h).
//
// Thread safety: immutable after construction (see record_source.h).
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/io/skip_log.h"
#include "sluice/io/record_source.h"
#include "sluice/io/tar_index.h"

namespace sluice::io {

struct SLUICE_API TarOptions {
  // fail: a corrupt header or a truncated member throws, naming file and byte
  // offset. skip: the shard is indexed up to that point; noted in index_skips().
  OnError on_error = OnError::fail;
};

class SLUICE_API TarSource final : public RecordSource {
 public:
  // Scans every shard. Throws sluice::Error for a missing shard, or a corrupt
  // one under on_error = fail.
  explicit TarSource(std::vector<std::string> shards, TarOptions options = {});
  // With every shard's index given (indexes[i] for shards[i]): touches no
  // shard, which may not exist yet (a remote shard fetched later into the
  // node cache). A sample read past a shard's actual end fails in decode.
  TarSource(std::vector<std::string> shards, std::vector<TarIndex> indexes, TarOptions options);

  std::string_view format() const override { return "tar"; }
  std::uint64_t size() const override { return samples_.size(); }
  const std::vector<std::string>& files() const override { return shards_; }
  SampleLocation locate(std::uint64_t id) const override;
  void decode(const SampleLocation& where, std::span<const std::byte> raw,
              Sample& out) const override;

  const SkipLog& index_skips() const { return index_skips_; }

 private:
  struct Member {
    std::uint64_t data_offset, size;
    std::uint32_t field;  // index into names_
  };
  struct SampleEntry {
    std::uint32_t shard;
    std::uint32_t key;            // index into names_
    std::uint64_t record;         // sample number within the shard
    std::uint32_t first_member;   // members_[first_member, first_member + member_count)
    std::uint32_t member_count;
  };
  void add_shard(std::uint32_t shard, TarIndex index);

  std::vector<std::string> shards_;
  TarOptions options_;
  std::vector<std::string> names_;  // keys and field names; stable storage for views
  std::vector<Member> members_;
  std::vector<SampleEntry> samples_;
  SkipLog index_skips_;
};

}  // namespace sluice::io
