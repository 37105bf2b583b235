// sluice/io/tar_index.h: what one scan of a WebDataset tar shard learns (its
// samples' keys, and each member's field name, data offset and size), and the
// sidecar file FILE.tar.idx that keeps it.
//
// TarSource (tar.h) is built from one TarIndex per shard: scanned from the
// local shard (scan_tar), or read from a sidecar published beside a remote
// shard (URL.idx), so that the shard itself is fetched only when a worker
// needs it. `sluice index FILE.tar` and `sluice write --format tar` write the
// sidecar. A local TarSource always scans its shards: it never reads one.
//
// The sidecar is text, strings length-prefixed (a key or field may hold any
// byte but NUL), one entry a line:
//
//   sluice tar index 1
//   shard_bytes 30720
//   samples 2
//   s 6:data/0 2              a sample: its key, then its member count
//   m 3:txt 512 11            a member: field, data offset, data size
//   m 3:cls 1536 1
//   s 6:data/1 1
//   m 3:txt 2560 11
//   end
//
// read_tar_index checks all of it: the magic and version, every count and
// number, a sample has at least one member, members lie in the order of the
// shard without overlap, at or after byte 512, within shard_bytes, and the
// file ends right after "end". Anything else (a truncated or garbage file)
// is a sluice::Error naming the index file and the byte where it goes wrong;
// it never yields an offset outside the shard. Its allocation is bounded by
// the file's size.
//
// Thread safety: the functions are reentrant.
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/io/skip_log.h"

namespace sluice::io {

struct SLUICE_API TarIndexMember {
  std::string field;            // "txt" of "data/0.txt"; "" for a name without '.'
  std::uint64_t offset = 0;     // of the data, in the shard
  std::uint64_t size = 0;
};

struct SLUICE_API TarIndexSample {
  std::string key;                      // "data/0"
  std::vector<TarIndexMember> members;  // at least one, in shard order
};

struct SLUICE_API TarIndex {
  std::uint64_t shard_bytes = 0;  // the shard's size, end-of-archive blocks included
  std::vector<TarIndexSample> samples;
};

// Reads a shard's headers (each checksum verified; pax and GNU long names
// honoured; consecutive members sharing a key grouped into one sample).
// Throws sluice::Error naming the file and byte offset of a corrupt header, a
// truncated member or missing end-of-archive blocks, and for a gzip shard;
// with on_error = skip, stops there instead, appending the reason to `skips`
// with the id of the shard's next sample (counted from 0 in this shard).
SLUICE_API TarIndex scan_tar(const std::string& path, OnError on_error = OnError::fail, SkipLog* skips = nullptr);

// Where `index` (a published sidecar) does not describe `scanned` (scan_tar
// of the shard it was published for): "" when they agree in every sample's
// key and every member's field, offset and size, else the first difference,
// as "sample N: ...". A shard rewritten with the same size (samples in
// another order, fixed-size samples regenerated) would otherwise give keys
// and fields that are not its samples'.
SLUICE_API std::string tar_index_mismatch(const TarIndex& index, const TarIndex& scanned);

// FILE.idx: beside the shard, as a remote reader looks for it.
SLUICE_API std::string tar_index_path(const std::string& shard);

// Writes the sidecar atomically (temp file + rename). Throws sluice::Error.
SLUICE_API void write_tar_index(const std::string& index_path, const TarIndex& index);

// Reads and checks a sidecar (see above). Throws sluice::Error naming it, or
// `name` when given (the URL a cached copy came from).
SLUICE_API TarIndex read_tar_index(const std::string& index_path, const std::string& name = "");

// The same, from its bytes; `name` names it in errors (the fuzz target's entry).
SLUICE_API TarIndex parse_tar_index(std::string_view text, const std::string& name);

}  // namespace sluice::io
