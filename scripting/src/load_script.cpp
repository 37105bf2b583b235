// load_script: runs pipeline.lua once in the launching process and turns the
// engine's description of it into sluice::Options with a ScriptProducer. The
// description's trial of the first samples is made in a child first
// (trial_child.h).
#include <lua.hpp>
#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>

#include "data_source.h"
#include "fill_counters.h"
#include "lua_state.h"
#include "record_feed.h"
#include "script_producer.h"
#include "sluice/error.h"
#include "sluice/script.h"
#include "trial_child.h"

namespace sluice {
namespace {

// engine.describe's `report`, in the trial's child: the sample's index to
// the fd that is its upvalue (trial_child.h). Never raises.
int lua_report_sample(lua_State* L) {
  const auto fd = static_cast<int>(lua_tointeger(L, lua_upvalueindex(1)));
  const lua_Number index = lua_tonumber(L, 1);
  if (index >= 0) scripting::report_sample(fd, static_cast<std::uint64_t>(index));
  return 0;
}

constexpr std::uint64_t kMaxSeed = std::uint64_t{1} << 53;
constexpr int kLastDType = static_cast<int>(DType::boolean);

// Readers of the plain table engine.describe returns (no metatables: reads
// cannot run Lua code). Each leaves the stack as it found it.
double number_field(lua_State* L, int table, const char* key) {
  lua_getfield(L, table, key);
  const double value = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return value;
}

bool bool_field(lua_State* L, int table, const char* key) {
  lua_getfield(L, table, key);
  const bool value = lua_toboolean(L, -1) != 0;
  lua_pop(L, 1);
  return value;
}

std::string string_at(lua_State* L, int index) {
  std::size_t size = 0;
  const char* text = lua_tolstring(L, index, &size);
  return text ? std::string(text, size) : std::string();
}

std::string string_field(lua_State* L, int table, const char* key) {
  lua_getfield(L, table, key);
  std::string value = string_at(L, -1);
  lua_pop(L, 1);
  return value;
}

std::vector<FieldSpec> read_fields(lua_State* L, int description) {
  std::vector<FieldSpec> fields;
  lua_getfield(L, description, "fields");
  const int list = lua_gettop(L);
  const int count = static_cast<int>(lua_objlen(L, list));
  for (int i = 1; i <= count; ++i) {
    lua_rawgeti(L, list, i);
    const int entry = lua_gettop(L);
    FieldSpec field;
    field.name = string_field(L, entry, "name");
    const int code = static_cast<int>(number_field(L, entry, "dtype"));
    if (code < 0 || code > kLastDType) throw Error("sluice: internal: bad dtype code from the engine");
    field.dtype = static_cast<DType>(code);
    lua_getfield(L, entry, "shape");
    const int dims = static_cast<int>(lua_objlen(L, -1));
    for (int d = 1; d <= dims; ++d) {
      lua_rawgeti(L, -1, d);
      field.shape.push_back(static_cast<std::int64_t>(lua_tonumber(L, -1)));
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    lua_getfield(L, entry, "bytes");
    if (lua_isnumber(L, -1)) field.max_bytes = static_cast<std::uint64_t>(lua_tonumber(L, -1));
    lua_pop(L, 2);
    fields.push_back(std::move(field));
  }
  lua_pop(L, 1);
  return fields;
}

std::vector<std::string> read_notes(lua_State* L, int description) {
  std::vector<std::string> notes;
  lua_getfield(L, description, "notes");
  const int count = static_cast<int>(lua_objlen(L, -1));
  for (int i = 1; i <= count; ++i) {
    lua_rawgeti(L, -1, i);
    notes.push_back(string_at(L, -1));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return notes;
}

// A Parquet source's selected columns, for engine.describe to make the
// fields from the schema when the pipeline has neither map nor fields:
// { file = the first file, columns = { { name, dtype = code (nil: bytes),
// list, fixed_bytes, type = "INT64 (int(64, signed))" }, ... }, max_fields
// = the most fields a batch holds }; nil for other sources.
void push_parquet_schema(lua_State* L, const scripting::DataSource* source) {
  const io::ParquetReader* reader = source != nullptr ? source->parquet_schema() : nullptr;
  if (reader == nullptr) {
    lua_pushnil(L);
    return;
  }
  lua_createtable(L, 0, 3);
  lua_pushnumber(L, static_cast<lua_Number>(max_fields));
  lua_setfield(L, -2, "max_fields");
  const std::string file = source->named(reader->file(0).path());  // a remote file's URL
  lua_pushlstring(L, file.data(), file.size());
  lua_setfield(L, -2, "file");
  const std::vector<std::string>& names = reader->column_names();
  lua_createtable(L, static_cast<int>(names.size()), 0);
  for (std::size_t c = 0; c < names.size(); ++c) {
    const io::ParquetColumnInfo& info = reader->column_infos()[c];
    lua_createtable(L, 0, 5);
    lua_pushlstring(L, names[c].data(), names[c].size());
    lua_setfield(L, -2, "name");
    if (info.dtype) {
      lua_pushnumber(L, static_cast<lua_Number>(static_cast<int>(*info.dtype)));
      lua_setfield(L, -2, "dtype");
    }
    lua_pushboolean(L, info.list ? 1 : 0);
    lua_setfield(L, -2, "list");
    lua_pushnumber(L, static_cast<lua_Number>(info.fixed_bytes));
    lua_setfield(L, -2, "fixed_bytes");
    const std::string type = info.type();
    lua_pushlstring(L, type.data(), type.size());
    lua_setfield(L, -2, "type");
    lua_rawseti(L, -2, static_cast<int>(c + 1));
  }
  lua_setfield(L, -2, "columns");
}

std::vector<std::string> string_list(lua_State* L, int table, const char* key) {
  std::vector<std::string> list;
  lua_getfield(L, table, key);
  if (lua_istable(L, -1)) {
    const int count = static_cast<int>(lua_objlen(L, -1));
    for (int i = 1; i <= count; ++i) {
      lua_rawgeti(L, -1, i);
      list.push_back(string_at(L, -1));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return list;
}

// engine.source_spec()'s plain table, at stack index `table`.
scripting::SourceSpec read_source_spec(lua_State* L, int table) {
  scripting::SourceSpec spec;
  spec.kind = string_field(L, table, "kind");
  spec.paths = string_list(L, table, "paths");
  spec.names = string_list(L, table, "names");
  spec.members = string_list(L, table, "members");
  spec.extensions = string_list(L, table, "extensions");
  lua_getfield(L, table, "index");
  spec.index = lua_isnil(L, -1) ? -1 : (lua_toboolean(L, -1) ? 1 : 0);
  lua_pop(L, 1);
  spec.index_dir = string_field(L, table, "index_dir");
  lua_getfield(L, table, "field");
  if (lua_isstring(L, -1)) spec.field = lua_tostring(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, table, "verify_crc");
  spec.verify_crc = lua_isnil(L, -1) || lua_toboolean(L, -1);
  lua_pop(L, 1);
  spec.shuffle_shards = bool_field(L, table, "shuffle_shards");
  spec.shuffle_buffer = static_cast<std::uint64_t>(number_field(L, table, "shuffle_buffer"));
  spec.size = static_cast<std::uint64_t>(number_field(L, table, "size"));
  spec.row_groups = static_cast<std::uint32_t>(number_field(L, table, "row_groups"));
  lua_getfield(L, table, "dtype");
  if (lua_isstring(L, -1)) spec.dtype = string_at(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, table, "eos");
  spec.eos = lua_isnumber(L, -1) ? static_cast<std::int64_t>(lua_tonumber(L, -1)) : -1;
  lua_pop(L, 1);
  spec.vocab_size = static_cast<std::uint64_t>(number_field(L, table, "vocab_size"));
  spec.window = static_cast<std::uint32_t>(number_field(L, table, "window"));
  spec.tokenizer = string_field(L, table, "tokenizer");
  lua_getfield(L, table, "text");  // sluice.tokens{ text = source, tokenizer = ... }
  if (lua_istable(L, -1)) spec.text.push_back(read_source_spec(L, lua_gettop(L)));
  lua_pop(L, 1);
  spec.shuffle = bool_field(L, table, "shuffle");
  lua_getfield(L, table, "pack");
  if (lua_istable(L, -1)) {
    const int pack = lua_gettop(L);
    spec.seq_len = static_cast<std::uint32_t>(number_field(L, pack, "seq_len"));
    spec.pack_mode = string_field(L, pack, "mode");
    spec.pack_window = static_cast<std::uint32_t>(number_field(L, pack, "window"));
  }
  lua_pop(L, 1);
  lua_getfield(L, table, "phases");  // sluice.mix: { {from_row = n, weights = {...}}, ... }
  if (lua_istable(L, -1)) {
    const int phases = lua_gettop(L);
    const int count = static_cast<int>(lua_objlen(L, phases));
    for (int i = 1; i <= count; ++i) {
      lua_rawgeti(L, phases, i);
      const int entry = lua_gettop(L);
      text::MixPhase phase;
      phase.from_row = static_cast<std::uint64_t>(number_field(L, entry, "from_row"));
      lua_getfield(L, entry, "weights");
      const int n = static_cast<int>(lua_objlen(L, -1));
      for (int k = 1; k <= n; ++k) {
        lua_rawgeti(L, -1, k);
        phase.weights.push_back(lua_tonumber(L, -1));
        lua_pop(L, 1);
      }
      lua_pop(L, 2);
      spec.phases.push_back(std::move(phase));
    }
  }
  lua_pop(L, 1);
  lua_getfield(L, table, "parts");  // sluice.mix: { {spec, weight}, ... }
  if (lua_istable(L, -1)) {
    const int parts = lua_gettop(L);
    const int count = static_cast<int>(lua_objlen(L, parts));
    for (int i = 1; i <= count; ++i) {
      lua_rawgeti(L, parts, i);
      spec.parts.push_back(read_source_spec(L, lua_gettop(L)));
      spec.weights.push_back(number_field(L, lua_gettop(L), "weight"));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return spec;
}

// sluice.lua has checked both names; a name it let through that the runtime
// does not know is a bug between the two, reported as such.
OnError on_error_field(lua_State* L, int table) {
  const std::string name = string_field(L, table, "on_error");
  const auto on_error = parse_on_error(name);
  if (!on_error) throw Error("pipeline description: on_error '" + name + "' is neither fail nor skip");
  return *on_error;
}

SkipFill skip_fill_field(lua_State* L, int table) {
  const std::string name = string_field(L, table, "skip_fill");
  const auto skip_fill = parse_skip_fill(name);
  if (!skip_fill) throw Error("pipeline description: skip_fill '" + name + "' is neither shrink nor repeat");
  return *skip_fill;
}

void push_optional(lua_State* L, const std::optional<std::uint32_t>& value) {
  if (value) {
    lua_pushnumber(L, *value);
  } else {
    lua_pushnil(L);
  }
}

// CPUs this process may run on.
std::uint32_t usable_cores() {
  cpu_set_t cpus;
  return sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? static_cast<std::uint32_t>(CPU_COUNT(&cpus)) : 1;
}

std::string absolute_dir(const std::string& path) {
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(path, error);
  if (error) throw Error("sluice: cannot resolve " + path + ": " + error.message());
  // "a/b/.." normalizes to "a/": without its trailing '/', paths joined to
  // it (and the messages naming them) hold no "//".
  std::string dir = absolute.parent_path().lexically_normal().string();
  if (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// A trial child's remote counts (its download spans left out) as one line
// of its report (trial_child.h), and back: what it downloaded, a shard the
// ranged read of sample 0 could not take from a server, stays counted once
// the child is gone.
constexpr const char* kRemoteLine = "remote";
std::string remote_line(const remote::CacheStats& r) {
  std::string line = kRemoteLine;
  for (const std::uint64_t n : {r.hits, r.misses, r.evictions, r.over_budget, r.revalidated, r.changed,
                                r.revalidation_requests, r.wait_ns, r.transfer.requests, r.transfer.bytes,
                                r.transfer.retries, r.transfer.failures})
    line += ' ' + std::to_string(n);
  return line;
}
void add_remote_line(const std::string& line, remote::CacheStats& into) {
  std::istringstream in(line);
  std::string word;
  remote::CacheStats r;
  if (!(in >> word) || word != kRemoteLine) return;
  if (in >> r.hits >> r.misses >> r.evictions >> r.over_budget >> r.revalidated >> r.changed >>
      r.revalidation_requests >> r.wait_ns >> r.transfer.requests >> r.transfer.bytes >> r.transfer.retries >>
      r.transfer.failures)
    remote::add_stats(into, r);
}

}  // namespace

ScriptWorkerTimes Script::worker_times() const {
  return counters ? counters->totals() : ScriptWorkerTimes{};
}

ScriptRemoteStats Script::remote_stats() const {
  ScriptRemoteStats r = remote;
  const std::shared_ptr<const scripting::LazyRemote> lazy = source ? source->lazy_remote() : nullptr;
  if (!counters || !lazy) return r;
  // Found in the cache counts what the load found; the workers' pins of
  // shards already there are not objects found again.
  const ScriptRemoteStats w = counters->remote_totals();
  r.objects += lazy->urls.size() - lazy->present;
  r.worker_shards = lazy->urls.size();
  r.misses += w.misses;
  r.evictions += w.evictions;
  r.requests += w.requests;
  r.retries += w.retries;
  r.bytes += w.bytes;
  r.worker_wait_ns = w.worker_wait_ns;
  r.over_budget = w.over_budget;
  for (const ScriptDownload& d : w.downloads)
    r.downloads.push_back({lazy->urls.at(std::stoull(d.url)), d.start_ns, d.end_ns, d.bytes});
  return r;
}

std::string Script::sample_file(std::uint64_t id) const { return source ? source->named(source->origin(id)) : ""; }
std::int64_t Script::sample_label(std::uint64_t id) const { return source ? source->label(id) : -1; }
std::vector<std::string> Script::classes() const { return source ? source->classes() : std::vector<std::string>{}; }

void resolve_auto_workers(Options& o) {
  if (o.workers != kAutoWorkers) return;
  o.workers = usable_cores();
  o.max_workers = std::max<std::uint32_t>(o.workers, kAutoMaxWorkers);
}

Script load_script(const ScriptOptions& options) {
  if (options.path.empty()) throw Error("sluice: ScriptOptions.path names no pipeline script");
  if (options.seed && *options.seed >= kMaxSeed) {
    throw Error("sluice: seed " + std::to_string(*options.seed) + " is too large (seeds are below 2^53)");
  }

  scripting::WorkerSpec spec;
  spec.path = options.path;
  spec.dir = absolute_dir(options.path);

  scripting::LuaState lua;
  lua_State* L = lua.get();
  lua.push_engine_function("load");
  lua_pushlstring(L, spec.path.data(), spec.path.size());
  lua_pushlstring(L, spec.dir.data(), spec.dir.size());
  if (auto error = lua.call(2, 1)) throw Error(*error);
  std::size_t text_size = 0;
  const char* text = lua_tolstring(L, -1, &text_size);
  spec.text.assign(text != nullptr ? text : "", text_size);  // what the workers run, whatever the file becomes
  lua_pop(L, 1);

  // A native source is opened here, once; the workers inherit it.
  lua.push_engine_function("source_spec");
  if (auto error = lua.call(0, 1)) throw Error(*error);
  std::uint64_t cache_limit = 0;
  if (lua_istable(L, -1)) {
    scripting::SourceSpec source = read_source_spec(L, lua_gettop(L));
    if (options.shuffle) source.shuffle = *options.shuffle;  // token sources' own shuffle, as pipeline.lua's
    spec.source_signature = string_field(L, lua_gettop(L), "signature");
    const OnError on_error = options.on_error.value_or(on_error_field(L, lua_gettop(L)));
    const std::uint64_t seed =
        options.seed ? *options.seed : static_cast<std::uint64_t>(number_field(L, lua_gettop(L), "seed"));
    try {
      remote::CacheOptions cache = scripting::remote_cache_options();
      if (options.cache_dir) cache.dir = *options.cache_dir;
      if (options.cache_limit_mb) cache.limit = *options.cache_limit_mb << 20;
      cache_limit = cache.limit;
      if (options.remote_retries) cache.transfer.max_retries = *options.remote_retries;
      if (options.remote_timeout_ms) cache.transfer.stall_timeout_ms = *options.remote_timeout_ms;
      spec.source = scripting::DataSource::open(source, on_error, seed, cache);
    } catch (const Error& e) {
      throw Error(spec.path + ": " + e.what());
    }
    spec.feed.on_error = on_error;
  }
  lua_pop(L, 1);

  // engine.describe, which makes the trial: with the samples that ended a
  // child's trial (met as failures), and in a child, the fd its report goes
  // to (-1: none). The record feed is made by the process that makes the
  // trial, so that the child shares no reader and no file offset with this
  // one. Leaves the description on the stack.
  std::map<std::uint64_t, std::string> crashed;
  remote::CacheStats trial_remote;  // the launcher's trial's reads
  remote::CacheStats child_remote;  // the children's (report_line)
  auto describe = [&](int report_fd) -> std::optional<std::string> {
    std::unique_ptr<scripting::RecordFeed> feed;
    scripting::FeedHost host;
    if (spec.source) {
      feed = scripting::RecordFeed::for_launcher(spec.source, spec.feed);
      host.feed = feed.get();
    }
    lua.push_engine_function("describe");
    push_optional(L, options.epochs);
    push_optional(L, options.workers);
    push_optional(L, options.prefetch);
    if (options.seed) {
      lua_pushnumber(L, static_cast<lua_Number>(*options.seed));
    } else {
      lua_pushnil(L);
    }
    lua_pushnumber(L, static_cast<lua_Number>(spec.source ? spec.source->size() : 0));
    lua_pushlightuserdata(L, &host);
    if (options.on_error) {
      lua_pushstring(L, name_of(*options.on_error));
    } else {
      lua_pushnil(L);
    }
    push_parquet_schema(L, spec.source.get());
    lua_createtable(L, 0, static_cast<int>(crashed.size()));
    for (const auto& [index, message] : crashed) {
      lua_pushnumber(L, static_cast<lua_Number>(index));
      lua_pushlstring(L, message.data(), message.size());
      lua_settable(L, -3);
    }
    if (report_fd >= 0) {
      lua_pushinteger(L, report_fd);
      lua_pushcclosure(L, lua_report_sample, 1);
    } else {
      lua_pushnil(L);
    }
    std::optional<std::string> error = lua.call(10, 1);
    if (feed && report_fd < 0) trial_remote = feed->remote_stats();
    if (feed && report_fd >= 0) scripting::report_line(report_fd, remote_line(feed->remote_stats()));
    return error;
  };
  // Until a child gets through its trial: each sample that ended one is
  // passed over by the next (under on_error = "skip"; else it is the error).
  const std::uint32_t trial_timeout_ms = options.batch_timeout_ms.value_or(Options{}.batch_timeout_ms);
  for (;;) {
    const scripting::TrialOutcome trial =
        scripting::run_trial_in_child([&](int report_fd) { describe(report_fd); }, trial_timeout_ms);
    for (const std::string& line : trial.lines) add_remote_line(line, child_remote);
    if (trial.finished) break;
    if (!trial.sample) throw Error(spec.path + ": the trial run's process " + trial.ended + " before it made a sample");
    if (crashed.count(*trial.sample) != 0)
      throw Error(spec.path + ": internal: the trial run's process ended again on sample " +
                  std::to_string(*trial.sample) + ", which it was told to pass over");
    crashed[*trial.sample] = spec.path + ": the trial run of sample " + std::to_string(*trial.sample) +
                             " (made once at load, in a child process, to check the pipeline and infer its fields) " +
                             trial.ended;
  }
  if (auto error = describe(-1)) throw Error(*error);
  const int description = lua_gettop(L);

  Script script;
  script.path = options.path;
  script.text = spec.text;
  script.device = string_field(L, description, "device");
  script.notes = read_notes(L, description);

  Options& o = script.options;
  o.dataset_size = static_cast<std::uint64_t>(number_field(L, description, "dataset_size"));
  o.batch_size = static_cast<std::uint32_t>(number_field(L, description, "batch_size"));
  o.drop_last = bool_field(L, description, "drop_last");
  o.shuffle = bool_field(L, description, "shuffle");
  // The plan's shuffle, overridden: never a mixture's, whose order is its
  // schedule (describe() leaves pipeline.lua's out the same way).
  if (options.shuffle) o.shuffle = *options.shuffle && !(spec.source && spec.source->kind() == "mix");
  o.shuffle_window = static_cast<std::uint32_t>(number_field(L, description, "shuffle_window"));
  if (options.shuffle_window) o.shuffle_window = *options.shuffle_window;  // before the row groups kept follow it
  o.seed = static_cast<std::uint64_t>(number_field(L, description, "seed"));
  o.epochs = static_cast<std::uint32_t>(number_field(L, description, "epochs"));
  o.workers = static_cast<std::uint32_t>(number_field(L, description, "workers"));
  o.slots = static_cast<std::uint32_t>(number_field(L, description, "prefetch"));
  o.memory_budget_mb = static_cast<std::uint64_t>(number_field(L, description, "memory_budget_mb"));
  o.ordered = bool_field(L, description, "ordered");
  o.on_error = on_error_field(L, description);  // the override included
  o.skip_fill = skip_fill_field(L, description);
  if (options.batch_timeout_ms) o.batch_timeout_ms = *options.batch_timeout_ms;
  o.fields = read_fields(L, description);
  spec.feed.on_error = o.on_error;
  spec.feed.read_ahead = static_cast<std::uint32_t>(number_field(L, description, "read_ahead"));
  spec.feed.io_threads = static_cast<std::uint32_t>(number_field(L, description, "io_threads"));
  spec.feed.prefetch_bytes = options.remote_prefetch_mb.value_or(256) << 20;
  lua_pop(L, 1);

  const bool auto_workers = o.workers == kAutoWorkers;
  resolve_auto_workers(o);
  if (spec.source) {
    for (const std::string& note : spec.source->notes()) {
      script.notes.push_back(note);
      if (scripting::is_left_out_note(note)) script.left_out.push_back(note);
    }
    remote::CacheStats r = spec.source->remote_stats();
    // The trial's shard is among the workers' objects (Script::remote_stats):
    // its download counts, its lookups are no more objects.
    const std::uint64_t objects = r.hits + r.misses, hits = r.hits;
    remote::add_stats(r, trial_remote);
    remote::add_stats(r, child_remote);
    script.remote = {.objects = objects, .hits = hits, .misses = r.misses, .evictions = r.evictions,
                     .requests = r.transfer.requests, .retries = r.transfer.retries, .bytes = r.transfer.bytes,
                     .wait_ns = r.wait_ns, .revalidated = r.revalidated, .changed = r.changed, .downloads = {}};
    for (const remote::DownloadSpan& d : r.downloads)
      script.remote.downloads.push_back({d.url, d.start_ns, d.end_ns, d.bytes});
    script.remote.cache_limit = cache_limit;
    if (spec.source->mode() == scripting::DataSource::Mode::stream && auto_workers) {
      o.max_workers = 0;
      script.notes.push_back("workers = \"auto\" keeps " + std::to_string(o.workers) + " workers: sluice." +
                             spec.source->kind() + " streams a partition of its shards per worker");
    }
    if (spec.source->mode() == scripting::DataSource::Mode::stream) {
      const auto shards = static_cast<std::uint32_t>(spec.source->shard_count());
      if (o.workers > shards) {
        script.notes.push_back("sluice." + spec.source->kind() + " streams " + std::to_string(shards) +
                               " shard" + (shards == 1 ? "" : "s") + ", one partition per worker: using " +
                               std::to_string(shards) + " worker" + (shards == 1 ? "" : "s") + " instead of " +
                               std::to_string(o.workers));
        o.workers = shards;
      }
      spec.feed.workers = o.workers;
    }
  }

  if (spec.source) o.shard_sizes = spec.source->shard_sizes();
  if (spec.source) o.order_key = spec.source->order_key();
  // The locality shuffle over Parquet row groups: a batch reads the groups
  // of its window, or of two at a window's end, each group once (its rows
  // are gathered together) and the windows in the order of its positions,
  // so a reader that keeps the k groups it decoded last decodes each once
  // per epoch. Not more: each group kept beyond those is buffers of a fresh
  // group's size that a worker faults in once more (the bench measured the
  // first epoch paying it).
  const bool parquet = spec.source && spec.source->mode() == scripting::DataSource::Mode::parquet;
  if (parquet && o.shuffle && o.shuffle_window > 0)
    spec.feed.row_groups = static_cast<std::uint32_t>(std::min<std::uint64_t>(o.shuffle_window, 1024));
  // The global shuffle reads any row group at any moment: a worker that
  // keeps 2 decoded decodes a group for nearly every row (10-25x slower).
  // A table up to kKeepDecoded uncompressed is kept decoded whole in each
  // worker; a larger one is told what to set.
  if (parquet && o.shuffle && o.shuffle_window == 0) {
    constexpr std::uint64_t kKeepDecoded = 256ULL << 20;
    std::uint64_t groups = 0, bytes = 0;
    for (const auto& file : spec.source->parquet_files())
      for (const io::ParquetRowGroupInfo& g : file->row_groups()) ++groups, bytes += g.uncompressed_bytes;
    const std::uint32_t kept = spec.source->parquet_row_groups();
    const std::string size = std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
    if (kept == 0 && groups > 2 && groups <= 1024 && bytes <= kKeepDecoded) {
      spec.feed.row_groups = static_cast<std::uint32_t>(groups);
      script.notes.push_back("sluice.parquet: the global shuffle reads its " + std::to_string(groups) +
                             " row groups in any order: each worker keeps them all decoded (" + size +
                             " uncompressed; row_groups = n keeps n instead)");
    } else if (groups > std::max<std::uint32_t>(kept, 2)) {
      script.notes.push_back("sluice.parquet: the global shuffle reads its " + std::to_string(groups) +
                             " row groups (" + size + " uncompressed) in any order, and a worker keeps " +
                             std::to_string(std::max<std::uint32_t>(kept, 2)) +
                             " decoded (row_groups): most rows decode a group. shuffle_window = k shuffles k row "
                             "groups at a time and decodes each once an epoch; row_groups = " + std::to_string(groups) +
                             " keeps all of them decoded in each worker");
    }
  }
  script.source = spec.source;
  spec.seed = o.seed;
  spec.dataset_size = o.dataset_size;
  spec.fields = o.fields;
  auto counters = std::make_shared<detail::FillCounters>();
  o.producer = std::make_shared<scripting::ScriptProducer>(std::move(spec), counters);
  script.counters = std::move(counters);
  return script;
}

}  // namespace sluice
