#include "sluice/plan.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "mix64.h"
#include "sluice/error.h"

namespace sluice {
namespace {

using detail::mix64;

constexpr int kFeistelRounds = 6;

// Round r of the network: a file-local function, so that it is inlined into
// the loops (an exported member may be interposed, and is called instead).
inline std::uint64_t feistel_round(std::uint64_t half, std::uint64_t key, int r, std::uint64_t mask) {
  return mix64(half ^ key ^ (static_cast<std::uint64_t>(r) * 0x9e3779b97f4a7c15ULL)) & mask;
}

// One pass of the network over x (< 4^half_bits, as a bijection of that domain).
inline std::uint64_t encrypt(std::uint64_t x, std::uint64_t key, int half_bits, std::uint64_t mask) {
  std::uint64_t left = x >> half_bits;
  std::uint64_t right = x & mask;
  for (int r = 0; r < kFeistelRounds; ++r) {
    const std::uint64_t next = left ^ feistel_round(right, key, r, mask);
    left = right;
    right = next;
  }
  return (left << half_bits) | right;
}

constexpr std::size_t kLanes = 8;

// encrypt() of the kLanes values at x, in place, as vector code (GCC's
// vector extension): the same rounds, feistel_round's mix64 spelled out
// for a vector. Compiled twice on x86-64 (below); always inlined into each.
[[gnu::always_inline]] inline void encrypt_lanes_body(std::uint64_t* x, std::uint64_t key, int half_bits,
                                                      std::uint64_t mask) {
  using Lanes = std::uint64_t __attribute__((vector_size(kLanes * sizeof(std::uint64_t))));
  Lanes v;
  std::memcpy(&v, x, sizeof v);
  Lanes left = v >> half_bits;
  Lanes right = v & mask;
  for (int r = 0; r < kFeistelRounds; ++r) {
    Lanes h = right ^ static_cast<std::uint64_t>(key ^ (static_cast<std::uint64_t>(r) * 0x9e3779b97f4a7c15ULL));
    h ^= h >> 30;
    h *= std::uint64_t{0xbf58476d1ce4e5b9ULL};
    h ^= h >> 27;
    h *= std::uint64_t{0x94d049bb133111ebULL};
    h ^= h >> 31;
    const Lanes next = left ^ (h & mask);
    left = right;
    right = next;
  }
  v = (left << half_bits) | right;
  std::memcpy(x, &v, sizeof v);
}

void encrypt_lanes_generic(std::uint64_t* x, std::uint64_t key, int half_bits, std::uint64_t mask) {
  encrypt_lanes_body(x, key, half_bits, mask);
}

using EncryptLanes = void (*)(std::uint64_t*, std::uint64_t, int, std::uint64_t);

#if defined(__x86_64__) && defined(__GNUC__)
// With AVX-512 a lane's 64-bit multiplies are one instruction for all 8. The
// CPU is asked at the first use, not by an ifunc: a resolver runs while the
// dynamic linker relocates, before a sanitizer's runtime is up (TSan crashed
// there).
[[gnu::target("avx512f,avx512dq")]] void encrypt_lanes_avx512(std::uint64_t* x, std::uint64_t key, int half_bits,
                                                              std::uint64_t mask) {
  encrypt_lanes_body(x, key, half_bits, mask);
}

EncryptLanes pick_encrypt_lanes() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") ? encrypt_lanes_avx512
                                                                                 : encrypt_lanes_generic;
}
#else
EncryptLanes pick_encrypt_lanes() { return encrypt_lanes_generic; }
#endif

}  // namespace

// A balanced Feistel network over 2 * half_bits_ bits is a bijection of
// [0, 4^half_bits_) for any round function. Cycle walking (re-encrypting until
// the value falls below n) restricts it to a bijection of [0, n). The domain is
// less than 4n, so a lookup takes fewer than 4 encryptions on average.
Permutation::Permutation(std::uint64_t n, std::uint64_t key) : n_(n), key_(mix64(key ^ 0x5bd1e995u)) {
  int bits = n <= 1 ? 2 : std::bit_width(n - 1);
  half_bits_ = (bits + 1) / 2;
  if (half_bits_ < 1) half_bits_ = 1;
  half_mask_ = half_bits_ >= 64 ? ~0ULL : ((1ULL << half_bits_) - 1);
}

std::uint64_t Permutation::operator()(std::uint64_t i) const {
  std::uint64_t x = i;
  do {
    x = encrypt(x, key_, half_bits_, half_mask_);
  } while (x >= n_);
  return x;
}

// kLanes values at a time through the network (encrypt_lanes). The values
// that walk on (x >= n, about 1 in 4^half_bits / n - 1) are collected, a
// chunk's at a time, and walk on together, kLanes at a time too: the same
// walk as operator()'s, without a chain of dependent rounds for each.
void Permutation::apply(std::span<std::uint64_t> values) const {
  constexpr std::size_t kChunk = 8 * kLanes;
  static const EncryptLanes encrypt_lanes = pick_encrypt_lanes();
  for (std::size_t first = 0; first < values.size(); first += kChunk) {
    const std::size_t n = std::min(kChunk, values.size() - first);
    std::uint64_t* chunk = values.data() + first;
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) encrypt_lanes(chunk + i, key_, half_bits_, half_mask_);
    for (; i < n; ++i) chunk[i] = encrypt(chunk[i], key_, half_bits_, half_mask_);
    std::uint32_t walking[kChunk];  // positions in the chunk still at or past n_
    std::size_t count = 0;
    for (std::size_t k = 0; k < n; ++k) {
      walking[count] = static_cast<std::uint32_t>(k);
      count += chunk[k] >= n_ ? 1 : 0;
    }
    while (count > 0) {
      std::size_t left = 0;
      for (std::size_t k = 0; k < count; k += kLanes) {
        const std::size_t m = std::min(kLanes, count - k);
        std::uint64_t lanes[kLanes] = {};
        for (std::size_t l = 0; l < m; ++l) lanes[l] = chunk[walking[k + l]];
        encrypt_lanes(lanes, key_, half_bits_, half_mask_);
        for (std::size_t l = 0; l < m; ++l) {
          chunk[walking[k + l]] = lanes[l];
          walking[left] = walking[k + l];
          left += lanes[l] >= n_ ? 1 : 0;
        }
      }
      count = left;
    }
  }
}

