"""pin_memory=True: the loader's shared-memory arena page-locked for CUDA.

Every batch lives in one arena (Loader.memory()), so pinning is one
cudaHostRegister of it when the workers start (through torch's binding of the
CUDA runtime), not a copy per batch as DataLoader's pin thread makes: a
tensor from a slot is then pinned memory, and .cuda(non_blocking=True) copies
it asynchronously. The registration ends before the arena may go: at close(),
before a restart (load_state_dict maps a new arena, often at the same
address), and when the Loader is collected (batches still alive stay valid,
as pageable memory).

Where torch has no CUDA device (this build's CI, a CPU-only torch) the batches
stay pageable and a RuntimeWarning says so once, as DataLoader warns.
"""
import warnings

from ._sluice import Error


class Pinning:
    def __init__(self):
        self._region = None  # (address, size) registered with CUDA
        self._warned = False

    def pin(self, region, what):
        """Page-locks region = (address, size); None: nothing to pin
        (workers=0). what: the memory, for the warning. Call unpin() before
        the memory goes: a restart maps a new arena, often at the same address."""
        self.unpin()
        try:
            import torch
            usable = torch.cuda.is_available()
        except ImportError:
            usable = False
        if not usable or region is None:
            if not self._warned:
                why = "there is no CUDA device here" if not usable else "nothing is shared to pin"
                warnings.warn("pin_memory=True, but %s: %s stays pageable host memory" % (why, what),
                              RuntimeWarning, stacklevel=5)
                self._warned = True
            return
        address, size = region
        status = int(torch.cuda.cudart().cudaHostRegister(address, size, 0))
        if status != 0:
            raise Error("pin_memory=True: cudaHostRegister of the loader's %d-byte arena failed with CUDA error %d "
                        "(RLIMIT_MEMLOCK, or a driver without host registration of shared memory)" % (size, status))
        self._region = region

    def unpin(self):
        if self._region is None:
            return
        import torch
        torch.cuda.cudart().cudaHostUnregister(self._region[0])
        self._region = None
