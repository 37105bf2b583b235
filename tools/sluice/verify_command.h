// verify_command.h: `sluice verify A.jsonl B.jsonl`.
#pragma once

namespace sluice::cli {

// argv[0] is "verify". Exit status: 0 identical, 1 different, 2 usage or read error.
int verify_command(int argc, char** argv);

}  // namespace sluice::cli
