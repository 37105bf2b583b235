// sluice/remote/cache.h: the node cache. Remote shards downloaded once per
// node into a directory that every worker and every rank on the node shares;
// readers open the cached file as any local file.
//
//   Cache cache({.dir = "", .limit = 8 << 30});
//   std::vector<std::string> local = cache.get_all(urls);   // downloads what is missing
//
// Files in the directory, for the object at URL (NAME = 16 hex digits of
// XXH64(URL), '-', the URL's last path part):
//   NAME           a whole, checked object; only ever made by rename()
//   NAME.partial   a download under way, or cut by a crash (resumed later)
//   NAME.meta      the object's size, ETag and Last-Modified as the store
//                  announced them: for resuming NAME.partial, then kept
//                  beside NAME to revalidate it
//   NAME.lock      flock()ed exclusively by the one process downloading NAME
//   .budget.lock   flock()ed exclusively while a process makes room
//   NAME.idx       a TFRecord index a reader built beside NAME: not counted,
//                  removed with NAME
//
// Fresh: every object found whole is revalidated when get_all asks for it,
// with one conditional HEAD (If-None-Match / If-Modified-Since from
// NAME.meta), or, for 16 or more objects of one S3 folder, with one listing
// of the folder (a request per 1,000 keys: their sizes and ETags; HEADs
// where the folder may not be listed); a changed object is downloaded again
// and published the same way (rename over NAME). A store that cannot be
// reached then fails get_all.
//
// Guarantees and their argument:
// - A file named NAME is whole. The download goes to NAME.partial, is
//   checked (length equal to the object's size from the GET's headers, and
//   CacheOptions::check when set; when resumed,
//   every range sent with If-Match on the first ETag, so parts of two versions
//   are never joined), fsync()ed, and only then renamed to NAME. A crash at
//   any point leaves NAME absent or whole; a cut .partial is resumed, never read.
// - One download per node: a process downloads NAME only while holding
//   NAME.lock exclusively; others block on it and, once they get it, find
//   NAME published and count a hit. flock() locks die with their process,
//   so a killed downloader never blocks anyone.
// - In use is never evicted: a process using NAME holds a shared flock on its
//   open descriptor of NAME (a pin) until release() or the Cache's end. An
//   evictor unlinks NAME only while holding an exclusive flock on it, taken
//   with LOCK_NB, so never while anyone pins it; a pinner that locks after an
//   unlink sees the path gone (its inode differs) and downloads again. A
//   downloader pins the partial before renaming it, so no evictor ever finds
//   a just-published object unpinned.
// - Fetching ahead reserves its room: get_if_room and get_all_if_room,
//   for objects of known size, take their NAME.lock first, then under
//   .budget.lock make room and write the reservation (NAME.meta, an empty
//   NAME.partial) that other processes count, before any request. Room made
//   and then taken by another process before the GET answered used to
//   abandon the download once the store had sent much of the object.
// - Budget: with limit > 0, once a download's GET has answered with its
//   headers and before any of its body is kept, the downloader takes
//   .budget.lock, adds up whole files and the announced sizes of partials,
//   and evicts unpinned whole files until the new object fits: first the
//   ones no known URL names, then the one whose next use is furthest away
//   (set_next_use: the plan's order, Belady's rule), then the least recently
//   used. When everything left is pinned the download goes ahead: the limit
//   is then passed by at most the shards in use. get_if_room instead gives
//   up before any body byte is kept (fetching ahead never passes the limit),
//   and evicts only objects no next use names (unknown, or never again):
//   fetching ahead never makes an object the plan still uses download twice.
//
// Errors: sluice::Error naming the URL, the store's status and message
// (transfer.h), or the cache file and errno; when several objects fail, the
// one earliest in the list asked for.
// Thread and fork safety: a Cache belongs to one thread; make it after
// fork() (it holds descriptors and locks of its process). Any number of
// processes may share one directory. Pins may outlive their Cache: see Pins.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sluice/remote/transfer.h"

namespace sluice::remote {

struct CacheOptions {
  std::string dir;             // "" = default_cache_dir()
  std::uint64_t limit = 0;     // bytes; 0 = unlimited
  // false: an object found whole is used as it is, without asking the store
  // (a worker's cache, when the launching process revalidated at open).
  bool revalidate = true;
  TransferOptions transfer;
  // When set, every download is shown to it before it is published:
  // check(url, path of the downloaded bytes) returns "" to keep it, else why
  // not; the download then fails with that text and its bytes are deleted,
  // so a wrong object never enters the cache (a written dataset's checksums:
  // scripting's remote_manifest.h). Called on the downloading thread; must
  // be safe to copy into a forked worker (plain data, no handles).
  std::function<std::string(const std::string& url, const std::string& path)> check;
};

// One object this process downloaded, for traces: steady_clock times.
struct DownloadSpan {
  std::string url;
  std::uint64_t start_ns = 0, end_ns = 0;  // from its GET to its publication
  std::uint64_t bytes = 0;
};

struct CacheStats {
  std::uint64_t hits = 0;          // found whole (or published by another process while waiting)
  std::uint64_t misses = 0;        // downloaded by this process
  std::uint64_t evictions = 0;
  std::uint64_t over_budget = 0;   // bytes past `limit` that pins kept it from evicting (the most seen)
  std::uint64_t revalidated = 0;   // found whole and checked against the store (changed ones included)
  std::uint64_t changed = 0;       // of those, changed in the store: downloaded again (counted in misses)
  std::uint64_t revalidation_requests = 0;  // conditional HEADs (retries included) and listing pages (not in transfer)
  std::uint64_t wait_ns = 0;       // time get/get_all spent waiting on downloads and locks
  TransferStats transfer;          // requests, bytes, retries
  std::vector<DownloadSpan> downloads;  // the first 100000 downloads
};

// Adds `from`'s counters to `into` (over_budget: the larger; downloads appended).
void add_stats(CacheStats& into, const CacheStats& from);

// $SLUICE_CACHE_DIR, else $XDG_CACHE_HOME/sluice, else $HOME/.cache/sluice.
std::string default_cache_dir();

// Pins handed over by a Cache (Cache::hand_over_pins), held until this is
// destroyed: the owner keeps its objects from eviction without keeping the
// Cache. Each pin is a shared flock on an O_CLOEXEC descriptor of the object.
// Across fork(): flock locks belong to the open file description, which a
// child shares with its parent; a child that closes its copies drops nothing
// of the parent's, and a child that keeps them keeps the objects pinned until
// it exits (never less than the parent asked). exec() closes them.
class Pins {
 public:
  Pins() = default;
  explicit Pins(std::vector<int> fds) : fds_(std::move(fds)) {}
  ~Pins();
  Pins(Pins&& other) noexcept : fds_(std::move(other.fds_)) { other.fds_.clear(); }
  Pins& operator=(Pins&&) = delete;
  Pins(const Pins&) = delete;
  Pins& operator=(const Pins&) = delete;
  std::size_t size() const { return fds_.size(); }

