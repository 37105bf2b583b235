#include "sluice/producer.h"

namespace sluice {

namespace {

class PerSample final : public Producer {
 public:
  explicit PerSample(std::function<void(const SampleRef&)> fn) : fn_(std::move(fn)) {}
  void fill(BatchContext& batch) override {
    const auto samples = batch.samples();
    for (std::size_t j = 0; j < samples.size(); ++j) {
      batch.begin_sample(j);
      fn_(SampleRef{batch, j, samples[j]});
    }
  }

 private:
  std::function<void(const SampleRef&)> fn_;
};

}  // namespace

std::shared_ptr<Producer> per_sample(std::function<void(const SampleRef&)> fn) {
  return std::make_shared<PerSample>(std::move(fn));
}

}  // namespace sluice
