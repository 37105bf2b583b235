// sluice._sluice: the C++ side of the Python package (python/sluice/).
//
// batch.h           Batch and Array: delivered batches, zero-copy DLPack
// py_loader.h       _Loader: a sluice::Loader driven from Python
// dataset_loader.h  _dataset_loader: a _Loader for a Python dataset
// dataset_producer.h  what the workers of a Python dataset run
//
// Every C++ exception becomes sluice.Error with the runtime's message (the
// same text `sluice run` prints after "error: "); a refused setting or option
// (sluice::OptionsError) becomes sluice.OptionsError, which is also a ValueError.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <exception>
#include <string>

#include "batch.h"
#include "dataset_loader.h"
#include "py_loader.h"
#include "sluice/error.h"
#include "sluice/settings.h"
#include "sluice/state.h"

namespace py = pybind11;

PYBIND11_MODULE(_sluice, m) {
  m.doc() = "Sluice's C++ runtime; use the sluice package, not this module";

  static py::handle error_type = py::exception<sluice::Error>(m, "Error", PyExc_Exception).release();
  error_type.attr("__module__") = "sluice";
  // A setting or option the runtime refuses: a sluice.Error and, as
  // PyTorch's DataLoader raises for a bad argument, a ValueError.
  static py::handle options_error_type = [&] {
    py::tuple bases = py::make_tuple(error_type, py::handle(PyExc_ValueError));
    PyObject* type = PyErr_NewException("sluice.OptionsError", bases.ptr(), nullptr);
    if (type == nullptr) throw py::error_already_set();
    m.add_object("OptionsError", py::handle(type));  // steals nothing: the module keeps its own reference
    return py::handle(type);
  }();
  // Anything else C++ throws is a sluice.Error too; Python's own errors
  // (KeyboardInterrupt from PyErr_CheckSignals, argument errors) pass through.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const py::error_already_set&) {
      throw;
    } catch (const py::builtin_exception&) {
      throw;
    } catch (const sluice::OptionsError& e) {
      PyErr_SetString(options_error_type.ptr(), e.what());
    } catch (const std::exception& e) {
      PyErr_SetString(error_type.ptr(), e.what());
    }
  });

  sluice::python::bind_batch(m);
  sluice::python::bind_loader(m);
  sluice::python::bind_dataset(m);

  m.def("settings", [] {
        py::list out;
        for (const sluice::Setting& s : sluice::settings()) {
          out.append(py::make_tuple(s.name, s.takes, s.default_value, s.help));
        }
        return out;
      }, "Every run setting as (name, takes, default, help): the keywords of sluice.Loader, the options of "
         "`sluice run` and the C API's name=value; default \"\" = unset");
  m.def("check_state", [](const std::string& json) { (void)sluice::LoaderState::from_json(json); },
        "Raises sluice.Error if json is not a loader state");
  m.def("merge_states", [](const std::vector<std::string>& jsons) {
        std::vector<sluice::LoaderState> states;
        for (const std::string& json : jsons) states.push_back(sluice::LoaderState::from_json(json));
        std::string note;
        const sluice::LoaderState merged = sluice::LoaderState::merge(states, &note);
        return py::make_tuple(merged.to_json(), note);
      }, "The global position of every rank's state (JSON) and a note on where it resumes; sluice.Error if they disagree");
}
