#include "sluice/text/mixing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sluice/error.h"
#include "sluice/plan.h"

namespace sluice::text {
namespace {

constexpr std::uint64_t kMaxPeriod = 10000;

// Integer quotas with sum P for the normalized weights.
std::vector<std::uint64_t> quotas(const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) total += w;
  for (std::uint64_t P = 1; P <= kMaxPeriod; ++P) {
    std::vector<std::uint64_t> q;
    bool exact = true;
    for (double w : weights) {
      const double x = w / total * static_cast<double>(P);
      const double r = std::round(x);
      if (std::fabs(x - r) > 1e-9 || r < 1) {
        exact = false;
        break;
      }
      q.push_back(static_cast<std::uint64_t>(r));
    }
    if (exact && std::accumulate(q.begin(), q.end(), std::uint64_t{0}) == P) return q;
  }
  // Largest remainder, each source at least one slot.
  std::vector<std::uint64_t> q(weights.size());
  std::vector<double> rest(weights.size());
  std::uint64_t used = 0;
  for (std::size_t s = 0; s < weights.size(); ++s) {
    const double x = weights[s] / total * static_cast<double>(kMaxPeriod);
    q[s] = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::floor(x)));
    rest[s] = x - std::floor(x);
    used += q[s];
  }
  std::vector<std::size_t> order(weights.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rest[a] > rest[b]; });
  for (std::size_t i = 0; used < kMaxPeriod; i = (i + 1) % order.size(), ++used) ++q[order[i]];
  return q;
}

}  // namespace

MixSchedule::MixSchedule(const std::vector<double>& weights) {
  if (weights.empty()) throw Error("sluice.mix: no source given");
  for (std::size_t s = 0; s < weights.size(); ++s)
    if (!(weights[s] > 0) || !std::isfinite(weights[s]))
      throw Error("sluice.mix: the weight of source " + std::to_string(s + 1) + " must be positive, got " +
                  std::to_string(weights[s]));
  quota_ = quotas(weights);
  const std::uint64_t P = std::accumulate(quota_.begin(), quota_.end(), std::uint64_t{0});
  std::vector<std::uint64_t> have(quota_.size(), 0);
  pattern_.reserve(P);
  before_.reserve(P);
  for (std::uint64_t t = 0; t < P; ++t) {
    std::size_t best = 0;
    std::int64_t best_deficit = 0;
    for (std::size_t s = 0; s < quota_.size(); ++s) {
      // deficit * P, in integers: (t + 1) * q_s - P * have_s
      const auto deficit = static_cast<std::int64_t>((t + 1) * quota_[s]) - static_cast<std::int64_t>(P * have[s]);
      if (s == 0 || deficit > best_deficit) best = s, best_deficit = deficit;
    }
    pattern_.push_back(static_cast<std::uint32_t>(best));
    before_.push_back(static_cast<std::uint32_t>(have[best]));
    ++have[best];
  }
  for (std::size_t s = 0; s < quota_.size(); ++s)
    if (have[s] != quota_[s]) throw Error("sluice.mix: internal: the schedule misses its quotas");
}

std::uint64_t MixSchedule::rank(std::uint64_t g) const {
  const std::uint64_t P = pattern_.size();
  const std::uint64_t t = g % P;
  return (g / P) * quota_[pattern_[t]] + before_[t];
}

std::uint64_t MixSchedule::count(std::uint32_t source, std::uint64_t n) const {
  const std::uint64_t P = pattern_.size();
  std::uint64_t c = (n / P) * quota_[source];
  for (std::uint64_t t = 0; t < n % P; ++t) c += pattern_[t] == source ? 1 : 0;
  return c;
}

Mix::Mix(std::vector<std::shared_ptr<const PackedSource>> sources, const std::vector<double>& weights,
         const MixOptions& options)
    : sources_(std::move(sources)), options_(options) {
  if (sources_.size() != weights.size()) throw Error("sluice.mix: one weight per source");
  phases_.push_back({0, MixSchedule(weights), std::vector<std::uint64_t>(sources_.size(), 0)});
  for (const MixPhase& phase : options_.phases) {
    const Phase& last = phases_.back();
    if (phase.from_row <= last.start)
      throw Error("sluice.mix: phases must start at increasing rows above 0; " + std::to_string(phase.from_row) +
                  " follows " + std::to_string(last.start));
    if (phase.weights.size() != sources_.size())
      throw Error("sluice.mix: the phase from row " + std::to_string(phase.from_row) + " has " +
                  std::to_string(phase.weights.size()) + " weights for " + std::to_string(sources_.size()) + " sources");
    std::vector<std::uint64_t> before(sources_.size());
    for (std::uint32_t s = 0; s < sources_.size(); ++s)
      before[s] = last.before[s] + last.schedule.count(s, phase.from_row - last.start);
    phases_.push_back({phase.from_row, MixSchedule(phase.weights), std::move(before)});
  }
  for (std::size_t s = 1; s < sources_.size(); ++s)
    if (sources_[s]->seq_len() != sources_[0]->seq_len())
      throw Error("sluice.mix: source " + std::to_string(s + 1) + " packs rows of " +
                  std::to_string(sources_[s]->seq_len()) + " tokens, source 1 of " +
                  std::to_string(sources_[0]->seq_len()));
  rows_ = options_.size;
  if (rows_ == 0)
    for (const auto& source : sources_) rows_ += source->rows();
}

Mix::Pick Mix::pick(std::uint64_t epoch, std::uint64_t row) const {
  const std::uint64_t g = epoch * rows_ + row;
  const Phase* phase = &phases_[0];
  for (const Phase& p : phases_)
    if (p.start <= g) phase = &p;
  const std::uint64_t local = g - phase->start;
  const std::uint32_t s = phase->schedule.source(local);
  const std::uint64_t k = phase->before[s] + phase->schedule.rank(local);
  const std::uint64_t n = sources_[s]->rows();
  Pick pick{s, k / n, k % n};
  if (options_.shuffle) {
    // Permutation mixes its key; distinct (source, epoch) give distinct keys.
    const std::uint64_t key = options_.seed ^ (std::uint64_t{s} << 56) ^ (pick.epoch * 0x9e3779b97f4a7c15ULL);
    pick.row = Permutation(n, key)(pick.row);
  }
  return pick;
}

std::uint64_t Mix::order_key(std::uint64_t position) const {
  std::uint64_t h = 0x6d69785f6f726465ULL;
  auto add = [&](std::uint64_t v) {  // splitmix64's finalizer over the running hash
    std::uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    h = z ^ (z >> 31);
  };
  add(rows_);
  add(options_.shuffle ? 1 : 0);
  add(sources_.size());
  for (const auto& source : sources_) add(source->rows()), add(source->seq_len());
  for (const Phase& phase : phases_) {
    if (phase.start > 0 && phase.start >= position) break;  // decides no row before position
    add(phase.start);
    for (std::uint32_t s = 0; s < sources_.size(); ++s) add(phase.schedule.quota(s));
  }
  return h;
}

void Mix::fill(std::uint64_t epoch, std::uint64_t row, const PackedRow& out) const {
  const Pick p = pick(epoch, row);
  sources_[p.source]->fill(p.epoch, p.row, out);
}

std::string Mix::origin(std::uint64_t epoch, std::uint64_t row) const {
  const Pick p = pick(epoch, row);
  return "source " + std::to_string(p.source + 1) + ", its epoch " + std::to_string(p.epoch) + ": " +
         sources_[p.source]->origin(p.epoch, p.row);
}

}  // namespace sluice::text
