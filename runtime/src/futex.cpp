#include "futex.h"

#include <ctime>
#include <climits>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace sluice::detail {

namespace {
std::uint32_t* address(const std::atomic<std::uint32_t>& word) {
  return reinterpret_cast<std::uint32_t*>(const_cast<std::atomic<std::uint32_t>*>(&word));
}
}  // namespace

void futex_wait(const std::atomic<std::uint32_t>& word, std::uint32_t expected, int timeout_ms) {
  timespec ts{};
  timespec* tsp = nullptr;
  if (timeout_ms >= 0) {
    ts.tv_sec = timeout_ms / 1000;
    ts.tv_nsec = static_cast<long>(timeout_ms % 1000) * 1000000L;
    tsp = &ts;
  }
  syscall(SYS_futex, address(word), FUTEX_WAIT, expected, tsp, nullptr, 0);
}

void futex_wake_all(const std::atomic<std::uint32_t>& word) {
  syscall(SYS_futex, address(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace sluice::detail
