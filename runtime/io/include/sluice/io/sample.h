// sluice/io/sample.h: one sample as the readers hand it out.
//
// A Sample is a view: its path, key, field names and bytes point into storage
// owned by whoever filled it (a RecordSource, an AsyncReader slot, a stream),
// and stay valid only as long as that owner's contract says (typically until
// the next call that fills a Sample). Copy the bytes to keep them.
//
// Thread safety: plain data; no internal synchronisation.
#pragma once

#include "sluice/export.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::io {

// One named part of a sample: "data" for a file or a TFRecord record; the
// member's extension ("jpg", "cls", "txt.gz") for a WebDataset tar sample.
struct SLUICE_API Field {
  std::string_view name;
  std::span<const std::byte> bytes;
};

struct SLUICE_API Sample {
  std::uint64_t id = 0;          // index in its source (random access) or read order (streams)
  std::string_view path;         // the file the sample came from
  std::string_view key;          // WebDataset sample key ("data/0"); empty for other formats
  std::int64_t label = -1;       // class index for ImageNet-style folders; -1 when none
  std::uint64_t record = 0;      // record, sample or row number within `path`
  std::uint64_t offset = 0;      // byte offset of the sample's first byte in `path`
  std::vector<Field> fields;
  bool skipped = false;          // on_error = skip: the sample was bad and has no fields
  std::string error;             // why it was skipped (names file and offset or record)
  // Bytes a decoder had to rewrite (unescaped JSON strings); fields may point
  // here. Its capacity is kept from one sample to the next.
  std::vector<std::byte> storage;

  // Starts the sample over as a good one with this metadata and no field yet
  // (the field list keeps its capacity, so refilling allocates nothing).
  void reset(std::uint64_t id_, std::string_view path_, std::string_view key_, std::int64_t label_,
             std::uint64_t record_, std::uint64_t offset_) {
    id = id_;
    path = path_;
    key = key_;
    label = label_;
    record = record_;
    offset = offset_;
    fields.clear();
    skipped = false;
    error.clear();
  }

  // The field called `name`, or nullptr.
  const Field* field(std::string_view name) const {
    for (const Field& f : fields)
      if (f.name == name) return &f;
    return nullptr;
  }
};

// Where a sample's bytes lie in its file. Computed from an index, without I/O.
struct SLUICE_API SampleLocation {
  std::uint64_t id = 0;
  std::uint32_t file = 0;        // index into RecordSource::files()
  std::uint64_t offset = 0;      // first byte to read
  std::uint64_t length = 0;      // bytes to read (ignored when whole_file)
  bool whole_file = false;       // read the whole file, whatever its size is when read
};

}  // namespace sluice::io
