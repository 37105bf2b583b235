// cpu_relax.h: the hint a spin-wait loop gives the CPU between two polls.
#pragma once

namespace sluice::detail {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  asm volatile("" ::: "memory");
#endif
}

}  // namespace sluice::detail
