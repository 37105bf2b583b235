// sluice_trainer: a trainer that embeds Sluice and learns from device batches.
//
//   sluice_trainer [--device cuda|cuda:N|auto] [--epochs 5] [--samples 60000] [--batch 256]
//                  [--workers 2] [--depth 3] [pipeline.lua]
//
// The data: without a pipeline.lua, a synthetic 10-class dataset made by a C++
// producer in the worker processes: 8x8 RGB uint8 images, each its class's
// pattern plus noise. With a pipeline.lua (when Sluice is built with its Lua
// front end), the pipeline's "image" field (uint8 [H, W, C] or float32) and
// its "label" field (int32 or int64, classes 0..9).
//
// The path: workers fill batch slots in shared memory; a sluice::cuda::Stage
// copies each batch to the GPU with one cudaMemcpyAsync per field, turns the
// uint8 images into normalized float32 CHW on the device, and hands the batch
// over ready on the trainer's stream; a two-layer perceptron takes an SGD step
// on it with a few CUDA kernels (mlp.cu). It prints the loss as it falls, the
// samples per second, and how long the trainer waited for data.
//
// It needs a CUDA device: without one it says so and exits with status 1.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "mlp.h"
#include "sluice/cuda/device.h"
#include "sluice/cuda/stage.h"
#include "sluice/error.h"
#include "sluice/loader.h"
#include "sluice/producer.h"
#ifdef SLUICE_TRAINER_HAVE_SCRIPTING
#include "sluice/script.h"
#endif

namespace {

constexpr int kClasses = 10;
constexpr std::int64_t kSide = 8, kChannels = 3;

struct Args {
  std::string device = "cuda";
  std::uint32_t epochs = 5;
  std::uint64_t samples = 60000;
  std::uint32_t batch = 256;
  std::uint32_t workers = 2;
  std::uint32_t depth = 3;
  std::string pipeline;
};

std::uint64_t mix(std::uint64_t x) {  // splitmix64: a sample's noise, whatever worker makes it
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The synthetic dataset: sample i has class mix(i) % 10; its pixels are the
// class's pattern (a brightness per channel and a stripe direction) plus noise.
sluice::Options synthetic_options(const Args& a) {
  sluice::Options o;
  o.dataset_size = a.samples;
  o.batch_size = a.batch;
  o.shuffle = true;
  o.seed = 7;
  o.epochs = a.epochs;
  o.workers = a.workers;
  o.fields = {{"image", sluice::DType::u8, {kSide, kSide, kChannels}}, {"label", sluice::DType::i32, {}}};
  o.producer = sluice::per_sample([](const sluice::SampleRef& s) {
    const auto label = static_cast<int>(mix(s.index) % kClasses);
    auto* px = s.as<std::uint8_t>(0);
    std::uint64_t noise = mix(s.index ^ 0xabcdefull);
    for (std::int64_t y = 0; y < kSide; ++y) {
      for (std::int64_t x = 0; x < kSide; ++x) {
        for (std::int64_t c = 0; c < kChannels; ++c) {
          const bool stripe = ((label & 1) ? x : y) % 2 == 0;
          int v = 40 + 18 * ((label + static_cast<int>(c) * 3) % kClasses) + (stripe ? 30 : 0);
          if (noise == 0) noise = mix(s.index + static_cast<std::uint64_t>(y * 64 + x));
          v += static_cast<int>(noise % 61) - 30;
          noise /= 61;
          px[(y * kSide + x) * kChannels + c] = static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
        }
      }
    }
    *s.as<std::int32_t>(1) = label;
  });
  return o;
}

sluice::Options pipeline_options(const Args& a) {
#ifdef SLUICE_TRAINER_HAVE_SCRIPTING
  sluice::ScriptOptions so;
  so.path = a.pipeline;
  so.epochs = a.epochs;
  so.workers = a.workers;
  sluice::Script script = sluice::load_script(so);
  for (const std::string& note : script.notes) std::fprintf(stderr, "%s: %s\n", a.pipeline.c_str(), note.c_str());
  return script.options;
#else
  throw sluice::Error("this sluice_trainer was built without the Lua front end; cannot read " + a.pipeline);
#endif
}

const sluice::FieldSpec& find_field(const sluice::Options& o, const std::string& name) {
  for (const sluice::FieldSpec& f : o.fields) {
    if (f.name == name) return f;
  }
  throw sluice::Error("the pipeline has no field '" + name + "'");
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k.size() < 2 || k.substr(0, 2) != "--") {
      a.pipeline = k;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr,
                   "usage: %s [--device cuda|cuda:N|auto] [--epochs E] [--samples N] [--batch B] [--workers W] "
                   "[--depth D] [pipeline.lua]\n",
                   argv[0]);
      std::exit(2);
    }
    const std::string v = argv[++i];
    if (k == "--device") a.device = v;
    else if (k == "--epochs") a.epochs = static_cast<std::uint32_t>(std::stoul(v));
    else if (k == "--samples") a.samples = std::stoull(v);
    else if (k == "--batch") a.batch = static_cast<std::uint32_t>(std::stoul(v));
    else if (k == "--workers") a.workers = static_cast<std::uint32_t>(std::stoul(v));
    else if (k == "--depth") a.depth = static_cast<std::uint32_t>(std::stoul(v));
    else {
      std::fprintf(stderr, "%s: unknown option %s\n", argv[0], k.c_str());
      std::exit(2);
    }
  }
  return a;
}

