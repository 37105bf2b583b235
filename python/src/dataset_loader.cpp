#include "dataset_loader.h"

#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "dataset_producer.h"
#include "global_seeds.h"
#include "py_loader.h"
#include "sluice/error.h"
#include "sluice/plan.h"
#include "sluice/state.h"
#include "sluice/record.h"
#include "sluice/run_report.h"
#include "sluice/run_settings.h"

namespace sluice::python {

namespace py = pybind11;

namespace {

using FieldTuple = std::tuple<std::string, std::string, std::vector<std::int64_t>>;
using Settings = std::vector<std::pair<std::string, std::string>>;

DatasetKind parse_kind(const std::string& kind) {
  if (kind == "dataset") return DatasetKind::sample;
  if (kind == "sequence") return DatasetKind::sequence;
  if (kind == "fill") return DatasetKind::fill;
  throw Error("sluice: unknown dataset kind '" + kind + "'");
}

Delivery parse_delivery(const std::string& delivery) {
  if (delivery == "batch") return Delivery::batch;
  if (delivery == "dict") return Delivery::dict;
  if (delivery == "tuple") return Delivery::tuple;
  if (delivery == "single") return Delivery::single;
  throw Error("sluice: unknown delivery '" + delivery + "'");
}

std::vector<FieldSpec> field_specs(const std::vector<FieldTuple>& fields) {
  if (fields.empty()) throw Error("a dataset's samples need at least one field");
  if (fields.size() > max_fields) {
    throw Error("a sample has " + std::to_string(fields.size()) + " fields, at most " + std::to_string(max_fields));
  }
  std::vector<FieldSpec> specs;
  for (const auto& [name, dtype, shape] : fields) {
    const std::optional<DType> type = parse_dtype(dtype);
    if (!type || *type == DType::bf16) {
      throw Error("field '" + name + "' has dtype " + dtype +
                  ", which sluice does not carry (bool, uint8 ... uint64, int8 ... int64, float16, float32, float64)");
    }
    if (shape.size() > max_sample_dims) {
      throw Error("field '" + name + "' has " + std::to_string(shape.size()) + " dimensions, at most " +
                  std::to_string(max_sample_dims));
    }
    specs.push_back({name, *type, shape});
  }
  return specs;
}

std::string options_json(const Options& o, const std::string& description) {
  return "{\"dataset\":" + json_string(description) + ",\"dataset_size\":" + std::to_string(o.dataset_size) +
         ",\"batch_size\":" + std::to_string(o.batch_size) + ",\"drop_last\":" + (o.drop_last ? "true" : "false") +
         ",\"shuffle\":" + (o.shuffle ? "true" : "false") + ",\"epochs\":" + std::to_string(o.epochs) +
         ",\"skip_fill\":\"" + name_of(o.skip_fill) + "\",\"shard_policy\":\"" + name_of(o.shard_policy) +
         "\",\"fields\":" + json_string(describe_fields(o)) + "}";
}

std::unique_ptr<PyLoader> dataset_loader(const std::string& kind_name, py::object source, py::object tree,
                                         const std::vector<FieldTuple>& fields, std::uint64_t size,
                                         const Settings& settings, std::string record, py::object worker_init,
                                         const std::string& description, bool declared, bool seed_globals,
                                         const std::string& delivery) {
  const DatasetKind kind = parse_kind(kind_name);
  DatasetSpec spec;
  spec.kind = kind;
  spec.fields = field_specs(fields);
  if (kind != DatasetKind::fill) spec.tree = sample_tree(tree.ptr(), spec.fields.size());
  spec.declared = declared;
  spec.seed_globals = seed_globals;
  if (kind == DatasetKind::sequence) {
    for (const FieldSpec& f : spec.fields) {
      if (f.shape.empty()) throw Error("sequence field '" + f.name + "' is a scalar: a batch needs rows");
    }
    spec.fields.push_back({kRowsField, DType::i64, {}});
  }

  LoaderSource out;
  Options& o = out.options;
  RunSettings run;
  for (const auto& [name, value] : settings) run.set(name, value);
  run.apply_all(o);
  out.script = run.script_options();
  if (kind == DatasetKind::sequence && o.batch_size != 1) {
    throw Error("a sequence's batches are its own: give batch_size to the sequence, not to the Loader");
  }
  if (kind == DatasetKind::sequence && o.drop_last) {
    throw Error("drop_last does not apply to a sequence: its batches are its own, a short last one included "
                "(leave it out of len(sequence) to drop it)");
  }
  o.dataset_size = size;
  o.fields = spec.fields;
  spec.seed = o.seed;
  spec.source = source.ptr();
  spec.worker_init = worker_init.is_none() ? nullptr : worker_init.ptr();
  o.producer = std::make_shared<DatasetProducer>(std::move(spec));
  out.python_workers = true;
  out.keep = py::make_tuple(source, worker_init, tree);  // the tree's keys are borrowed by the producer
  out.rows = kind == DatasetKind::sequence;
  out.delivery = parse_delivery(delivery);
  const Options copy = o;
  out.record_header = [copy, description] {
    return RecordHeader{"", options_json(copy, description), copy.seed, copy.rank, copy.world_size, {}};
  };

  out.info = options_info(o);
  py::dict& d = out.info;
  d["path"] = description;
  d["kind"] = kind_name;
  d["device"] = "cpu";
  if (kind == DatasetKind::sequence) {  // the fields as the sequence returns them, without kRowsField
    d["batch_size"] = std::get<2>(fields.front()).front();  // rows of a full batch
    py::list field_list;
    for (const auto& [name, dtype, shape] : fields) field_list.append(py::make_tuple(name, dtype, py::tuple(py::cast(shape))));
    d["fields"] = field_list;
  }
  d["notes"] = py::list();
  return std::make_unique<PyLoader>(std::move(out), std::move(record));
}

// The plan of a Python dataset's loader with workers=0 (sluice/_inline.py):
// which samples each batch holds, and its position as a LoaderState.
class InlinePlan {
 public:
  InlinePlan(const Settings& settings, std::uint64_t size) {
    RunSettings run;
    for (const auto& [name, value] : settings) {
      if (name != "workers") run.set(name, value);  // 0 here: nothing the plan depends on
    }
    run.apply_all(options_);
    options_.dataset_size = size;
    plan_ = std::make_unique<EpochPlan>(options_);
  }
  std::uint64_t batches_per_epoch() const { return plan_->batches_per_epoch(); }
  std::uint32_t epochs() const { return options_.epochs; }
  std::uint64_t seed() const { return options_.seed; }
  py::dict info() const { return options_info(options_); }  // as a worker loader's, before its fields
  std::vector<std::uint64_t> batch(std::uint64_t epoch, std::uint64_t b) const {
    std::vector<std::uint64_t> ids(plan_->batch_length(b));
    plan_->batch_samples(epoch, b, ids);
    return ids;
  }
  std::string state_json(std::uint64_t epoch, std::uint64_t b) const {
    LoaderState state = LoaderState::start_of(options_);
    state.epoch = epoch;
    state.batch = b;
    return state.to_json();
  }
  // (epoch, batch) of a state of this plan; Error if it is another plan's or skipped samples.
  std::pair<std::uint64_t, std::uint64_t> position(const std::string& json) const {
    const LoaderState state = LoaderState::from_json(json);
    const LoaderState mine = LoaderState::start_of(options_);
    if (state.seed != mine.seed || state.dataset_size != mine.dataset_size || state.batch_size != mine.batch_size ||
        state.shuffle != mine.shuffle || state.drop_last != mine.drop_last || state.rank != mine.rank ||
        state.world_size != mine.world_size) {
      throw Error("load_state_dict: the state belongs to another plan (seed, dataset size, batch size, shuffle, "
                  "drop_last or shard differ)");
    }
    if (!state.skipped_samples.empty() || !state.delivered_ahead.empty()) {
      throw Error("load_state_dict: workers=0 resumes a state without skipped or unordered batches only");
    }
    return {state.epoch, state.batch};
  }

