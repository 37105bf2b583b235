// Fetching ahead (see prefetcher.h for the contract and its ordering).
#include "sluice/remote/prefetcher.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>

#include "sluice/error.h"

namespace sluice::remote {

namespace {

// Eviction by the wish list: next[k] is object k's place in it, else
// Cache::kNeverAgain or kLater (next_of); `next` is read when the cache
// makes room, on its thread.
void evict_by(Cache& cache, const std::vector<std::string>& urls, const std::vector<std::uint64_t>& next) {
  auto number = std::make_shared<std::unordered_map<std::string, std::uint32_t>>();
  for (std::uint32_t k = 0; k < urls.size(); ++k) (*number)[urls[k]] = k;
  cache.set_next_use(urls, [number, &next](const std::string& url) {
    const auto it = number->find(url);
    return it == number->end() ? Cache::kNeverAgain : next[it->second];
  });
}

// next[] for a new wish list. An object the list leaves out is not read
// again (this epoch) when an earlier list named it: lists lose objects only
// at the front, as their reads pass. One no list has named yet lies past the
// list's end (it ends at a budget of bytes, not at the epoch's end): read
// later, and never evicted to fetch ahead. (Taken for "never again", it was:
// a worker a window behind evicted the shards another worker had fetched
// for the next window, and they were downloaded twice.)
void next_of(const std::vector<std::uint32_t>& order, std::vector<char>& listed, std::vector<std::uint64_t>& next) {
  for (std::size_t k = 0; k < next.size(); ++k) next[k] = listed[k] ? Cache::kNeverAgain : Cache::kLater;
  for (std::size_t i = 0; i < order.size(); ++i) {
    next[order[i]] = i;
    listed[order[i]] = 1;
  }
}

bool in_list(std::uint64_t next) { return next < Cache::kLater; }

}  // namespace

Prefetcher::Prefetcher(CacheOptions options, std::vector<std::string> urls, std::vector<std::uint64_t> sizes)
    : options_(std::move(options)), urls_(std::move(urls)), sizes_(std::move(sizes)), ready_(urls_.size(), 0),
      claimed_(urls_.size(), 0) {
  sizes_.resize(urls_.size(), 0);
  thread_ = std::thread([this] { run(); });
  lane_ = std::thread([this] { lane(); });
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
  lane_.join();
}

// Downloads at once per thread: a few, so that the workers of a node keep
// about the transfer engine's requests in flight between them. With a
// budget, a run ahead is also held to an eighth of it (run()), so that the
// room made for it does not evict what the other workers fetched ahead.
std::size_t Prefetcher::in_flight() const {
  return std::clamp<std::size_t>(options_.transfer.max_in_flight / 2, 1, 4);
}

std::string index_size_mismatch(const std::string& url, std::uint64_t holds, std::uint64_t index) {
  return url + ": the object holds " + std::to_string(holds) + " bytes, its index " + std::to_string(index) +
         "; is the index published beside it out of date?";
}

std::uint64_t Prefetcher::ahead_limit(std::uint64_t wanted) const {
  return options_.limit > 0 ? std::min(wanted, options_.limit / 2) : wanted;
}

void Prefetcher::want(std::vector<std::uint32_t> order, std::size_t needed) {
  {
    std::lock_guard lock(mu_);
    order_ = std::move(order);
    needed_ = std::min(needed, order_.size());
    ++generation_;
  }
  changed_.notify_all();
}

bool Prefetcher::ready(std::uint32_t object) {
  std::lock_guard lock(mu_);
  return ready_.at(object) != 0;
}

void Prefetcher::wait(std::uint32_t object) {
  std::unique_lock lock(mu_);
  if (ready_.at(object)) return;
  if (std::find(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(needed_), object) ==
      order_.begin() + static_cast<std::ptrdiff_t>(needed_))
    throw Error("internal: waiting for " + urls_[object] + ", which no read asked for");
  fetched_.wait(lock, [&] { return ready_[object] != 0 || !error_.empty(); });
  if (!ready_[object]) throw Error(error_);
}

CacheStats Prefetcher::stats() {
  std::lock_guard lock(mu_);
  CacheStats both = stats_;
  add_stats(both, lane_stats_);
  return both;
}

// Under mu_: a thread's counters into `into`, its new downloads into spans_.
void Prefetcher::copy_stats(const Cache& cache, std::size_t& spans_seen, CacheStats& into) {
  const CacheStats& now = cache.stats();
  for (std::size_t i = spans_seen; i < now.downloads.size(); ++i) spans_.push_back(now.downloads[i]);
  spans_seen = now.downloads.size();
  into = now;  // the counters; the downloads travel through spans_
  into.downloads.clear();
}

std::vector<DownloadSpan> Prefetcher::take_downloads() {
  std::lock_guard lock(mu_);
  return std::exchange(spans_, {});
}

// The thread: one Cache, used by this thread only. Each turn takes the
// latest wish list, drops the pins it leaves out, and fetches the first
// objects of it not yet pinned, a few at once (all needed ones, or ahead
// ones that fit together; else the first alone); it sleeps when nothing is
// left to fetch (or the next object ahead does not fit), until want() or the
// destructor.
void Prefetcher::run() {
  std::vector<char> pinned(urls_.size(), 0);
  std::vector<char> listed(urls_.size(), 0);  // named by some wish list so far
  std::vector<std::uint64_t> next(urls_.size(), Cache::kLater);
  std::vector<std::uint32_t> order;
  std::size_t needed = 0;
  std::uint64_t seen = 0;
  bool blocked = false;  // the first object ahead did not fit
  const std::size_t in_flight = this->in_flight();
  std::size_t spans_seen = 0;  // of cache.stats().downloads, copied to spans_
  try {
    Cache cache(options_);
    evict_by(cache, urls_, next);
    // Why a local object cannot be read as object k: empty when it can.
    auto size_error = [&](std::uint32_t k) -> std::string {
      struct stat st{};
      const std::string path = cache.path_of(urls_[k]);
      if (sizes_[k] == 0 || (::stat(path.c_str(), &st) == 0 && static_cast<std::uint64_t>(st.st_size) == sizes_[k]))
        return {};
      return index_size_mismatch(urls_[k], static_cast<std::uint64_t>(st.st_size), sizes_[k]);
    };
    for (;;) {
      std::size_t first = order.size();  // the first object of the list not pinned
      for (std::size_t i = 0; i < order.size(); ++i)
        if (!pinned[order[i]]) {
          first = i;
          break;
        }
      const bool more = first < order.size() && (first < needed || !blocked);
      {
        std::unique_lock lock(mu_);
        changed_.wait(lock, [&] { return stop_ || generation_ != seen || (more && error_.empty()); });
        if (stop_) return;
        if (generation_ != seen) {
          order = order_;
          needed = needed_;
          seen = generation_;
          blocked = false;
          next_of(order, listed, next);
          for (std::uint32_t k = 0; k < urls_.size(); ++k)
            if (pinned[k] && !in_list(next[k])) ready_[k] = 0;  // not read from now on
          // Dropped below, outside the lock: the reader no longer waits for these.
        }
      }
      for (std::uint32_t k = 0; k < urls_.size(); ++k)
        if (pinned[k] && !in_list(next[k])) {
          cache.release(urls_[k]);
          pinned[k] = 0;
        }
      if (options_.limit > 0) {
        // With a budget, the objects of the list that lie whole in the cache
        // now (other processes' downloads) are held at once, those within
        // the budget's bytes from the front of the list. Another process
        // fetching ahead evicts what it will not read again itself, and
        // another rank of the node a window behind it reads those still:
        // unheld, they were evicted before this one's walk (stopped at an
        // object ahead that does not fit) reached them, and downloaded twice.
        std::vector<std::uint32_t> held;
        std::string failed;
        std::uint64_t bytes = 0;
        for (const std::uint32_t k : order) {
          bytes += sizes_[k];
          if (bytes > options_.limit) break;
          if (pinned[k] || !cache.get_if_whole(urls_[k])) continue;
          pinned[k] = 1;
          failed = size_error(k);
          if (!failed.empty()) break;
          held.push_back(k);
        }
        if (!held.empty() || !failed.empty()) {
          std::lock_guard lock(mu_);
          for (const std::uint32_t k : held) ready_[k] = 1;
          copy_stats(cache, spans_seen, stats_);
          fetched_.notify_all();
        }
        if (!failed.empty()) throw Error(failed);
      }
      first = order.size();
      for (std::size_t i = 0; i < order.size(); ++i)
        if (!pinned[order[i]]) {
          first = i;
          break;
        }
      if (first == order.size() || (first >= needed && blocked)) continue;
      // Several at once (the link's latency paid once for them): the run of
      // objects not pinned from `first` on, all needed or all ahead; a run,
      // so that everything used before its last one stays pinned (Belady).
      auto claimed = [&](std::uint32_t k) {
        std::lock_guard lock(mu_);
        return claimed_[k] != 0;
      };
      std::vector<std::uint32_t> group;
      std::vector<std::string> group_urls;
      std::vector<std::uint64_t> group_sizes;
      std::uint64_t group_bytes = 0;
      auto add = [&](std::uint32_t k) {
        group.push_back(k);
        group_urls.push_back(urls_[k]);
        group_sizes.push_back(sizes_[k]);
        group_bytes += sizes_[k];
      };
      for (std::size_t i = first; i < order.size() && group.size() < in_flight; ++i) {
        if ((i < needed) != (first < needed) || pinned[order[i]]) break;
        // With a budget, a run ahead holds at most an eighth of it: room made
        // for a larger one unpins and evicts what the other workers fetched
        // ahead, fetched again later (one object always goes).
        if (options_.limit > 0 && i >= needed && !group.empty() && group_bytes + sizes_[order[i]] > options_.limit / 8)
          break;
        // One in the cache already (the lane's, another worker's): pinned
        // and ready at once, not after the downloads of a group.
        if (cache.whole(urls_[order[i]])) {
          if (group.empty()) add(order[i]);
          break;
        }
        // Another worker fetches it already: this one takes the next ones,
        // so that the workers of a node fetch different shards at once (the
        // walk pins it, found whole, once it is published).
        if (i >= needed && (claimed(order[i]) || cache.downloading_elsewhere(urls_[order[i]]))) continue;
        add(order[i]);
      }
      if (group.empty()) add(order[first]);  // all of them fetched elsewhere: wait for the first
      if (options_.limit > 0 && first < needed) {
        // Belady: what is used after a needed group may make room for it.
        // Unpinned, those objects are evicted furthest next use first
        // (make_room), and the ones left are pinned again (found whole) at
        // the next turn. Not for a group ahead: its room is made only of
        // objects this process will not read again (strict), so unpinning
        // them would only let other processes evict what this one reads.
        for (std::size_t i = std::max(first + 1, needed); i < order.size(); ++i)
          if (pinned[order[i]]) {
            cache.release(urls_[order[i]]);
            pinned[order[i]] = 0;
            std::lock_guard lock(mu_);
            ready_[order[i]] = 0;
          }
      }
      // A failure is thrown once the group's objects that did arrive are
      // marked ready (wait() of those returns, of the others throws).
      std::string failed;
      try {
        if (first < needed) {
          cache.get_all(group_urls);
        } else if (group.size() == 1 || !cache.get_all_if_room(group_urls, group_sizes)) {
          // Not all of them fit: those that finished, else the first alone if it fits.
          const bool some = std::any_of(group_urls.begin(), group_urls.end(),
                                        [&](const std::string& url) { return cache.holds(url); });
          if (!some && !cache.get_if_room(group_urls[0], group_sizes[0])) {
            blocked = true;
            continue;
          }
        }
      } catch (const Error& e) {
        failed = e.what();
      }
      std::vector<std::uint32_t> got;
      for (const std::uint32_t k : group) {
        if (!cache.holds(urls_[k])) continue;
        pinned[k] = 1;
        // Not made ready when it fails; thrown below, once the group's counters are copied.
        failed = size_error(k);
        if (!failed.empty()) break;
        got.push_back(k);
      }
      {
        std::lock_guard lock(mu_);
        for (const std::uint32_t k : got) ready_[k] = 1;
        copy_stats(cache, spans_seen, stats_);
        fetched_.notify_all();
      }
      changed_.notify_all();  // the lane starts once the first reads' objects are ready
      if (!failed.empty()) throw Error(failed);
    }
  } catch (const std::exception& e) {
    std::lock_guard lock(mu_);
    error_ = e.what();
    fetched_.notify_all();
  }
  // Failed: nothing more is fetched; wait until the destructor.
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return stop_; });
}

