// script_producer.h: the Producer that runs a pipeline.lua inside each worker.
//
// Made in the launching process by load_script(); the Loader forks it into
// every worker. start_worker() creates that worker's own LuaJIT state and runs
// the script in it; fill() hands the batch's slot pointers to the engine's
// fill(), which writes every sample's fields in place. A Lua error becomes a
// sluice::Error thrown after lua_pcall has returned, never through Lua frames.
//
// Thread safety: one per worker process, used by that worker's thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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
  std::string dir;                // its directory, absolute: `require` looks here
  std::uint64_t seed = 0;
  std::uint64_t dataset_size = 0;
  std::vector<FieldSpec> fields;  // as load_script resolved them
};

class ScriptProducer final : public Producer {
 public:
  ScriptProducer(WorkerSpec spec, std::shared_ptr<const detail::FillCounters> counters);
  ~ScriptProducer() override;

  void start_worker(std::uint32_t worker_id) override;
  void fill(BatchContext& batch) override;

 private:
  void check_layout(const BatchContext& batch) const;

  WorkerSpec spec_;
  std::shared_ptr<const detail::FillCounters> counters_;
  std::unique_ptr<LuaState> lua_;
  int fill_ref_ = 0;
  std::vector<void*> data_;  // per fill: each field's base pointer in the slot
};

}  // namespace sluice::scripting
