// mlp.h: a two-layer perceptron (inputs -> hidden ReLU -> classes, softmax
// cross-entropy) trained with plain SGD by a handful of CUDA kernels.
//
// Everything runs asynchronously on the stream given at construction; only
// take_mean_loss() waits for it.
//
// Thread safety: none; one thread drives an Mlp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace trainer {

class Mlp {
 public:
  // Allocates and initializes the weights on the current device. Exits the
  // process with a message on a CUDA error (an example, not a library).
  Mlp(int inputs, int hidden, int classes, int max_batch, std::uint64_t seed, cudaStream_t stream);
  ~Mlp();
  Mlp(const Mlp&) = delete;
  Mlp& operator=(const Mlp&) = delete;

  // One SGD step on n samples: x is [n, inputs] float32 in device memory,
  // labels [n] int32 (or int64 with labels_are_64bit) in device memory. The
  // batch's mean loss is added to a device-side sum.
  void step(const float* x, const void* labels, bool labels_are_64bit, int n, float learning_rate);

  // Mean of the batch losses since the last call. Waits for the stream.
  float take_mean_loss();

 private:
  int inputs_, hidden_, classes_, max_batch_;
  cudaStream_t stream_;
  float *w1_, *b1_, *w2_, *b2_;          // parameters
  float *dw1_, *db1_, *dw2_, *db2_;      // their gradients
  float *h_, *logits_, *dh_;             // activations and their gradients, [max_batch, ...]
  float* loss_sum_;                      // device scalar
  int steps_since_take_ = 0;
};

// Exits with a message naming the call unless status is cudaSuccess.
void check_cuda(cudaError_t status, const char* call);

}  // namespace trainer
