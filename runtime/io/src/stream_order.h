// Internal: which shards a stream reads in an epoch, and in what order.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <vector>

#include "sluice/io/record_stream.h"

namespace sluice::io::detail {

// The shards of [0, n) this reader takes in `epoch`: the epoch's order
// (shuffled by (seed, epoch) when options.shuffle_shards), keeping positions p
// with p % shard_count == shard_index. Throws sluice::Error for a bad partition.
std::vector<std::uint32_t> stream_shards(std::uint32_t n, const StreamOptions& options,
                                         std::uint64_t epoch);

// The seed of the epoch's record shuffle for this reader.
std::uint64_t stream_seed(const StreamOptions& options, std::uint64_t epoch);

}  // namespace sluice::io::detail
