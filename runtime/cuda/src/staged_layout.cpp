#include "staged_layout.h"

#include <string>

#include "sluice/error.h"

namespace sluice::cuda::detail {

namespace {

std::size_t align_up(std::size_t n) { return (n + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment; }

std::int64_t product(const std::vector<std::int64_t>& dims, std::size_t count) {
  std::int64_t p = 1;
  for (std::size_t i = 0; i < count; ++i) p *= dims[i];
  return p;
}

NormalizeJob plan_job(const FieldSpec& spec, const Normalize& n) {
  const std::string what = "normalize of field '" + n.field + "'";
  if (spec.dtype != DType::u8) {
    throw Error(what + ": the field is " + std::string(dtype_name(spec.dtype)) + "; only uint8 fields are normalized");
  }
  if (n.to != DType::f32 && n.to != DType::f16) {
    throw Error(what + ": to = " + std::string(dtype_name(n.to)) + "; expected float32 or float16");
  }
  if (n.hwc_to_chw && spec.shape.size() != 3) {
    throw Error(what + ": hwc_to_chw needs a per-sample shape [H, W, C]; the field has " +
                std::to_string(spec.shape.size()) + " dimensions");
  }
  NormalizeJob job;
  job.to = n.to;
  job.hwc_to_chw = n.hwc_to_chw;
  job.channels = spec.shape.empty() ? 1 : spec.shape.back();
  job.pixels = spec.shape.empty() ? 1 : product(spec.shape, spec.shape.size() - 1);
  if (n.mean.size() != n.stddev.size()) {
    throw Error(what + ": mean has " + std::to_string(n.mean.size()) + " values and stddev " +
                std::to_string(n.stddev.size()));
  }
  const auto count = static_cast<std::int64_t>(n.mean.size());
  if (count != 1 && count != job.channels) {
    throw Error(what + ": mean and stddev need 1 value or one per channel (" + std::to_string(job.channels) +
                "); got " + std::to_string(count));
  }
  if (count > max_normalize_channels) {
    throw Error(what + ": at most " + std::to_string(max_normalize_channels) +
                " per-channel values; give one mean and stddev for all channels");
  }
  job.param_count = static_cast<int>(count);
  for (std::int64_t c = 0; c < count; ++c) {
    if (!(n.stddev[c] > 0.0f)) throw Error(what + ": stddev values must be positive");
    job.mean[c] = n.mean[c];
    job.inv_std[c] = 1.0f / n.stddev[c];
  }
  return job;
}

}  // namespace

StagedLayout plan_staged_layout(const Options& options, const std::vector<Normalize>& normalize) {
  StagedLayout layout;
  layout.batch_size = options.batch_size;
  for (const FieldSpec& spec : options.fields) {
    StagedField f;
    f.name = spec.name;
    f.in_dtype = spec.dtype;
    f.out_dtype = spec.dtype;
    f.out_sample_shape = spec.shape;
    f.in_sample_bytes = dtype_size(spec.dtype) * static_cast<std::size_t>(product(spec.shape, spec.shape.size()));
    layout.fields.push_back(std::move(f));
  }
  for (std::size_t i = 0; i < normalize.size(); ++i) {
    const Normalize& n = normalize[i];
    StagedField* target = nullptr;
    std::size_t index = 0;
    for (; index < layout.fields.size(); ++index) {
      if (layout.fields[index].name == n.field) {
        target = &layout.fields[index];
        break;
      }
    }
    if (!target) throw Error("normalize of field '" + n.field + "': the Loader has no such field");
    if (target->normalize) throw Error("normalize of field '" + n.field + "': given twice");
    const FieldSpec& spec = options.fields[index];
    target->normalize = plan_job(spec, n);
    target->out_dtype = n.to;
    if (n.hwc_to_chw) target->out_sample_shape = {spec.shape[2], spec.shape[0], spec.shape[1]};
  }
  for (StagedField& f : layout.fields) {
    const auto elements = static_cast<std::size_t>(product(f.out_sample_shape, f.out_sample_shape.size()));
    f.out_sample_bytes = dtype_size(f.out_dtype) * elements;
    f.offset = layout.entry_bytes;
    layout.entry_bytes += align_up(f.out_sample_bytes * layout.batch_size);
    if (f.normalize) {
      f.scratch_offset = layout.scratch_bytes;
      layout.scratch_bytes += align_up(f.in_sample_bytes * layout.batch_size);
    }
  }
  return layout;
}

}  // namespace sluice::cuda::detail
