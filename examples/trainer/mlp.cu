#include "mlp.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace trainer {

void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "sluice_trainer: %s failed: %s\n", call, cudaGetErrorString(status));
    std::exit(1);
  }
}

namespace {

constexpr int kThreads = 256;

int blocks_for(long n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

// C[m, n] = op(A)[m, k] * op(B)[k, n]; op transposes when asked. Row major.
// One thread per output: ample for the sizes of this example.
__global__ void gemm(const float* a, const float* b, float* c, int m, int n, int k, bool ta, bool tb) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= m * n) return;
  const int i = idx / n, j = idx % n;
  float sum = 0.0f;
  for (int p = 0; p < k; ++p) {
    const float av = ta ? a[p * m + i] : a[i * k + p];
    const float bv = tb ? b[j * k + p] : b[p * n + j];
    sum += av * bv;
  }
  c[idx] = sum;
}

// x[r, j] += bias[j], then ReLU if asked.
__global__ void add_bias(float* x, const float* bias, int rows, int cols, bool relu) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= rows * cols) return;
  const float v = x[idx] + bias[idx % cols];
  x[idx] = relu ? fmaxf(v, 0.0f) : v;
}

// Per row: softmax of the logits, the row's loss added to *loss_sum / rows,
// and the gradient (p - onehot) / rows written over the logits.
__global__ void softmax_cross_entropy(float* logits, const void* labels, bool labels_64, int rows, int classes,
                                      float* loss_sum) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float* z = logits + r * classes;
  const long label = labels_64 ? static_cast<const long long*>(labels)[r] : static_cast<const int*>(labels)[r];
  float top = z[0];
  for (int j = 1; j < classes; ++j) top = fmaxf(top, z[j]);
  float total = 0.0f;
  for (int j = 0; j < classes; ++j) total += expf(z[j] - top);
  const float log_total = logf(total);
  atomicAdd(loss_sum, (log_total - (z[label] - top)) / rows);
  for (int j = 0; j < classes; ++j) {
    const float p = expf(z[j] - top - log_total);
    z[j] = (p - (j == label ? 1.0f : 0.0f)) / rows;
  }
}

// out[j] = sum over rows of x[r, j].
__global__ void column_sum(const float* x, float* out, int rows, int cols) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  float s = 0.0f;
  for (int r = 0; r < rows; ++r) s += x[r * cols + j];
  out[j] = s;
}

// dh *= (h > 0): the ReLU's gradient.
__global__ void relu_backward(float* dh, const float* h, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && h[i] <= 0.0f) dh[i] = 0.0f;
}

__global__ void sgd(float* w, const float* dw, int n, float lr) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] -= lr * dw[i];
}

float* device_floats(long n) {
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, static_cast<std::size_t>(n) * sizeof(float)), "cudaMalloc");
  return static_cast<float*>(p);
}

