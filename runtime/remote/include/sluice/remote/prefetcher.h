// sluice/remote/prefetcher.h: remote objects brought into the node cache
// ahead of their use, by a thread of the process that reads them.
//
//   Prefetcher fetch(cache_options, {urls...}, {sizes...});
//   fetch.want({3, 4, 5, 9}, 1);   // object 3 is needed now, 4, 5, 9 next
//   fetch.wait(3);                 // blocks until 3 is local and pinned
//
// Objects are numbered by their place in the list given at construction.
// want() names the objects the coming reads need, in the order of their next
// use, the first `needed` of them for reads about to start: a thread with its
// own Cache (cache.h) downloads them front to back, a few at once (the run
// of missing objects at the front: up to max_in_flight / 2, at most 4; ahead,
// skipping those another process of the node is downloading, so that the
// workers of a node fetch different shards at once), and keeps
// each pinned until a later want() leaves it out. Objects after the needed
// ones are fetched ahead only while they fit within the cache's limit once
// unpinned objects are evicted (Cache::get_all_if_room for a run, else
// get_if_room for its first alone); the thread stops at the first that does
// not fit and tries again at the next want(). So the
// directory passes `limit` only by needed objects: with every process on the
// node asking through a Prefetcher, by at most the objects the reads about to
// start need, per process, that no one had fetched ahead. The eviction order
// is the order of the last want(): position in it is the next use given to
// Cache::set_next_use, Belady's rule; an object an earlier want() named and
// this one leaves out is used never again, one no want() has named yet is
// used after the list's end (so fetching ahead never evicts it).
// With a budget, each turn also pins at once the objects of the list that
// lie whole in the cache (within the budget's bytes from its front), so that
// other processes fetching ahead, which evict what they will not read
// again, cannot evict what this one is about to read before its walk comes
// to them; a download ahead's room is reserved before its request
// (Cache::get_if_room).
//
// Errors: a failed download (the store down past its retries, 404, a length
// that is not the size `sizes` announced) is kept, the thread fetches nothing
// more, and wait() of any object not yet local throws sluice::Error with that
// message (naming the URL and the store's status).
//
// Thread and fork safety: make it after fork() (it starts a thread and holds
// descriptors); its methods are for one thread (the reader), the fetching
// thread is its own. The destructor waits for a download under way to end
// (a transfer retries and times out per TransferOptions), then joins.
// A second thread, the lane, keeps downloads going further ahead while the
// first waits for the last of its group: it takes the next objects ahead
// (not ready, not claimed, not in the cache, after the first thread's next
// group), fetches them, and lets go of them once published; the first
// thread's walk then finds them whole. It starts once the objects of the
// first reads are ready, so that they do not share the link with it. Only without a budget (cache limit
// 0): with one, what is fetched ahead and what it evicts stay in the first
// thread's order of use. Its failures are left to the first thread, which meets them
// again and reports them.
// Ordering: every field shared with the threads is read and written under
// mu_; ready_ turns true only after the object is published and pinned by
// the first thread; claimed_ marks the lane's objects while it fetches.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sluice/remote/cache.h"

namespace sluice::remote {

// The error for an object that holds `holds` bytes where its index says `index`.
std::string index_size_mismatch(const std::string& url, std::uint64_t holds, std::uint64_t index);

class Prefetcher {
 public:
  // `sizes[i]`: the size object i must have (0: unknown, unchecked).
  Prefetcher(CacheOptions options, std::vector<std::string> urls, std::vector<std::uint64_t> sizes);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  const std::vector<std::string>& urls() const { return urls_; }
  std::uint64_t size_of(std::uint32_t object) const { return sizes_.at(object); }

  // How many bytes of objects ahead a reader should list in want(): `wanted`,
  // at most half the cache's limit. Every process of the node fetches ahead
  // within the one budget, and one's room is made of what it will not read
  // again, which another a window behind it may still read; ahead by at most
  // half the budget, their near futures fit in it together. (Further ahead,
  // 2 ranks of 2 workers with a cache of 2 windows downloaded 3-5 of 40
  // shards twice an epoch.)
  std::uint64_t ahead_limit(std::uint64_t wanted) const;

  // Replaces the wish list (see above); objects by number, no repeats.
  void want(std::vector<std::uint32_t> order, std::size_t needed);
  // Whether the object is local and pinned, without waiting.
  bool ready(std::uint32_t object);
  // Blocks until it is; throws the download's Error. The object must be
  // among the needed ones of the last want(), or already ready.
  void wait(std::uint32_t object);

  // What the threads' Caches did so far (a copy, without `downloads`).
  // Counted when a thread's group of downloads ends: an object the second
  // thread fetched ahead may read as ready() before its download counts.
  CacheStats stats();
  // The downloads counted since the last call (as stats()).
  std::vector<DownloadSpan> take_downloads();

 private:
  void run();
  void lane();
  std::size_t in_flight() const;
  void copy_stats(const Cache& cache, std::size_t& spans_seen, CacheStats& into);

  CacheOptions options_;
  std::vector<std::string> urls_;
  std::vector<std::uint64_t> sizes_;

  std::mutex mu_;
  std::condition_variable changed_;  // want() or stop: the thread looks again
  std::condition_variable fetched_;  // an object became ready, or a download failed
  std::vector<std::uint32_t> order_;
  std::size_t needed_ = 0;
  std::uint64_t generation_ = 0;     // of want(): the thread's copy is stale when it differs
  std::vector<char> ready_;
  std::vector<char> claimed_;        // by the lane, while it fetches them
  std::string error_;
  bool stop_ = false;
  CacheStats stats_;                 // downloads left empty
  CacheStats lane_stats_;            // the lane's, likewise
  std::vector<DownloadSpan> spans_;  // not taken yet
  std::thread thread_;  // last: started once everything above exists
  std::thread lane_;
};

}  // namespace sluice::remote