 private:
  Options options_;
  std::unique_ptr<EpochPlan> plan_;
};

}  // namespace

void bind_dataset(py::module_& m) {
  py::class_<InlinePlan>(m, "_InlinePlan", "The plan of a workers=0 loader")
      .def(py::init<const Settings&, std::uint64_t>(), py::arg("settings"), py::arg("size"))
      .def("batches_per_epoch", &InlinePlan::batches_per_epoch)
      .def("epochs", &InlinePlan::epochs)
      .def("seed", &InlinePlan::seed)
      .def("info", &InlinePlan::info)
      .def("batch", &InlinePlan::batch, py::arg("epoch"), py::arg("batch"))
      .def("state_json", &InlinePlan::state_json, py::arg("epoch"), py::arg("batch"))
      .def("position", &InlinePlan::position, py::arg("json"));
  m.def("_dataset_loader", &dataset_loader, py::arg("kind"), py::arg("source"), py::arg("tree"), py::arg("fields"),
        py::arg("size"), py::arg("settings"), py::arg("record"), py::arg("worker_init"), py::arg("description"),
        py::arg("declared"), py::arg("seed_globals"), py::arg("delivery"));
  m.def("_seed_globals", [](std::uint64_t seed, std::uint64_t epoch, std::uint64_t index) {
    static GlobalSeeds* seeds = new GlobalSeeds;  // the host's: kept for the process
    seeds->seed(seed, epoch, index);
  }, py::arg("seed"), py::arg("epoch"), py::arg("index"),
        "Seeds random, numpy.random and torch (if imported) as a worker does before the sample (seed, epoch, index)");
  m.def("_current_sample", []() -> py::object {
    std::uint64_t seed = 0, epoch = 0, index = 0;
    if (!current_sample(seed, epoch, index)) return py::none();
    return py::make_tuple(seed, epoch, index);
  }, "(seed, epoch, index) of the sample being made, or None outside a fill");
  m.def("_trial", [](bool active, std::uint64_t seed, std::uint64_t index, std::uint64_t epoch) {
        set_current_sample(active, seed, epoch, index);
      }, py::arg("active"), py::arg("seed"), py::arg("index"), py::arg("epoch") = 0,
        "Marks a sample made in the host (the first, or workers=0), for sluice.rng()");
}

}  // namespace sluice::python
