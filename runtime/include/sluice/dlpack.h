// sluice/dlpack.h: how Sluice's element types read in DLPack.
//
// Thread safety: a pure function.
#pragma once

#include "sluice/export.h"

#include <dlpack/dlpack.h>

#include "sluice/dtype.h"

namespace sluice {

// The DLPack type of t. DLPack 0.6 (Debian's) has no boolean type: bool
// travels as an 8-bit unsigned integer.
SLUICE_API DLDataType to_dlpack_dtype(DType t);

}  // namespace sluice
