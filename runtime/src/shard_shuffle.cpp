#include "sluice/shard_shuffle.h"

#include <algorithm>
#include <atomic>
#include <string>

#include "mix64.h"
#include "sluice/error.h"
#include "sluice/plan.h"

namespace sluice {
namespace {

using detail::mix64;

std::atomic<std::uint64_t> next_id{1};

// Windows of at most this many shards find a position's shard by counting
// (Epoch::samples), larger ones by binary search.
constexpr std::uint64_t kCountedSlots = 16;

// The last epoch table this thread asked for. A thread-local, not a shared
// cache behind a lock: workers are forked, and a child must not inherit a
// lock another thread of its parent held.
struct EpochCache {
  std::uint64_t owner = 0;
  std::uint64_t epoch = 0;
  std::shared_ptr<const ShardShuffle::Epoch> table;
};
thread_local EpochCache cache;

}  // namespace

ShardShuffle::ShardShuffle(std::vector<std::uint64_t> shard_sizes, std::uint32_t window, std::uint64_t seed)
    : sizes_(std::move(shard_sizes)), window_(window), seed_(seed), id_(next_id.fetch_add(1)) {
  if (window_ == 0) throw Error("shuffle_window is 0: a window holds at least one shard");
  if (sizes_.empty()) throw Error("shuffle_window needs the data set's shards, and the source has none");
  if (sizes_.size() > 0xffffffffULL) throw Error("shuffle_window: more than 2^32 - 1 shards");
  starts_.reserve(sizes_.size() + 1);
  starts_.push_back(0);
  for (std::uint64_t n : sizes_) starts_.push_back(starts_.back() + n);
  layout_hash_ = hash_layout(sizes_);
  if (starts_.back() == 0) throw Error("shuffle_window: every shard is empty");
}

std::uint64_t ShardShuffle::hash_layout(const std::vector<std::uint64_t>& shard_sizes) {
  std::uint64_t h = mix64(shard_sizes.size());
  for (std::uint64_t n : shard_sizes) h = mix64(h ^ n) + 0x9e3779b97f4a7c15ULL;
  return h;
}

std::uint64_t ShardShuffle::window_key(std::uint64_t epoch, std::uint64_t w) const {
  return mix64(mix64(seed_ ^ 0x2545f4914f6cdd1dULL) ^ mix64(epoch + 0x632be59bd9b4e019ULL)) ^
         mix64(w + 0xd6e8feb86659fd93ULL);
}

std::shared_ptr<const ShardShuffle::Epoch> ShardShuffle::epoch(std::uint64_t e) const {
  if (cache.owner == id_ && cache.epoch == e && cache.table) return cache.table;
  auto table = std::make_shared<Epoch>();
  table->owner_ = this;
  table->epoch_ = e;
  const auto shards = static_cast<std::uint32_t>(sizes_.size());
  const Permutation perm(shards, mix64(seed_ ^ 0x7a3c9e1b5d2f4861ULL) ^ mix64(e + 0x632be59bd9b4e019ULL));
  table->order_.resize(shards);
  table->slot_of_.resize(shards);
  table->prefix_.resize(static_cast<std::size_t>(shards) + 1);
  for (std::uint32_t j = 0; j < shards; ++j) {
    const auto s = static_cast<std::uint32_t>(perm(j));
    table->order_[j] = s;
    table->slot_of_[s] = j;
    table->prefix_[j + 1] = table->prefix_[j] + sizes_[s];
  }
  cache = {id_, e, table};
  return table;
}

std::uint32_t ShardShuffle::Epoch::slot_at(std::uint64_t p) const {
  auto it = std::upper_bound(prefix_.begin(), prefix_.end(), p);  // past the slot holding p
  return static_cast<std::uint32_t>(it - prefix_.begin() - 1);
}

std::uint64_t ShardShuffle::Epoch::sample(std::uint64_t p) const {
  samples({&p, 1});
  return p;
}

void ShardShuffle::Epoch::samples(std::span<std::uint64_t> positions) const {
  for (std::size_t i = 0; i < positions.size();) {
    const std::uint64_t p = positions[i];
    if (p >= prefix_.back())
      throw Error("ShardShuffle: position " + std::to_string(p) + " is past the epoch's " +
                  std::to_string(prefix_.back()) + " samples");
    const std::uint32_t k = owner_->window_;
    const std::uint64_t w = slot_at(p) / k;
    const std::uint64_t first = w * k;
    const std::uint64_t last = std::min<std::uint64_t>(first + k, order_.size());  // slots [first, last)
    const std::uint64_t begin = prefix_[first], end = prefix_[last];
    // The positions from i on that lie in this window, permuted together.
    std::size_t n = i + 1;
    while (n < positions.size() && positions[n] >= begin && positions[n] < end) ++n;
    const std::span<std::uint64_t> run = positions.subspan(i, n - i);
    for (std::uint64_t& q : run) q -= begin;
    Permutation(end - begin, owner_->window_key(epoch_, w)).apply(run);
    // A permuted position stays in the window: its slot is among [first, last).
    const auto slots_begin = prefix_.begin() + static_cast<std::ptrdiff_t>(first);
    const auto slots_end = prefix_.begin() + static_cast<std::ptrdiff_t>(last) + 1;
    if (last - first <= kCountedSlots) {
      // The slot is the last one starting at or before the position: with
      // a few slots, counted without a branch (a binary search mispredicts
      // about once a position, the positions being permuted).
      for (std::uint64_t& q : run) {
        const std::uint64_t at = begin + q;
        std::size_t j = first;
        for (std::uint64_t s = first + 1; s < last; ++s) j += prefix_[s] <= at;
        q = owner_->starts_[order_[j]] + (at - prefix_[j]);
      }
    } else {
      for (std::uint64_t& q : run) {
        const std::uint64_t at = begin + q;
        const auto j = static_cast<std::size_t>(std::upper_bound(slots_begin, slots_end, at) - prefix_.begin() - 1);
        q = owner_->starts_[order_[j]] + (at - prefix_[j]);
      }
    }
    i = n;
  }
}

std::uint32_t ShardShuffle::Epoch::shard_at(std::uint64_t p) const {
  const std::uint64_t index = sample(p);
  const auto& starts = owner_->starts_;
  return static_cast<std::uint32_t>(std::upper_bound(starts.begin(), starts.end(), index) - starts.begin() - 1);
}

ShardShuffle::Use ShardShuffle::Epoch::use(std::uint32_t shard) const {
  const std::uint32_t k = owner_->window_;
  const std::uint64_t first = slot_of_.at(shard) / k * k;
  const std::uint64_t last = std::min<std::uint64_t>(first + k, order_.size());
  return {prefix_[first], prefix_[last]};
}

std::optional<std::uint64_t> ShardShuffle::Epoch::next_use(std::uint32_t shard, std::uint64_t from) const {
  const Use u = use(shard);
  if (from >= u.end || u.begin == u.end) return std::nullopt;
  return std::max(from, u.begin);
}

std::vector<std::uint32_t> ShardShuffle::Epoch::shards_between(std::uint64_t begin, std::uint64_t end) const {
  std::vector<std::uint32_t> out;
  end = std::min(end, prefix_.back());
  if (begin >= end) return out;
  const std::uint32_t k = owner_->window_;
  const std::uint64_t first = slot_at(begin) / k * k;
  const std::uint64_t last = std::min<std::uint64_t>((slot_at(end - 1) / k + 1) * k, order_.size());
  for (std::uint64_t j = first; j < last; ++j)
    if (owner_->sizes_[order_[j]] > 0) out.push_back(order_[j]);
  return out;
}

}  // namespace sluice