void upload_random(float* dst, long n, float scale, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> host(static_cast<std::size_t>(n));
  for (float& v : host) v = normal(rng);
  check_cuda(cudaMemcpy(dst, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
}

}  // namespace

Mlp::Mlp(int inputs, int hidden, int classes, int max_batch, std::uint64_t seed, cudaStream_t stream)
    : inputs_(inputs), hidden_(hidden), classes_(classes), max_batch_(max_batch), stream_(stream) {
  w1_ = device_floats(static_cast<long>(inputs) * hidden);
  b1_ = device_floats(hidden);
  w2_ = device_floats(static_cast<long>(hidden) * classes);
  b2_ = device_floats(classes);
  dw1_ = device_floats(static_cast<long>(inputs) * hidden);
  db1_ = device_floats(hidden);
  dw2_ = device_floats(static_cast<long>(hidden) * classes);
  db2_ = device_floats(classes);
  h_ = device_floats(static_cast<long>(max_batch) * hidden);
  dh_ = device_floats(static_cast<long>(max_batch) * hidden);
  logits_ = device_floats(static_cast<long>(max_batch) * classes);
  loss_sum_ = device_floats(1);
  std::mt19937_64 rng(seed);
  upload_random(w1_, static_cast<long>(inputs) * hidden, std::sqrt(2.0f / inputs), rng);
  upload_random(w2_, static_cast<long>(hidden) * classes, std::sqrt(1.0f / hidden), rng);
  check_cuda(cudaMemset(b1_, 0, hidden * sizeof(float)), "cudaMemset");
  check_cuda(cudaMemset(b2_, 0, classes * sizeof(float)), "cudaMemset");
  check_cuda(cudaMemset(loss_sum_, 0, sizeof(float)), "cudaMemset");
}

Mlp::~Mlp() {
  for (float* p : {w1_, b1_, w2_, b2_, dw1_, db1_, dw2_, db2_, h_, dh_, logits_, loss_sum_}) cudaFree(p);
}

void Mlp::step(const float* x, const void* labels, bool labels_are_64bit, int n, float lr) {
  if (n > max_batch_) {
    std::fprintf(stderr, "sluice_trainer: a batch of %d samples exceeds %d\n", n, max_batch_);
    std::exit(1);
  }
  cudaStream_t s = stream_;
  // Forward.
  gemm<<<blocks_for(static_cast<long>(n) * hidden_), kThreads, 0, s>>>(x, w1_, h_, n, hidden_, inputs_, false, false);
  add_bias<<<blocks_for(static_cast<long>(n) * hidden_), kThreads, 0, s>>>(h_, b1_, n, hidden_, true);
  gemm<<<blocks_for(static_cast<long>(n) * classes_), kThreads, 0, s>>>(h_, w2_, logits_, n, classes_, hidden_, false,
                                                                       false);
  add_bias<<<blocks_for(static_cast<long>(n) * classes_), kThreads, 0, s>>>(logits_, b2_, n, classes_, false);
  softmax_cross_entropy<<<blocks_for(n), kThreads, 0, s>>>(logits_, labels, labels_are_64bit, n, classes_, loss_sum_);
  // Backward: logits_ now holds dL/dlogits.
  gemm<<<blocks_for(static_cast<long>(hidden_) * classes_), kThreads, 0, s>>>(h_, logits_, dw2_, hidden_, classes_, n,
                                                                             true, false);
  column_sum<<<blocks_for(classes_), kThreads, 0, s>>>(logits_, db2_, n, classes_);
  gemm<<<blocks_for(static_cast<long>(n) * hidden_), kThreads, 0, s>>>(logits_, w2_, dh_, n, hidden_, classes_, false,
                                                                      true);
  relu_backward<<<blocks_for(static_cast<long>(n) * hidden_), kThreads, 0, s>>>(dh_, h_, n * hidden_);
  gemm<<<blocks_for(static_cast<long>(inputs_) * hidden_), kThreads, 0, s>>>(x, dh_, dw1_, inputs_, hidden_, n, true,
                                                                            false);
  column_sum<<<blocks_for(hidden_), kThreads, 0, s>>>(dh_, db1_, n, hidden_);
  // Update.
  sgd<<<blocks_for(static_cast<long>(inputs_) * hidden_), kThreads, 0, s>>>(w1_, dw1_, inputs_ * hidden_, lr);
  sgd<<<blocks_for(hidden_), kThreads, 0, s>>>(b1_, db1_, hidden_, lr);
  sgd<<<blocks_for(static_cast<long>(hidden_) * classes_), kThreads, 0, s>>>(w2_, dw2_, hidden_ * classes_, lr);
  sgd<<<blocks_for(classes_), kThreads, 0, s>>>(b2_, db2_, classes_, lr);
  check_cuda(cudaGetLastError(), "a training kernel launch");
  ++steps_since_take_;
}

float Mlp::take_mean_loss() {
  float sum = 0.0f;
  check_cuda(cudaMemcpyAsync(&sum, loss_sum_, sizeof(float), cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync");
  check_cuda(cudaMemsetAsync(loss_sum_, 0, sizeof(float), stream_), "cudaMemsetAsync");
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  const float mean = steps_since_take_ > 0 ? sum / static_cast<float>(steps_since_take_) : 0.0f;
  steps_since_take_ = 0;
  return mean;
}

}  // namespace trainer
