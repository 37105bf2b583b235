#include "verify_command.h"

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "dataset_report.h"
#include "paths.h"

#include "sluice/error.h"
#include "sluice/record.h"
#include "sluice/remote/url.h"

namespace sluice::cli {

namespace {
constexpr const char* kHelp = R"(usage: sluice verify A.jsonl B.jsonl
       sluice verify --global 'A_*.jsonl' 'B_*.jsonl'
       sluice verify DIR

DIR: a dataset written by `sluice write`: checks every shard its manifest.json
lists (size and xxh3 checksum) and names each one that does not match, and
each shard-like file in DIR it does not list (*.tar, *.tfrecord, *.idx,
shard-*: a reader's DIR/*.tar would read it too); exit status 1 when one does
not match, a file is not listed, or the conversion is not complete.

Compares two run records (written by `sluice run --record FILE`) batch by
batch, after ordering both by (epoch, batch), and says whether the two runs saw
identical data. Otherwise names the first batch that differs and how: its
order, its samples, or the content of a field (xxHash64 digests).

--global compares two runs by global step, whatever their world sizes: each
side is a glob (quoted), a directory (its *.jsonl) or one file, holding the
records of every rank of a run and of the runs that resumed it. Per (epoch,
step) the samples of all ranks must be the same (as a multiset) and so must
each sample's content (its per-sample digest; records from before these are
compared by samples only). Names the first global step that differs.

exit status: 0 identical, 1 different, 2 usage or read error
)";
}  // namespace

int verify_command(int argc, char** argv) {
  if (argc == 2 && (std::string_view(argv[1]) == "-h" || std::string_view(argv[1]) == "--help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  for (int i = 1; i < argc; ++i) {
    if (!remote::is_remote(argv[i])) continue;
    std::fprintf(stderr,
                 "sluice verify: %s: a URL; verify reads local files and folders: copy what it names here first "
                 "(a dataset: aws s3 cp --recursive, or wget -r for http), then verify the copy. A pipeline reading "
                 "a written dataset by its URL checks each shard against the manifest beside it as it downloads "
                 "it.\n",
                 argv[i]);
    return 2;
  }
  if (argc == 2 && is_written_dataset(argv[1])) {
    try {
      return verify_dataset(argv[1]);
    } catch (const Error& e) {
      std::fprintf(stderr, "sluice verify: %s\n", e.what());
      return 2;
    }
  }
  const bool global = argc == 4 && std::string_view(argv[1]) == "--global";
  if (argc != 3 && !global) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  try {
    VerifyResult r = global ? verify_records_global(expand_paths(argv[2], ".jsonl"), expand_paths(argv[3], ".jsonl"))
                            : verify_records(argv[1], argv[2]);
    for (const std::string& note : r.notes) std::printf("note: %s\n", note.c_str());
    std::printf("%s\n", r.message.c_str());
    return r.identical ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "sluice verify: %s\n", e.what());
    return 2;
  }
}

}  // namespace sluice::cli
