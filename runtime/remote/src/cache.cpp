// The node cache (see cache.h for the guarantees and their argument).
#include "sluice/remote/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <thread>
#include <tuple>
#include <utility>

#include "sluice/error.h"
#include "sluice/remote/s3_listing.h"
#include "sluice/remote/url.h"

namespace sluice::remote {
namespace {

std::string errno_text() { return std::strerror(errno); }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int open_lock_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot open lock file " + path + ": " + errno_text());
  return fd;
}

int flock_retry(int fd, int op) {
  int rc;
  do rc = ::flock(fd, op);
  while (rc != 0 && errno == EINTR);
  return rc;
}

// A descriptor holding a flock, released with it.
struct LockedFd {
  int fd = -1;
  LockedFd() = default;
  explicit LockedFd(int f) : fd(f) {}
  LockedFd(LockedFd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  LockedFd& operator=(LockedFd&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  ~LockedFd() {
    if (fd >= 0) ::close(fd);  // closing the last descriptor of the open file drops its flock
  }
};

std::uint64_t file_size_or_zero(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

// NAME.meta: "SIZE ETAG" then the Last-Modified line. Written when the
// store announces the object (a partial's reservation and its version for
// resuming) and kept beside the published NAME (its version, revalidated).
struct Meta {
  std::uint64_t size = 0;
  std::string etag;
  std::string last_modified;
};

Meta read_meta(const std::string& path) {
  Meta m;
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  const std::size_t space = first.find(' ');
  m.size = std::strtoull(first.c_str(), nullptr, 10);
  if (space != std::string::npos) m.etag = first.substr(space + 1);
  std::getline(in, m.last_modified);
  return m;
}

// Only a download writes it, holding the object's lock file exclusively: no
// other process writes NAME.meta.tmp meanwhile, so one fixed name serves (a
// crash's leftover is overwritten by the next download, and scans skip *.tmp).
void write_meta(const std::string& path, const Meta& m) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << m.size << ' ' << m.etag << '\n' << m.last_modified << '\n';
    if (!out) throw Error("cannot write " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw Error("cannot rename " + tmp + ": " + errno_text());
}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

}  // namespace

std::string default_cache_dir() {
  if (const char* d = std::getenv("SLUICE_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/sluice";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/sluice";
}

// One object this process downloads, while it holds NAME.lock.
struct Cache::Download {
  std::string url, path;
  LockedFd lock;
  Meta meta;
  bool restarted = false;
  std::uint64_t start_ns = 0;
  std::uint64_t reserved = 0;  // bytes of room get_within_budget made and reserved for it
};

Cache::Cache(CacheOptions options) : options_(std::move(options)) {
  if (options_.dir.empty()) options_.dir = default_cache_dir();
  // mkdir -p
  for (std::size_t at = 1;; ++at) {
    at = options_.dir.find('/', at);
    const std::string part = options_.dir.substr(0, at);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST)
      throw Error("cannot make the cache directory " + part + ": " + errno_text());
    if (at == std::string::npos) break;
  }
}

Cache::~Cache() {
  for (auto& [url, fd] : pins_) ::close(fd);
}

std::string Cache::path_of(const std::string& url) const {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH64(url.data(), url.size(), 0)));
  std::string base = base_name(parse_url(url));
  for (char& c : base)
    if (c == '/' || static_cast<unsigned char>(c) < 0x20) c = '_';
  if (base.size() > 100) base.resize(100);
  return options_.dir + "/" + hex + "-" + base;
}

void Cache::set_next_use(std::vector<std::string> urls, std::function<std::uint64_t(const std::string&)> next_use) {
  known_.clear();
  for (std::string& u : urls) {
    const std::string path = path_of(u);
    known_[path.substr(path.rfind('/') + 1)] = std::move(u);
  }
  next_use_ = std::move(next_use);
}

Pins::~Pins() {
  for (int fd : fds_) ::close(fd);  // the last descriptor of the description drops its flock
}

Pins Cache::hand_over_pins() {
  std::vector<int> fds;
  for (auto& [url, fd] : pins_) fds.push_back(fd);
  pins_.clear();
  return Pins(std::move(fds));
}

void Cache::release(const std::string& url) {
  const auto it = pins_.find(url);
  if (it == pins_.end()) return;
  ::close(it->second);
  pins_.erase(it);
}

bool Cache::pin_if_whole(const std::string& url) {
  if (pins_.count(url)) return true;
  const std::string path = path_of(url);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat held{}, named{};
  // An evictor may unlink between open and flock: then the inode is no longer the path's.
  if (flock_retry(fd, LOCK_SH) != 0 || ::fstat(fd, &held) != 0 || ::stat(path.c_str(), &named) != 0 ||
      held.st_ino != named.st_ino || held.st_dev != named.st_dev) {
    ::close(fd);
    return false;
  }
  if (const auto s = stale_.find(url); s != stale_.end() && s->second == std::make_pair(held.st_dev, held.st_ino)) {
    ::close(fd);  // the version revalidation found changed, not yet replaced
    return false;
  }
  pins_[url] = fd;
  return true;
}

void Cache::make_room(std::uint64_t bytes, const std::string& keep) {
  if (options_.limit == 0) return;
  struct Entry {
    std::string name;
    std::uint64_t size;
    bool known;
    std::uint64_t next;
    std::int64_t mtime;
  };
  std::vector<Entry> whole;
  std::uint64_t used = 0;
  DIR* dir = ::opendir(options_.dir.c_str());
  if (!dir) throw Error("cannot read the cache directory " + options_.dir + ": " + errno_text());
  while (dirent* d = ::readdir(dir)) {
    const std::string name = d->d_name;
    if (name.empty() || name[0] == '.' || ends_with(name, ".lock") || ends_with(name, ".meta") ||
        ends_with(name, ".tmp") || ends_with(name, ".idx"))
      continue;
    const std::string path = options_.dir + "/" + name;
    if (ends_with(name, ".partial")) {
      if (path == keep + ".partial") continue;
      const std::string stem = path.substr(0, path.size() - 8);
      const std::uint64_t announced = read_meta(stem + ".meta").size;
      const std::uint64_t size = std::max(announced, file_size_or_zero(path));
      // A partial whose lock is free was cut by a crash: reclaim it under its lock.
      LockedFd lock(open_lock_file(stem + ".lock"));
      if (flock_retry(lock.fd, LOCK_EX | LOCK_NB) == 0) {
        ::unlink(path.c_str());
        // NAME.meta is the partial's only while NAME is absent; else NAME's version (revalidation).
        if (file_size_or_zero(stem) == 0) ::unlink((stem + ".meta").c_str());
      } else {
        used += size;
      }
      continue;
    }
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const auto k = known_.find(name);
    Entry e{name, static_cast<std::uint64_t>(st.st_size), k != known_.end(), UINT64_MAX, st.st_mtim.tv_sec};
    if (e.known && next_use_) e.next = next_use_(k->second);
    used += e.size;
    whole.push_back(std::move(e));
  }
  ::closedir(dir);
  if (used + bytes <= options_.limit) return;
  // Victims first: unknown objects, then the furthest next use, then the oldest.
  std::sort(whole.begin(), whole.end(), [](const Entry& a, const Entry& b) {
    return std::make_tuple(a.known, -static_cast<double>(a.next), a.mtime) <
           std::make_tuple(b.known, -static_cast<double>(b.next), b.mtime);
  });
  for (const Entry& e : whole) {
    if (used + bytes <= options_.limit) break;
    // Fetching ahead is optional: it never costs an object the plan uses
    // again a download of its own, only ones it will not use (or unknown).
    if (strict_ && e.known && e.next != kNeverAgain) break;
    const std::string path = options_.dir + "/" + e.name;
    LockedFd victim(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (victim.fd < 0) continue;
    if (flock_retry(victim.fd, LOCK_EX | LOCK_NB) != 0) continue;  // pinned by someone
    if (::unlink(path.c_str()) == 0) {
      ::unlink((path + ".idx").c_str());  // a TFRecord index built beside it (tfrecord.h)
      LockedFd lock(open_lock_file(path + ".lock"));
      if (flock_retry(lock.fd, LOCK_EX | LOCK_NB) == 0) ::unlink((path + ".meta").c_str());  // else a download's
      used -= std::min(used, e.size);
      ++stats_.evictions;
    }
  }
  // What is left is pinned (by this process or by other runs on the node).
  if (used + bytes > options_.limit && strict_) {
    no_room_ = true;
    throw Error("no room within cache_limit for " + keep);
  }
  if (used + bytes > options_.limit) stats_.over_budget = std::max(stats_.over_budget, used + bytes - options_.limit);
}

// One conditional HEAD per object found whole (If-None-Match on the ETag
// kept in NAME.meta, else If-Modified-Since on its Last-Modified): 304, or
// the same ETag (else Last-Modified) and length, keeps it. Many objects of
// one S3 folder (kListAtLeast or more, each with an ETag) are checked with
// one listing of the folder instead (ListObjectsV2: a request per 1,000
// keys, each key's size and ETag), a request storm of HEADs avoided at
// every start; a folder the credentials may not list is checked with HEADs.
// An object the listing lacks counts as changed (its download then names
// the store's answer). A changed one is
// unpinned and its inode remembered as stale, so that the download loop
// fetches it again (a waiter never takes the old inode for a new
// publication); other processes still pinning the old inode keep reading it
// whole until they let go, since the new version is renamed over the name.
std::vector<std::string> Cache::revalidate(const std::vector<std::string>& cached) {
  std::vector<std::string> changed;
  if (cached.empty()) return changed;
  std::vector<std::string> by_head;
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> folders;  // (bucket, prefix) -> URLs
  for (const std::string& url : cached) {
    const Url u = parse_url(url);
    if (u.scheme != Scheme::s3) {
      by_head.push_back(url);
      continue;
    }
    folders[{u.bucket(), u.key().substr(0, u.key().rfind('/') + 1)}].push_back(url);
  }
  constexpr std::size_t kListAtLeast = 16;
  auto unquoted = [](const std::string& etag) {
    return etag.size() >= 2 && etag.front() == '"' && etag.back() == '"' ? etag.substr(1, etag.size() - 2) : etag;
  };
  for (const auto& [folder, urls] : folders) {
    std::map<std::string, ObjectInfo> listed;  // URL -> what the listing says of it
    if (urls.size() >= kListAtLeast) {
      try {
        // The folder's own level only, and no more pages than its objects
        // would fill: a folder of many more keys is cheaper with HEADs.
        const ListLimits limits{.one_level = true, .max_pages = urls.size() / 1000 + 2,
                                .requests = &stats_.revalidation_requests};
        for (ObjectInfo& o : list_objects(folder.first, folder.second, options_.transfer, limits)) {
          std::string url = "s3://" + folder.first + "/" + o.key;
          listed.emplace(std::move(url), std::move(o));
        }
      } catch (const Error&) {
        listed.clear();  // not allowed to list (s3:ListBucket), too many keys, or not now: HEADs say it
      }
    }
    for (const std::string& url : urls) {
      const std::string path = path_of(url);
      const Meta m = read_meta(path + ".meta");
      if (listed.empty() || m.etag.empty()) {
        by_head.push_back(url);
        continue;
      }
      ++stats_.revalidated;
      const auto it = listed.find(url);
      if (it == listed.end() || it->second.size != file_size_or_zero(path) ||
          unquoted(it->second.etag) != unquoted(m.etag))
        changed.push_back(url);
    }
  }
  std::string error;
  uv_loop_t loop;
  uv_loop_init(&loop);
  {
    TransferEngine engine(&loop, options_.transfer);
    for (const std::string& url : by_head) {
      const std::string path = path_of(url);
      const Meta m = read_meta(path + ".meta");
      const std::uint64_t size = file_size_or_zero(path);
      engine.submit({.url = url, .if_none_match = m.etag, .if_modified_since = m.etag.empty() ? m.last_modified : "",
                     .head = true},
                    [&, url, m, size](const Response& r) {
                      if (!r.ok()) {
                        if (error.empty()) error = r.error;
                        return;
                      }
                      ++stats_.revalidated;
                      if (r.not_modified) return;
                      const bool same = r.object_size == size &&
                                        (!m.etag.empty() ? m.etag == r.etag
                                                         : !m.last_modified.empty() && m.last_modified == r.last_modified);
                      if (!same) changed.push_back(url);
                    });
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    stats_.revalidation_requests += engine.stats().requests;
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  if (!error.empty()) throw Error(error + " (revalidating the cached copy)");
  for (const std::string& url : changed) {
    struct stat held{};
    if (::fstat(pins_.at(url), &held) == 0) stale_[url] = {held.st_dev, held.st_ino};
    release(url);
    ++stats_.changed;
  }
  return changed;
}

namespace {

// NAME.lock taken to reserve NAME's room. A few tries over about 10 ms: a
// lock busy for an instant is a probe's (downloading_elsewhere, make_room
// reclaiming a cut partial), not a download's. Left unreserved on such a
// probe, the object was downloaded anyway once the lock was free, its room
// judged again at the headers and found taken by the needed downloads of
// other processes, and the download refused after the store had sent it:
// the shard went over the link twice. False: a download holds it.
bool lock_to_reserve(int fd) {
  for (int tries = 0;; ++tries) {
    if (flock_retry(fd, LOCK_EX | LOCK_NB) == 0) return true;
    if (errno != EWOULDBLOCK || tries == 10) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

// What get_if_room and get_all_if_room share: `missing[i]`, the size of
// urls[i] when it must be downloaded (0: local, or unknown). Their room is
// made first (no request at all when they cannot fit) and reserved: each
// one's NAME.lock taken (one another process downloads now is left to it),
// then under .budget.lock the room made and NAME.meta with its size and an
// empty NAME.partial written, which every process's make_room counts (a
// partial whose lock is held is a download under way). The downloads then
// run in strict mode (each refused before its body when room is gone, which
// the reservation leaves only to a changed size).
bool Cache::get_within_budget(const std::vector<std::string>& urls, const std::vector<std::uint64_t>& missing,
                              const std::string& keep) {
  strict_ = true;
  no_room_ = false;
  try {
    std::uint64_t bytes = 0;
    for (const std::uint64_t n : missing) bytes += n;
    if (bytes > 0 && options_.limit > 0) {
      for (std::size_t i = 0; i < urls.size(); ++i) {
        if (missing[i] == 0 || reserved_.count(urls[i])) continue;
        const int fd = open_lock_file(path_of(urls[i]) + ".lock");
        // Downloading elsewhere (get_all waits for it), or published since it was looked at: not reserved.
        if (lock_to_reserve(fd) && file_size_or_zero(path_of(urls[i])) == 0) {
          reserved_[urls[i]] = {fd, missing[i]};
        } else {
          ::close(fd);
          unreserved_.insert(urls[i]);
        }
      }
      LockedFd budget(open_lock_file(options_.dir + "/.budget.lock"));
      flock_retry(budget.fd, LOCK_EX);
      make_room(bytes, keep);
      for (std::size_t i = 0; i < urls.size(); ++i) {
        if (!reserved_.count(urls[i])) continue;
        const std::string path = path_of(urls[i]);
        if (file_size_or_zero(path + ".partial") > 0) continue;  // a cut download's: its NAME.meta resumes it
        LockedFd partial(::open((path + ".partial").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
        write_meta(path + ".meta", Meta{missing[i], "", ""});
      }
    }
    get_all(urls);
  } catch (const Error&) {
    drop_reserved();
    strict_ = false;
    if (no_room_) return false;
    throw;
  }
  drop_reserved();
  strict_ = false;
  return std::all_of(urls.begin(), urls.end(), [&](const std::string& url) { return holds(url); });
}

// Reservations get_all did not take over (their objects found whole meanwhile):
// their locks dropped, and a reservation left empty is reclaimed by the next
// make_room as a cut download's.
void Cache::drop_reserved() {
  for (auto& [url, reservation] : reserved_) ::close(reservation.fd);
  reserved_.clear();
  unreserved_.clear();
}

void add_stats(CacheStats& into, const CacheStats& r) {
  into.hits += r.hits;
  into.misses += r.misses;
  into.evictions += r.evictions;
  into.over_budget = std::max(into.over_budget, r.over_budget);
  into.revalidated += r.revalidated;
  into.changed += r.changed;
  into.revalidation_requests += r.revalidation_requests;
  into.wait_ns += r.wait_ns;
  into.transfer.requests += r.transfer.requests;
  into.transfer.bytes += r.transfer.bytes;
  into.transfer.retries += r.transfer.retries;
  into.transfer.failures += r.transfer.failures;
  into.downloads.insert(into.downloads.end(), r.downloads.begin(), r.downloads.end());
}

bool Cache::whole(const std::string& url) const { return file_size_or_zero(path_of(url)) > 0; }

bool Cache::downloading_elsewhere(const std::string& url) const {
  const std::string lock_path = path_of(url) + ".lock";
  const LockedFd lock(::open(lock_path.c_str(), O_RDWR | O_CLOEXEC));
  if (lock.fd < 0) return false;  // never downloaded here
  if (flock_retry(lock.fd, LOCK_EX | LOCK_NB) == 0) return false;  // free: dropped as `lock` closes
  return errno == EWOULDBLOCK;
}

bool Cache::get_if_whole(const std::string& url) {
  if (holds(url)) return true;
  if (!pin_if_whole(url)) return false;
  ++stats_.hits;
  return true;
}

bool Cache::get_if_room(const std::string& url, std::uint64_t size) {
  const bool missing = size > 0 && !holds(url) && file_size_or_zero(path_of(url)) == 0;
  return get_within_budget({url}, {missing ? size : 0}, path_of(url));
}

bool Cache::get_all_if_room(const std::vector<std::string>& urls, const std::vector<std::uint64_t>& sizes) {
  // Those found whole are pinned first, so that making room for the others
  // cannot evict them.
  std::vector<std::uint64_t> missing(urls.size(), 0);
  for (std::size_t i = 0; i < urls.size(); ++i) {
    if (holds(urls[i]) || pin_if_whole(urls[i])) continue;
    if (sizes.at(i) == 0) return false;
    missing[i] = sizes[i];
  }
  return get_within_budget(urls, missing, "");
}

std::vector<std::string> Cache::get_all(const std::vector<std::string>& urls) {
  std::vector<std::string> paths;
  std::vector<std::string> missing, cached;
  for (const std::string& url : urls) {
    paths.push_back(path_of(url));
    std::vector<std::string>& list = pin_if_whole(url) ? cached : missing;
    if (std::find(list.begin(), list.end(), url) == list.end()) list.push_back(url);
  }
  const std::uint64_t started = now_ns();
  for (const std::string& url : options_.revalidate ? revalidate(cached) : std::vector<std::string>{}) {
    missing.push_back(url);
    cached.erase(std::find(cached.begin(), cached.end(), url));
  }
  for (const std::string& url : urls)
    if (std::find(cached.begin(), cached.end(), url) != cached.end()) ++stats_.hits;
  if (missing.empty()) {
    stats_.wait_ns += now_ns() - started;
    return paths;
  }
  std::string first_error;
  std::size_t first_rank = 0;
  while (!missing.empty() && first_error.empty()) {
    // Take the locks that are free; when every one is busy, wait for the first.
    std::vector<std::unique_ptr<Download>> mine;
    std::vector<std::string> busy;
    for (std::size_t i = 0; i < missing.size(); ++i) {
      const std::string& url = missing[i];
      auto d = std::make_unique<Download>();
      d->url = url;
      d->path = path_of(url);
      const auto reserved = reserved_.find(url);  // its lock held already (get_within_budget)
      const bool held = reserved != reserved_.end();
      d->lock = LockedFd(held ? reserved->second.fd : open_lock_file(d->path + ".lock"));
      if (held) {
        d->reserved = reserved->second.bytes;
        reserved_.erase(reserved);
      }
      const bool wait = i + 1 == missing.size() && mine.empty();
      if (!held && flock_retry(d->lock.fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK) throw Error("cannot lock " + d->path + ".lock: " + errno_text());
        if (!wait) {
          busy.push_back(url);
          continue;
        }
        // Nothing else to do: block until its downloader finishes (or dies).
        const std::string first = busy.empty() ? url : busy.front();
        if (!busy.empty()) {
          busy.erase(busy.begin());
          busy.push_back(url);
          d->url = first;
          d->path = path_of(first);
          d->lock = LockedFd(open_lock_file(d->path + ".lock"));
        }
        if (flock_retry(d->lock.fd, LOCK_EX) != 0) throw Error("cannot lock " + d->path + ".lock: " + errno_text());
      }
      if (pin_if_whole(d->url)) {  // published while we waited
        ++stats_.hits;
        continue;
      }
      // Fetched ahead without a reservation (its download elsewhere ended
      // unpublished): left for a later call to reserve, since its room,
      // judged at the headers, may be gone by then, the body already sent.
      if (unreserved_.count(d->url)) continue;
      mine.push_back(std::move(d));
    }
    missing = busy;

    uv_loop_t loop;
    uv_loop_init(&loop);
    {
      TransferEngine engine(&loop, options_.transfer);
      std::function<void(Download&)> get;
      // The error reported is that of the earliest URL in `urls` that failed,
      // whichever finished first.
      auto fail = [&](const std::string& url, const std::string& e) {
        const auto rank = static_cast<std::size_t>(std::find(urls.begin(), urls.end(), url) - urls.begin());
        if (first_error.empty() || rank < first_rank) {
          first_error = e;
          first_rank = rank;
        }
      };
      auto publish = [&](Download& d, const Response& r) {
        const std::string partial = d.path + ".partial";
        if (!r.ok()) {
          if (r.status == 412 && !d.restarted) {  // the object changed since the partial began: start over
            d.restarted = true;
            d.meta = Meta{};
            ::truncate(partial.c_str(), 0);
            return get(d);
          }
          // An empty partial (a 404, a refused request) resumes nothing:
          // gone, under NAME.lock, which this process holds.
          if (file_size_or_zero(partial) == 0) ::unlink(partial.c_str());
          return fail(d.url, r.error);
        }
        const std::uint64_t have = file_size_or_zero(partial);
        if (d.meta.size > 0 && have != d.meta.size)
          return fail(d.url, d.url + ": downloaded " + std::to_string(have) + " bytes, the store announced " +
                      std::to_string(d.meta.size) + "; not used");
        if (options_.check) {
          if (std::string why = options_.check(d.url, partial); !why.empty()) {
            ::unlink(partial.c_str());  // not resumable: its bytes are wrong
            ::unlink((d.path + ".meta").c_str());
            return fail(d.url, why);
          }
        }
        // Pinned before it is published: an evictor in another process must
        // never find NAME unpinned between the rename and our pin.
        const int fd = ::open(partial.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0 || flock_retry(fd, LOCK_SH) != 0 || ::fsync(fd) != 0) {
          if (fd >= 0) ::close(fd);
          return fail(d.url, "cannot sync " + partial + ": " + errno_text());
        }
        if (::rename(partial.c_str(), d.path.c_str()) != 0) {
          ::close(fd);
          return fail(d.url, "cannot publish " + d.path + ": " + errno_text());
        }
        pins_[d.url] = fd;
        stale_.erase(d.url);  // NAME.meta stays: the version of what NAME now holds
        ++stats_.misses;
        if (stats_.downloads.size() < 100'000) stats_.downloads.push_back({d.url, d.start_ns, now_ns(), d.meta.size});
        d.lock = LockedFd();  // waiters may go: they find it whole
      };
      // One GET an object, no HEAD first: its headers bring the size, ETag
      // and Last-Modified, and on_headers makes room under the budget and
      // writes NAME.meta (the reservation other processes count, and the
      // version a later resume sends in If-Match) before any body byte is
      // kept. A partial left by a cut download resumes with Range from its
      // length and If-Match on the ETag NAME.meta holds for it; 412 (the
      // object changed since) starts over from byte 0.
      get = [&](Download& d) {
        const std::string partial = d.path + ".partial";
        std::uint64_t offset = file_size_or_zero(partial);
        if (d.meta.etag.empty() || d.meta.size == 0 || offset >= d.meta.size) offset = 0;
        if (offset == 0 && ::truncate(partial.c_str(), 0) != 0 && errno != ENOENT)
          return fail(d.url, "cannot truncate " + partial + ": " + errno_text());
        const std::string match = offset > 0 ? d.meta.etag : std::string();
        engine.submit(
            {.url = d.url, .file = partial, .offset = offset, .if_match = match},
            [&, dp = &d](const Response& r) { publish(*dp, r); },
            [&, dp = &d](const Response& h) -> std::string {
              try {
                dp->meta = {h.object_size, h.etag, h.last_modified};
                LockedFd budget(open_lock_file(options_.dir + "/.budget.lock"));
                flock_retry(budget.fd, LOCK_EX);
                // Room reserved before the request stands: the node's
                // processes have counted it since. Judged again here, it
                // could be found taken by their needed downloads (which may
                // pass the limit), and the download was refused after the
                // store had sent it, then made again: a shard sent twice.
                if (h.object_size > dp->reserved) make_room(h.object_size, dp->path);
                write_meta(dp->path + ".meta", dp->meta);  // the reservation, before others count
                return {};
              } catch (const Error& e) {
                return e.what();
              }
            });
      };
      for (auto& dp : mine) {
        dp->start_ns = now_ns();
        // A partial's version: what the download that left it announced.
        if (file_size_or_zero(dp->path + ".partial") > 0) dp->meta = read_meta(dp->path + ".meta");
        get(*dp);
      }
      uv_run(&loop, UV_RUN_DEFAULT);
      const TransferStats& s = engine.stats();
      stats_.transfer.requests += s.requests;
      stats_.transfer.bytes += s.bytes;
      stats_.transfer.retries += s.retries;
      stats_.transfer.failures += s.failures;
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
  }
  stats_.wait_ns += now_ns() - started;
  if (!first_error.empty()) throw Error(first_error);
  return paths;
}

}  // namespace sluice::remote