EpochPlan::EpochPlan(const Options& o)
    : n_(o.dataset_size), batch_size_(o.batch_size), shuffle_(o.shuffle), seed_(o.seed),
      rank_(o.rank), world_(o.world_size) {
  if (n_ == 0) throw OptionsError("options.dataset_size is 0: the dataset has no samples");
  if (batch_size_ == 0) throw OptionsError("options.batch_size is 0");
  if (world_ == 0) throw OptionsError("options.world_size is 0");
  if (rank_ >= world_) {
    throw OptionsError("options.rank " + std::to_string(rank_) + " is not below options.world_size " +
                std::to_string(world_));
  }
  if (o.shard_policy == ShardPolicy::pad) {
    per_rank_ = (n_ + world_ - 1) / world_;
  } else {
    per_rank_ = n_ / world_;
    if (per_rank_ == 0) {
      throw OptionsError("options.dataset_size " + std::to_string(n_) + " is smaller than world_size " +
                  std::to_string(world_) + " with shard_policy = drop: a rank would get no sample");
    }
  }
  if (shuffle_ && o.shuffle_window > 0) {
    if (o.shard_sizes.empty())
      throw OptionsError("options.shuffle_window is " + std::to_string(o.shuffle_window) +
                  " but the data set has no shards (options.shard_sizes is empty): the locality shuffle "
                  "needs a source with shards (tfrecord, tar, jsonl, parquet row groups)");
    std::uint64_t total = 0;
    for (std::uint64_t n : o.shard_sizes) total += n;
    if (total != n_)
      throw OptionsError("options.shard_sizes add up to " + std::to_string(total) + " samples, options.dataset_size is " +
                  std::to_string(n_));
    locality_ = std::make_shared<const ShardShuffle>(o.shard_sizes, o.shuffle_window, o.seed);
  }
  batches_ = o.drop_last ? per_rank_ / batch_size_ : (per_rank_ + batch_size_ - 1) / batch_size_;
  if (batches_ == 0) {
    throw OptionsError("options.batch_size " + std::to_string(batch_size_) + " exceeds the " +
                std::to_string(per_rank_) + " samples of this rank's epoch and drop_last is set: " +
                "an epoch would have no batch");
  }
}

std::uint64_t EpochPlan::samples_per_epoch() const {
  std::uint64_t full = (batches_ - 1) * batch_size_;
  return full + batch_length(batches_ - 1);
}

std::uint32_t EpochPlan::batch_length(std::uint64_t batch) const {
  std::uint64_t start = batch * batch_size_;
  std::uint64_t left = per_rank_ > start ? per_rank_ - start : 0;
  return static_cast<std::uint32_t>(left < batch_size_ ? left : batch_size_);
}

// Rank r takes positions r, r + world, r + 2 world, ... of the epoch's global
// order, so ranks are disjoint and interleaved. With ShardPolicy::pad the
// positions past N wrap around to the start of the same epoch's order.
std::uint64_t EpochPlan::global_index(std::uint64_t position) const {
  const std::uint64_t global = position * world_ + rank_;
  return global < n_ ? global : global % n_;  // the division only past the end (padding)
}

// One permutation per (seed, epoch); building one is a handful of multiplies,
// so nothing is cached.
Permutation EpochPlan::epoch_permutation(std::uint64_t epoch) const {
  return Permutation(n_, mix64(seed_) ^ mix64(epoch + 0x632be59bd9b4e019ULL));
}

std::uint64_t EpochPlan::sample(std::uint64_t epoch, std::uint64_t position) const {
  std::uint64_t global = global_index(position);
  if (locality_) return locality_->epoch(epoch)->sample(global);
  return shuffle_ ? epoch_permutation(epoch)(global) : global;
}

void EpochPlan::batch_samples(std::uint64_t epoch, std::uint64_t batch,
                              std::span<std::uint64_t> out) const {
  std::uint32_t len = batch_length(batch);
  if (out.size() < len) throw Error("EpochPlan::batch_samples: output span too small");
  std::uint64_t start = batch * batch_size_;
  if (!shuffle_) {
    for (std::uint32_t j = 0; j < len; ++j) out[j] = global_index(start + j);
    return;
  }
  if (locality_) {
    for (std::uint32_t j = 0; j < len; ++j) out[j] = global_index(start + j);
    locality_->epoch(epoch)->samples(out.first(len));
    return;
  }
  for (std::uint32_t j = 0; j < len; ++j) out[j] = global_index(start + j);
  epoch_permutation(epoch).apply(out.first(len));
}

}  // namespace sluice
