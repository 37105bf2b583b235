// dataset_loader.h: a _Loader for a Python dataset, sequence or fill function.
//
// sluice/__init__.py makes the first sample (or batch) in the host, infers the
// fields and their places (the tree) from it with NumPy (or takes them declared), and calls
// _dataset_loader(kind, source, tree, fields, size, settings, ...), which
// builds the Options (RunSettings' names, as for a pipeline.lua) with a
// DatasetProducer. Also here: the current sample, for sluice.rng().
#pragma once

#include <pybind11/pybind11.h>

namespace sluice::python {

// Adds _dataset_loader, _current_sample and _trial to the module.
void bind_dataset(pybind11::module_& m);

}  // namespace sluice::python
