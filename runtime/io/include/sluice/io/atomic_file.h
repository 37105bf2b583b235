// sluice/io/atomic_file.h: a small file replaced whole or not at all.
//
//   sluice::io::write_file_atomically("run/state.json", state.to_json());
//
// The text goes to PATH.tmpPID.N (N counts the process's writes; files of
// that form left by dead processes are removed first), is flushed to the
// disk, and is renamed over PATH, whose folder is then flushed too: a reader,
// and PATH after a crash, hold the old file or the whole new one, never a
// part. A failure before the rename (a full disk, a folder that is not one)
// throws sluice::Error "cannot write PATH...: reason" and leaves PATH as it
// was and no temporary file; a failure to flush the folder after it throws
// too, PATH then holding the new file. For what users keep: a manifest, a
// saved state.
//
// Thread safety: reentrant; concurrent writers of one PATH, threads or
// processes, each rename a whole file of their own, and the last rename wins.
#pragma once

#include "sluice/export.h"

#include <string>
#include <string_view>

namespace sluice::io {

SLUICE_API void write_file_atomically(const std::string& path, std::string_view text);

// Whether the file name `name` is a temporary of write_file_atomically for
// the file named `of` (OF.tmp, then digits and dots): what a writer killed
// mid-write leaves beside OF.
SLUICE_API bool is_atomic_temporary(std::string_view name, std::string_view of);

}  // namespace sluice::io
