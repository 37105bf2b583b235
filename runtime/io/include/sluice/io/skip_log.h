// sluice/io/skip_log.h: the record of samples a reader skipped, and the
// on_error policy readers share with the runtime.
//
// Readers take sluice::OnError (sluice/options.h, where parse_on_error() reads
// its names), the runtime's own policy type: OnError::fail (the default)
// throws sluice::Error at the first bad sample, naming its file and byte offset
// or record number; OnError::skip drops the sample, notes it in a SkipLog, and
// carries on. report() gives the
// count and ids at the end of an epoch.
//
// Thread safety: SkipLog is not synchronised; each reader owns its own.
#pragma once

#include "sluice/export.h"

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/options.h"

namespace sluice::io {

struct SLUICE_API SkippedSample {
  std::uint64_t id;     // the sample's id (source index, or read order for streams)
  std::string reason;   // the error message: file and byte offset or record
};

class SLUICE_API SkipLog {
 public:
  void add(std::uint64_t id, std::string reason) { entries_.push_back({id, std::move(reason)}); }
  std::size_t count() const { return entries_.size(); }
  const std::vector<SkippedSample>& entries() const { return entries_; }
  void clear() { entries_.clear(); }

  // "skipped 2 samples: ids 4, 17" and one line per sample with its reason;
  // "skipped 0 samples" when none. At most `max_lines` reasons are listed.
  std::string report(std::size_t max_lines = 20) const;

 private:
  std::vector<SkippedSample> entries_;
};

}  // namespace sluice::io
