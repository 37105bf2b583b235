// script_producer.h: the Producer that runs a pipeline.lua inside each worker.
//
// Made in the launching process by load_script(); the Loader forks it into
// every worker. start_worker() creates that worker's own LuaJIT state and runs
// the script in it, and, for a native source, the worker's RecordFeed (its
// libuv loop: after fork). upcoming() starts the reads of announced batches;
// fill() hands the batch's slot pointers and the feed to the engine's fill(),
// which takes each sample's record and writes its fields in place, calling
// BatchContext::begin_sample for each row, so that a bad record (thrown after
// the Lua call returns) is blamed on exactly its sample. A Lua error becomes a
// sluice::Error thrown after lua_pcall has returned, never through Lua frames.
//
// Thread safety: one per worker process, used by that worker's thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data_source.h"
#include "record_feed.h"
#include "sluice/options.h"
#include "sluice/producer.h"

namespace sluice::detail {
class FillCounters;
}

namespace sluice::scripting {

class LuaState;

// What a worker needs to run the script as the launching process did.
struct WorkerSpec {
  std::string path;               // the script, as the user named it
  std::string text;               // its contents when load_script ran it: what every worker runs
  std::string dir;                // its directory, absolute: `require` looks here
  std::uint64_t seed = 0;
  std::uint64_t dataset_size = 0;
  std::vector<FieldSpec> fields;  // as load_script resolved them
  // A native source (null for sluice.range), opened by load_script, and its
  // signature (sluice.lua), which the worker's script must reproduce.
  std::shared_ptr<const DataSource> source;
  std::string source_signature;
  FeedOptions feed;               // worker: set per worker in start_worker
};

class ScriptProducer final : public Producer {
 public:
  ScriptProducer(WorkerSpec spec, std::shared_ptr<const detail::FillCounters> counters);
  ~ScriptProducer() override;

  void start_worker(std::uint32_t worker_id) override;
  void look_ahead(const EpochPlan& plan, std::uint64_t end_seq) override;
  void fill(BatchContext& batch) override;
  void upcoming(std::uint64_t epoch, std::uint64_t batch, std::span<const std::uint64_t> samples) override;

 private:
  void check_layout(const BatchContext& batch) const;
  void report_remote();

  WorkerSpec spec_;
  std::shared_ptr<const detail::FillCounters> counters_;
  std::unique_ptr<LuaState> lua_;
  int fill_ref_ = 0;
  std::vector<void*> data_;  // per fill: each field's base pointer in the slot
  std::unique_ptr<RecordFeed> feed_;  // native sources: this worker's reads
  std::uint64_t decoded_reported_ = 0;  // feed_'s row groups decoded, as added to counters_
  std::uint64_t gathered_reported_ = 0; // feed_'s Parquet rows gathered, as added to counters_
  FeedHost host_;
  remote::CacheStats remote_reported_;  // what report_remote() last sent
  std::uint64_t wait_reported_ = 0;
};

}  // namespace sluice::scripting
