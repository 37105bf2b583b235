// memcpy_baseline.h: the yardstick of the transport case.
//
// Thread safety: each call owns its buffers; calls may run concurrently, but
// then they measure each other too.
#pragma once

#include <cstddef>

namespace sluice::bench {

// Single-thread memcpy bandwidth between two distinct pre-faulted buffers of
// `bytes` bytes: the median over `copies` timed copies, after one untimed
// copy, in GB/s (10^9 bytes copied per second).
double memcpy_gb_per_s(std::size_t bytes, int copies);

}  // namespace sluice::bench
