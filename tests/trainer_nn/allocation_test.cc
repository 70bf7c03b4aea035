// Once warmed up at a batch size, the training hot path (forward_backward, evaluate, an optimizer
// step) makes no heap allocation. Counted by replacing the global operator new in this binary.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <random>
#include <tuple>
#include <vector>

#include "amp/op_policy.h"
#include "reference_trainer/nn/make_model.h"
#include "reference_trainer/optim/adam.h"
#include "reference_trainer/optim/sgd.h"
#include "test_util.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<std::int64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace gw::trainer {
namespace {

class AllocationTest : public ::testing::TestWithParam<std::tuple<const char*, bool>> {};

TEST_P(AllocationTest, HotPathAllocatesNothingOnceWarm) {
  const auto m = make_model(std::get<0>(GetParam()), 1);
  const amp::OpPolicy policy = amp::OpPolicy::defaults();
  if (std::get<1>(GetParam())) m->set_op_policy(&policy);  // mixed precision
  const std::size_t batch = 8;
  std::mt19937_64 rng(2);
  std::vector<float> images(batch * m->input_size());
  testing::fill_uniform(images.data(), images.size(), rng, 0.0f, 1.0f);
  std::vector<std::uint8_t> labels(batch, 3);
  std::vector<gw::ParameterView> views;
  for (std::size_t i = 0; i < m->parameters().size(); ++i) {
    const auto& p = m->parameters()[i];
    views.push_back(gw::ParameterView{p.name, p.value, m->gradient(i), p.numel});
  }
  Sgd sgd(Sgd::Options{0.01, 0.9});
  Adam adam(Adam::Options{0.001});
  std::size_t ready = 0;
  const Model::GradientReadyFn on_ready = [&ready](std::size_t) { ++ready; };
  double loss_sum = 0.0;
  std::int64_t correct = 0;
  const auto iteration = [&] {
    m->forward_backward(images.data(), labels.data(), batch, on_ready);
    sgd.step(views);
    adam.step(views);
    m->evaluate(images.data(), labels.data(), batch, &loss_sum, &correct);
  };
  iteration();  // warm-up: buffers and optimizer state are created here
  g_allocations = 0;
  g_counting = true;
  iteration();
  iteration();
  g_counting = false;
  EXPECT_EQ(g_allocations.load(), 0);
  EXPECT_EQ(ready, 3 * m->parameters().size());
}

INSTANTIATE_TEST_SUITE_P(Kinds, AllocationTest,
                         ::testing::Combine(::testing::Values("mlp", "cnn"),
                                            ::testing::Bool()));

}  // namespace
}  // namespace gw::trainer