 private:
  std::vector<int> fds_;
};

class Cache {
 public:
  explicit Cache(CacheOptions options);  // creates the directory; throws Error
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  // The local path of each URL's object, in order, each downloaded first when
  // the cache lacks it (several at once) and pinned until release().
  std::vector<std::string> get_all(const std::vector<std::string>& urls);
  std::string get(const std::string& url) { return get_all({url}).at(0); }

  // For fetching ahead: as get(), but a missing object is downloaded only
  // when it fits within `limit` once unpinned objects are evicted; false
  // (nothing kept, nothing pinned) when it does not. The budget is then never
  // passed on its account. `size` > 0, the object's size when known: a
  // missing object that cannot fit is refused before any request, and its
  // room is reserved before its request. One another process is
  // downloading is waited for, never downloaded here: false when that
  // download ends without it.
  bool get_if_room(const std::string& url, std::uint64_t size = 0);
  // The same for several objects of known sizes, downloaded at once: true
  // when all are local and pinned (holds() says which are, when false). Nothing is requested when the missing
  // ones do not fit together (or a size is 0); when another process takes
  // the room while they download, those finished stay pinned (holds()).
  bool get_all_if_room(const std::vector<std::string>& urls, const std::vector<std::uint64_t>& sizes);
  // As get(), for an object that lies whole in the cache now: pinned and
  // counted as a hit, with no request (and no revalidation); false when it
  // is not whole. For a reader that holds what it will read soon, so that
  // other processes fetching ahead cannot evict it meanwhile.
  bool get_if_whole(const std::string& url);
  // Whether this Cache pins the object.
  bool holds(const std::string& url) const { return pins_.count(url) != 0; }
  // Whether the object lies whole in the cache now (pinned or not).
  bool whole(const std::string& url) const;
  // Whether another process (or Cache) is downloading it now (holds NAME.lock).
  bool downloading_elsewhere(const std::string& url) const;

  // Drops the pin: the object may be evicted from now on.
  void release(const std::string& url);

  // Every pin this Cache holds, now owned by the result (the Cache holds none).
  Pins hand_over_pins();

  // Where `url`'s object lies (or would lie) in the cache.
  std::string path_of(const std::string& url) const;

  // Eviction order: next_use(url) is the position of the object's next use
  // (smaller is sooner; kNeverAgain: not used again; kLater: used after
  // every position the function gives, as far as the caller knows). `urls`
  // names the objects the function knows; whole files of other URLs go
  // first. Fetching ahead (get_if_room, get_all_if_room) evicts only
  // objects of other URLs and those used never again.
  static constexpr std::uint64_t kNeverAgain = UINT64_MAX;
  static constexpr std::uint64_t kLater = UINT64_MAX - 1;
  void set_next_use(std::vector<std::string> urls, std::function<std::uint64_t(const std::string&)> next_use);

  const CacheStats& stats() const { return stats_; }
  const CacheOptions& options() const { return options_; }

 private:
  struct Download;
  bool pin_if_whole(const std::string& url);
  bool get_within_budget(const std::vector<std::string>& urls, const std::vector<std::uint64_t>& missing,
                         const std::string& keep);
  void drop_reserved();
  std::vector<std::string> revalidate(const std::vector<std::string>& cached);
  void make_room(std::uint64_t bytes, const std::string& keep);

  CacheOptions options_;
  CacheStats stats_;
  std::map<std::string, int> pins_;  // url -> descriptor holding LOCK_SH
  std::map<std::string, std::pair<dev_t, ino_t>> stale_;  // url -> the inode revalidation found changed
  std::map<std::string, std::string> known_;  // file name -> url, for next_use
  std::function<std::uint64_t(const std::string&)> next_use_;
  struct Reservation {
    int fd;               // NAME.lock, held (LOCK_EX)
    std::uint64_t bytes;  // the room made for it
  };
  std::map<std::string, Reservation> reserved_;  // url -> its reservation (get_within_budget)
  std::set<std::string> unreserved_;     // fetched ahead, found downloading elsewhere: waited for, never downloaded
  bool strict_ = false;   // get_if_room: make_room refuses instead of passing the limit
  bool no_room_ = false;  // ... and it did
};

}  // namespace sluice::remote