// The trainer's stream, destroyed after everything that uses it.
struct Stream {
  cudaStream_t s = nullptr;
  Stream() { trainer::check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
  ~Stream() { cudaStreamDestroy(s); }
};

sluice::cuda::StageOptions stage_options(const Args& a, const sluice::FieldSpec& image) {
  sluice::cuda::StageOptions so;
  so.depth = a.depth;
  if (image.dtype == sluice::DType::u8) {
    sluice::cuda::Normalize n;
    n.field = "image";
    n.to = sluice::DType::f32;
    n.mean = {127.5f};
    n.stddev = {64.0f};
    n.hwc_to_chw = image.shape.size() == 3;
    so.normalize = {n};
  } else if (image.dtype != sluice::DType::f32) {
    throw sluice::Error("field 'image' must be uint8 or float32");
  }
  return so;
}

int train(const Args& a) {
  const sluice::Options options = a.pipeline.empty() ? synthetic_options(a) : pipeline_options(a);
  const sluice::FieldSpec& image = find_field(options, "image");
  const sluice::FieldSpec& label = find_field(options, "label");
  if (label.dtype != sluice::DType::i32 && label.dtype != sluice::DType::i64) {
    throw sluice::Error("field 'label' must be int32 or int64");
  }
  sluice::cuda::StageOptions so = stage_options(a, image);
  const sluice::cuda::ResolvedDevice device = sluice::cuda::resolve_device(a.device);
  if (device.spec.kind != sluice::cuda::DeviceKind::cuda) {
    std::fprintf(stderr, "sluice_trainer: %s\nsluice_trainer: this example trains on a GPU; nothing to do\n",
                 device.note.empty() ? "device = \"cpu\"" : device.note.c_str());
    return 1;
  }
  so.device = sluice::cuda::to_string(device.spec);

  // The Loader forks its workers before this process creates a CUDA context.
  sluice::Loader loader(options);
  trainer::check_cuda(cudaSetDevice(device.spec.ordinal), "cudaSetDevice");
  Stream stream;
  so.consumer_stream = stream.s;
  int inputs = 1;
  for (std::int64_t d : image.shape) inputs *= static_cast<int>(d);
  const std::uint32_t batch_size = loader.options().batch_size;
  trainer::Mlp model(inputs, 64, kClasses, static_cast<int>(batch_size), 1, stream.s);
  sluice::cuda::Stage stage(loader, so);
  std::printf("sluice_trainer: %s, %llu samples x %u epochs, batches of %u, %u workers, ring depth %u\n",
              sluice::cuda::to_string(stage.device()).c_str(), static_cast<unsigned long long>(options.dataset_size),
              options.epochs, batch_size, options.workers, a.depth);

  const auto start = std::chrono::steady_clock::now();
  std::uint64_t samples = 0, epoch = 0;
  while (auto batch = stage.next()) {
    if (batch->epoch() != epoch) {
      std::printf("epoch %llu  loss %.4f\n", static_cast<unsigned long long>(epoch), model.take_mean_loss());
      epoch = batch->epoch();
    }
    const sluice::cuda::DeviceField x = batch->field("image");
    const sluice::cuda::DeviceField y = batch->field("label");
    model.step(x.as<const float>(), y.data, y.dtype == sluice::DType::i64, static_cast<int>(batch->size()), 0.05f);
    samples += batch->size();
    // Released here: the stage rewrites this buffer only after the step's kernels have run.
  }
  std::printf("epoch %llu  loss %.4f\n", static_cast<unsigned long long>(epoch), model.take_mean_loss());
  trainer::check_cuda(cudaStreamSynchronize(stream.s), "cudaStreamSynchronize");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const sluice::cuda::StageStats st = stage.stats();
  std::printf("%.0f samples/s; waited for data %.1f ms in total (%.2f%% of %.2f s), %llu of %llu batches\n",
              static_cast<double>(samples) / seconds, static_cast<double>(st.consumer_wait_ns) / 1e6,
              100.0 * static_cast<double>(st.consumer_wait_ns) / 1e9 / seconds, seconds,
              static_cast<unsigned long long>(st.consumer_waits),
              static_cast<unsigned long long>(st.batches_delivered));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  try {
    return train(a);
  } catch (const sluice::Error& e) {
    std::fprintf(stderr, "sluice_trainer: %s\n", e.what());
    return 1;
  }
}
