// sluice/io/file_source.h: a data set of whole files.
//
// A sample is one file's bytes (field "data") plus its path and label. Three
// ways to name the files:
//   from_list     explicit paths, label -1;
//   from_glob     a pattern with `*`, `?`, `[...]` and recursive `**`, label -1;
//   from_folders  an ImageNet-style tree ROOT/CLASS/.../FILE: classes are the
//                 sorted sub-folder names of ROOT, the label is the class index.
// Sizes are not recorded: a file is read whole, at whatever size it has when
// read. A missing file is reported when it is read (error naming the path).
//
// Thread safety: immutable after construction (see record_source.h).
#pragma once

#include "sluice/export.h"

#include <memory>
#include <string>
#include <vector>

#include "sluice/io/record_source.h"

namespace sluice::io {

struct SLUICE_API FolderOptions {
  // Keep only files whose lower-cased extension is listed ("jpg", "png");
  // empty keeps every regular file. Names starting with '.' are always left out.
  std::vector<std::string> extensions;
};

class SLUICE_API FileSource final : public RecordSource {
 public:
  static std::shared_ptr<FileSource> from_list(std::vector<std::string> paths);
  // Throws sluice::Error when nothing matches.
  static std::shared_ptr<FileSource> from_glob(const std::string& pattern);
  // Throws sluice::Error when ROOT is not a directory or holds no class folders.
  static std::shared_ptr<FileSource> from_folders(const std::string& root,
                                                  const FolderOptions& options = {});

  std::string_view format() const override { return "files"; }
  std::uint64_t size() const override { return paths_.size(); }
  const std::vector<std::string>& files() const override { return paths_; }
  SampleLocation locate(std::uint64_t id) const override;
  void decode(const SampleLocation& where, std::span<const std::byte> raw,
              Sample& out) const override;

  // Class names by label (from_folders only; empty otherwise).
  const std::vector<std::string>& classes() const { return classes_; }
  std::int64_t label(std::uint64_t id) const { return labels_.empty() ? -1 : labels_[id]; }

 private:
  FileSource(std::vector<std::string> paths, std::vector<std::int32_t> labels,
             std::vector<std::string> classes);
  std::vector<std::string> paths_;
  std::vector<std::int32_t> labels_;  // empty, or one per path
  std::vector<std::string> classes_;
};

}  // namespace sluice::io
