#include "sluice/loader.h"

#include <algorithm>
#include <limits>

#include "json.h"
#include "loader_core.h"
#include "owned_resources.h"

namespace sluice {

namespace {

void member(std::string& out, const char* name, std::uint64_t value) {
  out += out.size() > 1 ? ",\"" : "\"";
  out += name;
  out += "\":" + std::to_string(value);
}

void member(std::string& out, const char* name, const std::string& value) {
  out += out.size() > 1 ? ",\"" : "\"";
  out += name;
  out += "\":";
  detail::append_json_string(out, value);
}

}  // namespace

std::string Stats::to_json() const {
  std::string out = "{";
  member(out, "batches_delivered", batches_delivered);
  member(out, "samples_delivered", samples_delivered);
  member(out, "bytes_delivered", bytes_delivered);
  member(out, "consumer_wait_ns", consumer_wait_ns);
  member(out, "consumer_waits", consumer_waits);
  member(out, "max_in_flight", max_in_flight);
  member(out, "first_batch_ns", first_batch_ns);
  member(out, "slots_full_ns", slots_full_ns);
  member(out, "worker_fill_ns", worker_fill_ns);
  member(out, "worker_idle_ns", worker_idle_ns);
  member(out, "worker_cpu_ns", worker_cpu_ns);
  member(out, "worker_runqueue_ns", worker_runqueue_ns);
  member(out, "worker_restarts", worker_restarts);
  member(out, "batches_retried", batches_retried);
  out += ",\"skipped_samples\":[";
  for (std::size_t i = 0; i < skipped_samples.size(); ++i) {
    out += (i ? "," : "") + std::to_string(skipped_samples[i]);
  }
  out += "],\"skip_reasons\":[";
  for (std::size_t i = 0; i < skip_reasons.size(); ++i) {
    if (i) out += ",";
    detail::append_json_string(out, skip_reasons[i]);
  }
  out += "]";
  member(out, "empty_batches", empty_batches);
  member(out, "workers", workers);
  member(out, "autotune", autotune);
  return out + "}";
}

Loader::Loader(Options options) : core_(std::make_shared<detail::LoaderCore>(std::move(options))) {
  core_->start();
}

Loader::~Loader() {
  if (core_) core_->shutdown();
}

Loader& Loader::operator=(Loader&& other) noexcept {
  if (this != &other) {
    if (core_) core_->shutdown();
    core_ = std::move(other.core_);
  }
  return *this;
}

std::optional<Batch> Loader::next() { return core_->next(std::numeric_limits<std::uint64_t>::max()); }

std::optional<Batch> Loader::next_in_epoch(std::uint64_t epoch) { return core_->next(epoch); }

std::optional<Batch> Loader::try_next() {
  return core_->next(std::numeric_limits<std::uint64_t>::max(), std::chrono::milliseconds(0));
}

std::optional<Batch> Loader::next_for(std::chrono::milliseconds timeout) {
  return next_for(timeout, std::numeric_limits<std::uint64_t>::max());
}

std::optional<Batch> Loader::next_for(std::chrono::milliseconds timeout, std::uint64_t last_epoch) {
  return core_->next(last_epoch, std::max(timeout, std::chrono::milliseconds(0)));
}

std::uint64_t fork_generation() { return detail::fork_generation(); }

bool Loader::finished() const { return core_->finished(); }
int Loader::ready_fd() { return core_->ready_fd(); }

void Loader::run(const std::function<void(Batch&)>& fn) {
  while (std::optional<Batch> batch = next()) fn(*batch);
}

void Loader::interrupt() { core_->interrupt(); }
bool Loader::interrupted() const { return core_->interrupted(); }
std::uint32_t Loader::slots() const { return core_->layout().slots; }
std::span<std::byte> Loader::memory() const { return {core_->arena().base(), core_->arena().size()}; }
std::vector<int> Loader::worker_pids() const { return core_->worker_pids(); }

LoaderState Loader::state() const { return core_->state(); }

LoaderState Loader::state_without(const Batch& held) const {
  return core_->state(held.epoch() * core_->plan().batches_per_epoch() + held.index());
}

const Options& Loader::options() const { return core_->options(); }
const EpochPlan& Loader::plan() const { return core_->plan(); }
std::uint64_t Loader::current_epoch() const { return core_->current_epoch(); }
Stats Loader::stats() const { return core_->stats(); }

}  // namespace sluice
