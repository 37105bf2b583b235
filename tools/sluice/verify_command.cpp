#include "verify_command.h"

#include <cstdio>
#include <string_view>

#include "sluice/error.h"
#include "sluice/record.h"

namespace sluice::cli {

namespace {
constexpr const char* kHelp = R"(usage: sluice verify A.jsonl B.jsonl

Compares two run records (written by `sluice run --record FILE`) batch by
batch, after ordering both by (epoch, batch), and says whether the two runs saw
identical data. Otherwise names the first batch that differs and how: its
order, its samples, or the content of a field (xxHash64 digests).

exit status: 0 identical, 1 different, 2 usage or read error
)";
}  // namespace

int verify_command(int argc, char** argv) {
  if (argc == 2 && (std::string_view(argv[1]) == "-h" || std::string_view(argv[1]) == "--help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (argc != 3) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  try {
    VerifyResult r = verify_records(argv[1], argv[2]);
    std::printf("%s\n", r.message.c_str());
    return r.identical ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "sluice verify: %s\n", e.what());
    return 2;
  }
}

}  // namespace sluice::cli
