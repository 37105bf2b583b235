#include "script_producer.h"

#include <lua.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "ffi_api.h"
#include "fill_counters.h"
#include "lua_state.h"
#include "sluice/error.h"

namespace sluice::scripting {
namespace {

std::uint64_t elapsed_ns(std::chrono::steady_clock::time_point since) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since)
          .count());
}

// Pushes {dataset_size, seed, fields = {{name, dtype, shape}}} for engine.start_worker.
void push_spec(lua_State* L, const WorkerSpec& spec) {
  lua_createtable(L, 0, 4);
  lua_pushnumber(L, static_cast<lua_Number>(spec.dataset_size));
  lua_setfield(L, -2, "dataset_size");
  lua_pushnumber(L, static_cast<lua_Number>(spec.seed));
  lua_setfield(L, -2, "seed");
  lua_createtable(L, static_cast<int>(spec.fields.size()), 0);
  for (std::size_t i = 0; i < spec.fields.size(); ++i) {
    const FieldSpec& field = spec.fields[i];
    lua_createtable(L, 0, 3);
    lua_pushlstring(L, field.name.data(), field.name.size());
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, static_cast<lua_Integer>(field.dtype));
    lua_setfield(L, -2, "dtype");
    lua_createtable(L, static_cast<int>(field.shape.size()), 0);
    for (std::size_t d = 0; d < field.shape.size(); ++d) {
      lua_pushnumber(L, static_cast<lua_Number>(field.shape[d]));
      lua_rawseti(L, -2, static_cast<int>(d + 1));
    }
    lua_setfield(L, -2, "shape");
    if (field.max_bytes > 0) {
      lua_pushnumber(L, static_cast<lua_Number>(field.max_bytes));
      lua_setfield(L, -2, "bytes");
    }
    lua_rawseti(L, -2, static_cast<int>(i + 1));
  }
  lua_setfield(L, -2, "fields");
  lua_pushlstring(L, spec.source_signature.data(), spec.source_signature.size());
  lua_setfield(L, -2, "source_signature");
}

}  // namespace

ScriptProducer::ScriptProducer(WorkerSpec spec, std::shared_ptr<const detail::FillCounters> counters)
    : spec_(std::move(spec)), counters_(std::move(counters)) {}

ScriptProducer::~ScriptProducer() = default;

void ScriptProducer::start_worker(std::uint32_t worker_id) {
  const auto started = std::chrono::steady_clock::now();
  if (spec_.source) {
    FeedOptions options = spec_.feed;
    options.worker = worker_id;
    feed_ = RecordFeed::for_worker(spec_.source, options);
    host_.feed = feed_.get();
  }
  lua_ = std::make_unique<LuaState>();
  lua_State* L = lua_->get();

  lua_->push_engine_function("load");
  lua_pushlstring(L, spec_.path.data(), spec_.path.size());
  lua_pushlstring(L, spec_.dir.data(), spec_.dir.size());
  lua_pushlstring(L, spec_.text.data(), spec_.text.size());
  if (auto error = lua_->call(3, 0)) throw Error(*error);

  lua_->push_engine_function("start_worker");
  push_spec(L, spec_);
  if (auto error = lua_->call(1, 0)) throw Error(*error);

  lua_->push_engine_function("fill");
  fill_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  data_.resize(spec_.fields.size());
  if (counters_) counters_->add_start(elapsed_ns(started));
}

void ScriptProducer::check_layout(const BatchContext& batch) const {
  bool same = batch.field_count() == spec_.fields.size();
  for (std::size_t f = 0; same && f < spec_.fields.size(); ++f) {
    const FieldSpec& want = spec_.fields[f];
    const FieldSpec& got = batch.field(f);
    same = got.name == want.name && got.dtype == want.dtype && got.shape == want.shape;
  }
  if (!same) {
    throw Error("sluice: the Loader's fields differ from those of " + spec_.path +
                "; Options.fields of a script must not be edited");
  }
}

void ScriptProducer::fill(BatchContext& batch) {
  if (!lua_) throw Error("sluice: fill() before start_worker() in the script producer");
  check_layout(batch);
  const auto started = std::chrono::steady_clock::now();
  for (std::size_t f = 0; f < data_.size(); ++f) data_[f] = batch.data(f);
  sluice_fill_view view{};
  view.epoch = batch.epoch();
  view.batch = batch.batch_index();
  view.worker = batch.worker_id();
  view.size = static_cast<std::uint32_t>(batch.size());
  view.samples = batch.samples().data();
  view.data = data_.data();
  view.host = &host_;
  host_.batch = &batch;
  // What the batch's downloads spent is counted on every way out, a shard
  // that failed to download included; counting never takes the place of the
  // batch's own error.
  struct ReportRemote {
    ScriptProducer* self;
    ~ReportRemote() {
      try {
        if (self->feed_ && self->counters_) self->report_remote();
      } catch (...) {
      }
    }
  } report{this};
  if (feed_) feed_->begin_batch(batch.epoch(), batch.batch_index(), batch.samples());

  lua_State* L = lua_->get();
  lua_rawgeti(L, LUA_REGISTRYINDEX, fill_ref_);
  lua_pushlightuserdata(L, &view);
  std::optional<std::string> error = lua_->call(1, 0);
  host_.batch = nullptr;
  if (error) throw Error(*error);
  if (counters_) {
    counters_->add_fill(elapsed_ns(started), batch.size());
    if (feed_) {
      const std::uint64_t decoded = feed_->row_groups_decoded(), gathered = feed_->parquet_rows_gathered();
      counters_->add_parquet(decoded - std::exchange(decoded_reported_, decoded),
                             gathered - std::exchange(gathered_reported_, gathered));
    }
  }
}

// The feed's remote fetching since the last report, to the shared counters.
void ScriptProducer::report_remote() {
  const remote::CacheStats now = feed_->remote_stats();
  const std::uint64_t wait = feed_->remote_wait_ns();
  const remote::CacheStats& was = remote_reported_;
  ScriptRemoteStats delta;
  delta.misses = now.misses - was.misses;
  delta.evictions = now.evictions - was.evictions;
  delta.requests = now.transfer.requests - was.transfer.requests;
  delta.retries = now.transfer.retries - was.transfer.retries;
  delta.bytes = now.transfer.bytes - was.transfer.bytes;
  delta.wait_ns = now.wait_ns - was.wait_ns;
  delta.worker_wait_ns = wait - wait_reported_;
  counters_->add_remote(delta, now.over_budget);
  remote_reported_ = now;
  wait_reported_ = wait;
  if (!spec_.source->lazy_remote()) return;
  const std::vector<std::string>& urls = spec_.source->lazy_remote()->urls;
  for (const remote::DownloadSpan& d : feed_->take_downloads()) {
    const auto it = std::find(urls.begin(), urls.end(), d.url);
    if (it != urls.end())
      counters_->add_download(static_cast<std::uint32_t>(it - urls.begin()), d.start_ns, d.end_ns, d.bytes);
  }
}

void ScriptProducer::look_ahead(const EpochPlan& plan, std::uint64_t end_seq) {
  if (feed_) feed_->look_ahead(plan, end_seq);
}

void ScriptProducer::upcoming(std::uint64_t epoch, std::uint64_t batch, std::span<const std::uint64_t> samples) {
  if (feed_) feed_->upcoming(epoch, batch, samples);
}

}  // namespace sluice::scripting
