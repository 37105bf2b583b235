// counter_rng.h: the per-sample random generator behind ctx.rng.
//
// A stream is keyed by (seed, domain, epoch, index) and is a pure function of
// that key and how many numbers were drawn: sample 17 of epoch 3 gets the same
// numbers in whichever worker, in whatever order, it is made. The generator is
// SplitMix64 run over a counter from the key (Steele, Lea, Flood 2014), the key
// itself a chain of SplitMix64 finalizers over the four inputs.
//
// Thread safety: pure functions of their arguments; a CounterRng is not shared.
#pragma once

#include <cstdint>

namespace sluice::scripting {

// Layout shared with the FFI declaration `sluice_rng` in lua/sluice_native.lua.
struct CounterRng {
  std::uint64_t key;
  std::uint64_t counter;
};

// Streams of different domains never coincide for the same (seed, epoch, index).
inline constexpr std::uint64_t kSampleDomain = 0;  // ctx.rng in map and the source
inline constexpr std::uint64_t kBatchDomain = 1;   // ctx.rng in map_batch (index = batch)

std::uint64_t rng_key(std::uint64_t seed, std::uint64_t domain, std::uint64_t epoch,
                      std::uint64_t index);
// The next 64 random bits.
std::uint64_t rng_next(CounterRng& rng);
// Uniform in [0, 1) with 53 random bits.
double rng_uniform(CounterRng& rng);
// Standard normal (Box-Muller; two draws per call).
double rng_normal(CounterRng& rng);

}  // namespace sluice::scripting