void Prefetcher::lane() {
  const std::size_t in_flight = this->in_flight();
  if (options_.limit > 0) {  // a budget: fetching ahead stays the first thread's, in order of use
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return stop_; });
    return;
  }
  std::vector<char> listed(urls_.size(), 0);
  std::vector<std::uint64_t> next(urls_.size(), Cache::kLater);
  std::uint64_t seen = 0;
  bool idle = true;  // nothing to take, or no room for it: until the next want()
  bool started = false;
  std::size_t spans_seen = 0;
  try {
    Cache cache(options_);
    evict_by(cache, urls_, next);
    std::vector<char> whole(urls_.size(), 0);  // found in the cache: not looked at again
    for (;;) {
      // Past the first thread's next group: the objects ahead it has not
      // made ready and no one fetches (chosen under the lock), of which the
      // first the cache lacks (looked at outside it) are claimed.
      std::vector<std::uint32_t> candidates, group;
      {
        std::unique_lock lock(mu_);
        // Not before the first thread's first objects are ready (those the
        // reads need, or its first group ahead): at the start every download
        // shares the link, and the lane's would delay the first batch.
        const auto first_reads_ready = [&] {
          for (std::size_t i = 0; i < needed_ && i < order_.size(); ++i)
            if (!ready_[order_[i]]) return false;
          return std::any_of(ready_.begin(), ready_.end(), [](char r) { return r != 0; });
        };
        changed_.wait(lock, [&] {
          return stop_ || !error_.empty() || ((generation_ != seen || !idle) && (started || first_reads_ready()));
        });
        if (stop_ || !error_.empty()) return;
        started = true;
        if (generation_ != seen) {
          seen = generation_;
          next_of(order_, listed, next);
        }
        std::size_t left_to_it = in_flight;
        for (std::size_t i = needed_; i < order_.size(); ++i) {
          const std::uint32_t k = order_[i];
          if (ready_[k] || claimed_[k] || whole[k]) continue;
          if (left_to_it > 0) {
            --left_to_it;
            continue;
          }
          candidates.push_back(k);
        }
      }
      std::vector<std::string> group_urls;
      for (const std::uint32_t k : candidates) {
        if (group.size() == in_flight) break;
        if (cache.whole(urls_[k])) {
          whole[k] = 1;
          continue;
        }
        group.push_back(k);
      }
      {
        std::lock_guard lock(mu_);
        std::erase_if(group, [&](std::uint32_t k) { return ready_[k] || claimed_[k]; });  // taken meanwhile
        for (const std::uint32_t k : group) {
          claimed_[k] = 1;
          group_urls.push_back(urls_[k]);
        }
      }
      bool failed = false;
      if (!group.empty()) {
        try {
          cache.get_all(group_urls);
        } catch (const Error&) {
          failed = true;  // the first thread meets it again and reports it
        }
        for (const std::string& url : group_urls) cache.release(url);
        for (const std::uint32_t k : group) whole[k] = !failed;
      }
      {
        std::lock_guard lock(mu_);
        for (const std::uint32_t k : group) claimed_[k] = 0;
        copy_stats(cache, spans_seen, lane_stats_);
        idle = group.empty() || failed;
      }
      changed_.notify_all();  // the first thread finds them whole
      if (failed) break;
    }
  } catch (const std::exception&) {
    // A cache that cannot be made or used: the first thread meets the same.
  }
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return stop_; });
}

}  // namespace sluice::remote
