// sluice/text/mixing.h: packed sources mixed by weight, exactly and
// deterministically, as a pure function of the global position.
//
// MixSchedule turns weights w_1..w_n (> 0) into integers q_1..q_n with sum P
// (the smallest P <= 10000 for which every w_s / sum(w) * P is an integer
// within 1e-9, else P = 10000 with largest-remainder rounding), and a pattern
// of P slots: slot t goes to the source with the largest deficit
// (t + 1) * q_s / P - (slots it already has), ties to the first source. So every
// P consecutive positions starting at a multiple of P hold exactly q_s rows of
// source s, and any prefix of n positions holds n * q_s / P rows of s to within
// one (stratified, not only in expectation).
//
// Mix: the row at global position g = epoch * rows() + row comes from source
// s = pattern[g mod P], as that source's k-th row, k = (g div P) * q_s + (slots
// of s before g mod P in the pattern). Source s's own epoch is k div rows_s and
// its row k mod rows_s, permuted per (seed, s, its epoch) when shuffling: a
// small source repeats, a large one is cut, each on its own epochs. Since
// every worker computes this from the position alone, mixing does not depend
// on worker counts, crashes or the world size of a resumed run.
//
// Phases: the weights may change from a global position on (a run resumed
// with new weights adds a phase where it resumes): from phase start g0, source
// s's counter is its count at g0 plus its rank in the new schedule from g0.
// The positions before g0 keep their rows, so a phase added at or after the
// resumed position leaves everything delivered before it unchanged.
//
// Errors: constructors throw sluice::Error (no source, a weight that is not
// positive and finite, sources of different seq_len, phases not in
// increasing order or with the wrong number of weights).
// Thread safety: immutable; fill() is reentrant.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sluice/text/packing.h"

namespace sluice::text {

class MixSchedule {
 public:
  explicit MixSchedule(const std::vector<double>& weights);

  std::uint64_t period() const { return pattern_.size(); }
  std::uint64_t quota(std::uint32_t source) const { return quota_[source]; }  // per period
  // The source of global position g, and that source's row count before g.
  std::uint32_t source(std::uint64_t g) const { return pattern_[g % pattern_.size()]; }
  std::uint64_t rank(std::uint64_t g) const;
  // Rows of `source` among positions [0, n).
  std::uint64_t count(std::uint32_t source, std::uint64_t n) const;

 private:
  std::vector<std::uint64_t> quota_;
  std::vector<std::uint32_t> pattern_;
  std::vector<std::uint32_t> before_;  // slots of pattern_[t]'s source before t
};

struct MixPhase {
  std::uint64_t from_row;        // global position: epoch * rows() + row
  std::vector<double> weights;   // one per source
};

struct MixOptions {
  std::uint64_t size = 0;  // rows per epoch of the mixture; 0: the sources' rows summed
  bool shuffle = false;    // each source's rows permuted per (seed, source, source epoch)
  std::uint64_t seed = 0;
  std::vector<MixPhase> phases = {};  // later weights, by increasing from_row (> 0)
};

class Mix : public PackedSource {
 public:
  Mix(std::vector<std::shared_ptr<const PackedSource>> sources, const std::vector<double>& weights,
      const MixOptions& options);

  std::uint64_t rows() const override { return rows_; }
  std::uint32_t seq_len() const override { return sources_[0]->seq_len(); }
  void fill(std::uint64_t epoch, std::uint64_t row, const PackedRow& out) const override;
  std::string origin(std::uint64_t epoch, std::uint64_t row) const override;

  const MixSchedule& schedule() const { return phases_[0].schedule; }  // the first phase's
  // Which source, its epoch and its row, for the mixture's (epoch, row).
  struct Pick {
    std::uint32_t source;
    std::uint64_t epoch;
    std::uint64_t row;
  };
  Pick pick(std::uint64_t epoch, std::uint64_t row) const;
  // A hash of what decides the picks of global rows [0, position) (the rows
  // per epoch, each source's rows, the shuffle, the phases that start before
  // `position` with their quotas): Options::order_key, which a resume checks.
  std::uint64_t order_key(std::uint64_t position) const;

 private:
  struct Phase {
    std::uint64_t start;
    MixSchedule schedule;
    std::vector<std::uint64_t> before;  // each source's rows before `start`
  };
  std::vector<std::shared_ptr<const PackedSource>> sources_;
  std::vector<Phase> phases_;
  MixOptions options_;
  std::uint64_t rows_ = 0;
};

}  // namespace sluice::text
