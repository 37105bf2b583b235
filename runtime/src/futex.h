// futex.h: sleeping on a 32-bit word of shared memory, across processes.
#pragma once

#include <atomic>
#include <cstdint>

namespace sluice::detail {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

// Sleeps while *word == expected, at most timeout_ms (< 0: no limit). Returns
// at once if the word differs; may return spuriously. Not FUTEX_PRIVATE: the
// word may be shared with other processes through a MAP_SHARED mapping.
void futex_wait(const std::atomic<std::uint32_t>& word, std::uint32_t expected, int timeout_ms);

// Wakes every process sleeping on word.
void futex_wake_all(const std::atomic<std::uint32_t>& word);

}  // namespace sluice::detail
