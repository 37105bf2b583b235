#include "stream_order.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "sluice/error.h"

namespace sluice::io::detail {

std::uint64_t stream_seed(const StreamOptions& options, std::uint64_t epoch) {
  std::seed_seq seq{static_cast<std::uint32_t>(options.seed), static_cast<std::uint32_t>(options.seed >> 32),
                    static_cast<std::uint32_t>(epoch), static_cast<std::uint32_t>(epoch >> 32),
                    options.shard_index};
  std::uint32_t words[2];
  seq.generate(words, words + 2);
  return (std::uint64_t{words[0]} << 32) | words[1];
}

std::vector<std::uint32_t> stream_shards(std::uint32_t n, const StreamOptions& options,
                                         std::uint64_t epoch) {
  if (options.shard_count == 0 || options.shard_index >= options.shard_count)
    throw Error("stream: shard_index " + std::to_string(options.shard_index) +
                " must be below shard_count " + std::to_string(options.shard_count));
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  if (options.shuffle_shards) {
    // The same for every reader of the epoch, so the partition below is exact.
    std::mt19937_64 rng(options.seed * 0x9e3779b97f4a7c15ull + epoch);
    std::shuffle(order.begin(), order.end(), rng);
  }
  std::vector<std::uint32_t> mine;
  for (std::size_t p = options.shard_index; p < order.size(); p += options.shard_count)
    mine.push_back(order[p]);
  return mine;
}

}  // namespace sluice::io::detail
