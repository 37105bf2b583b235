// inspect_folder.h: `sluice inspect DIR` on an image folder.
#pragma once

#include <string>

namespace sluice::cli {

// Prints what sluice.folders(root) reads: the classes (ROOT's sub-folders, in
// label order) with their file counts and the total, the files that are
// neither JPEG nor PNG by their first bytes (which sluice.image would refuse),
// the first ten of them by name, and the files directly in ROOT, which belong
// to no class and are left out. Throws sluice::Error when ROOT holds no class
// folder or cannot be read.
void inspect_folder(const std::string& root);

}  // namespace sluice::cli
