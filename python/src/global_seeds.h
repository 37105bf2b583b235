// global_seeds.h: per-sample seeds for the global random generators a
// Python dataset may draw from.
//
// Before each sample (dataset[index], fill(index, out), sequence[b]) the
// worker seeds, from the sample's key (seed, epoch, index), the key of
// sluice.rng():
//   Python's `random`            random.seed(k)           (64 bits of k)
//   NumPy's legacy global state  numpy.random.seed(k')    (32 bits: its int seed)
//   torch's default CPU generator, only where torch is imported:
//                                torch.default_generator.manual_seed(k'')
//                                (its Mersenne Twister keeps 32 bits)
// where k, k', k'' are a 64-bit hash of the key, one per generator (so that
// random.random() and numpy.random.random() do not draw the same numbers).
// Augmentations (torchvision's RandomResizedCrop, np.random.rand, random.random)
// then differ across samples and workers, and are the same for any worker
// count, a retry after a crash and a resume, as sluice.rng() is.
//
// The generators' bound methods are looked up in sys.modules (nothing is
// imported) and kept once found; torch is looked up again before each sample
// until it is there. Cost, measured by tools/bench/python/seed_cost.py: some
// 6 us a sample, most of it Python's random.seed (init_by_array).
//
// Thread safety: one per thread holding the GIL (a worker has one).
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>

#include "sluice/error.h"

namespace sluice::python {

std::string python_error(const std::string& what);  // dataset_producer.h

class GlobalSeeds {
 public:
  GlobalSeeds() = default;
  GlobalSeeds(const GlobalSeeds&) = delete;
  GlobalSeeds& operator=(const GlobalSeeds&) = delete;
  ~GlobalSeeds() {
    // A worker ends in _exit; the host may destroy one without the GIL (a
    // Loader freed on another thread): the references are left to the process.
  }

  // Throws Error with the Python traceback if a seed call fails.
  void seed(std::uint64_t seed, std::uint64_t epoch, std::uint64_t index) {
    find();
    const std::uint64_t key = mix(mix(mix(seed ^ 0x5eed5eed5eed5eedULL) ^ epoch) ^ index);
    if (random_seed_) call(random_seed_, PyLong_FromUnsignedLongLong(mix(key ^ 1)), "random.seed");
    if (numpy_seed_) call(numpy_seed_, PyLong_FromUnsignedLong(static_cast<unsigned long>(mix(key ^ 2) >> 32)), "numpy.random.seed");
    if (torch_seed_) call(torch_seed_, PyLong_FromUnsignedLongLong(mix(key ^ 3)), "torch.default_generator.manual_seed");
  }

 private:
  // splitmix64's finalizer: a bijection of 64 bits that mixes every bit.
  static std::uint64_t mix(std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  static void call(PyObject* method, PyObject* arg, const char* what) {
    if (!arg) throw Error(python_error(what));
    PyObject* result = PyObject_CallOneArg(method, arg);
    Py_DECREF(arg);
    if (!result) throw Error(python_error(what));
    Py_DECREF(result);
  }

  // module.attr1.attr2 from sys.modules (a new reference), or nullptr.
  static PyObject* lookup(const char* module, const char* attr1, const char* attr2) {
    PyObject* m = PyDict_GetItemString(PyImport_GetModuleDict(), module);  // borrowed
    if (!m) return nullptr;
    PyObject* a = PyObject_GetAttrString(m, attr1);
    if (!a) {
      PyErr_Clear();
      return nullptr;
    }
    PyObject* b = PyObject_GetAttrString(a, attr2);
    Py_DECREF(a);
    if (!b) PyErr_Clear();
    return b;
  }

  void find() {
    if (!random_seed_) random_seed_ = lookup("random", "_inst", "seed");
    if (!numpy_seed_) numpy_seed_ = lookup("numpy", "random", "seed");
    if (!torch_seed_) torch_seed_ = lookup("torch", "default_generator", "manual_seed");
  }

  PyObject* random_seed_ = nullptr;  // random._inst.seed (random.seed is the same bound method)
  PyObject* numpy_seed_ = nullptr;   // numpy.random.seed
  PyObject* torch_seed_ = nullptr;   // torch.default_generator.manual_seed
};

}  // namespace sluice::python
