// The public normalization entries: contract check → plan cache → (cold) compiler → launch.
// With the autotune component, the cold path hands the compiler an autotune ConfigProvider (the
// default Autotune strategy), and this file also tells autotune how to build and launch a
// normalization candidate (NormTuningProblem).
#include "rudnn/normalization.h"

#include <bit>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "contracts/normalization.h"
#include "log.h"
#include "plan_cache.h"
#include "tuned_plan.h"
#if RUDNN_HAS_AUTOTUNE
#include "rudnn/autotune.h"
#include "rudnn/autotune/provider.h"
#include "rudnn/autotune/tuner.h"
#endif

namespace rudnn::normalization {

namespace {

using contracts::NormKind;

// "Same device" identity for the contract: kind and ordinal.
int device_id(const Device& d) { return d.kind() == DeviceKind::Host ? -1 : d.ordinal(); }

contracts::NormOperand operand(const Tensor& t) { return {t.shape(), t.dtype(), device_id(t.device())}; }

std::optional<NormalizationError> check_layout(const Tensor& t, const char* name) {
  if (!t.is_contiguous())
    return NormalizationError(ErrorKind::ShapeMismatch, name, "a contiguous tensor", "strides " + shape_to_string(t.strides()));
  return std::nullopt;
}

bool aligned16(const Tensor& t) { return (reinterpret_cast<std::uintptr_t>(t.data()) & 15u) == 0; }

// The operand slots as the lowering numbers them: input, [gamma, [beta]], output.
std::size_t operand_views(NormKind kind, const Tensor& input, const Tensor* gamma, const Tensor* beta,
                          const Tensor& output, std::array<ops::OperandView, 4>& views) {
  std::size_t n = 0;
  views[n++] = {input.data(), &input.shape()};
  if (kind != NormKind::Softmax) {
    views[n++] = {gamma->data(), &gamma->shape()};
    if (kind == NormKind::LayerNorm) views[n++] = {beta ? beta->data() : nullptr, beta ? &beta->shape() : nullptr};
  }
  views[n++] = {output.data(), &output.shape()};
  return n;
}

#if RUDNN_HAS_AUTOTUNE
// Plan-key words of the Autotune strategy: the mode (0 when no provider is asked: off, or
// misaligned buffers the heuristic handles with vector width 1) and the rows bucket, the only
// runtime size a tuned normalization config depends on (autotune::normalization_search_space()).
std::pair<std::int64_t, std::int64_t> strategy_words(const Shape& shape, bool aligned) {
  const autotune::Mode mode = autotune::mode();
  if (mode == autotune::Mode::Off || !aligned) return {0, 0};
  std::int64_t rows = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  return {1 + static_cast<std::int64_t>(mode), autotune::anchor(rows)};
}
#endif

// The cold path: lower (asking autotune unless it is off) and build (ops/tuned_plan.h).
Result<std::shared_ptr<const ops::TunedPlan>, NormalizationError> make_plan(const contracts::NormSignature& sig,
                                                                           const Device& device, bool aligned,
                                                                           bool ask_autotune) {
  auto made = ops::make_tuned_plan(device, ask_autotune, [&](compiler::ConfigProvider* provider) {
    compiler::NormRequest request{sig, aligned, std::nullopt};
    request.provider = provider;
    return compiler::lower_normalization(request, ops::target_for(device));
  });
  if (!made.ok()) return NormalizationError::from(made.error());
  return made.value();
}

Result<Tensor, NormalizationError> run(NormKind kind, const Tensor& input, const Tensor* gamma, const Tensor* beta,
                                       float epsilon) {
  contracts::NormSignature sig;
  sig.kind = kind;
  sig.input = operand(input);
  if (gamma) sig.gamma = operand(*gamma);
  if (beta) sig.beta = operand(*beta);
  sig.epsilon = epsilon;
  if (auto e = contracts::check_normalization(sig)) return *e;
  const char* input_name = kind == NormKind::Softmax ? "logits" : "input";
  if (auto e = check_layout(input, input_name)) return *e;
  if (gamma)
    if (auto e = check_layout(*gamma, "gamma")) return *e;
  if (beta)
    if (auto e = check_layout(*beta, "beta")) return *e;

  const Device& device = input.device();
  bool aligned = aligned16(input) && (!gamma || aligned16(*gamma)) && (!beta || aligned16(*beta));

  // Words 8 and 9: what changes the chosen config besides the signature (the autotune mode and
  // the rows bucket); both 0 without the autotune component.
  std::int64_t strategy = 0, bucket = 0;
#if RUDNN_HAS_AUTOTUNE
  std::tie(strategy, bucket) = strategy_words(input.shape(), aligned);
#endif
  ops::PlanKey key;
  key.words = {static_cast<std::int64_t>(kind), static_cast<std::int64_t>(input.dtype()), input.shape().back(),
               beta != nullptr, static_cast<std::int64_t>(device.kind()), device.ordinal(), aligned,
               static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(epsilon)), strategy, bucket};
  auto& cache = ops::PlanCache::instance();
  std::shared_ptr<const ops::Plan> plan = cache.find(key);
  if (!plan) {
    auto made = make_plan(sig, device, aligned, strategy != 0);
    if (!made.ok()) return made.error();
    plan = made.value();
    cache.insert(key, plan);
  }
  ops::note_choice(*plan);

  auto output = Tensor::empty(input.shape(), input.dtype(), input.queue());
  if (!output.ok()) return NormalizationError::from(output.error());
  if (ops::poison_outputs())
    if (auto s = output->poison(); !s.ok()) return NormalizationError::from(s.error());
  std::array<ops::OperandView, 4> views{};
  const std::size_t n = operand_views(kind, input, gamma, beta, output.value(), views);
  if (auto s = ops::run_plan(*plan, input.queue(), std::span(views.data(), n)); !s.ok())
    return NormalizationError::from(s.error());
  return std::move(output.value());
}

}  // namespace

Result<Tensor, NormalizationError> layer_norm(const Tensor& input, const Tensor& gamma,
                                              const std::optional<Tensor>& beta, float epsilon) {
  return run(NormKind::LayerNorm, input, &gamma, beta ? &*beta : nullptr, epsilon);
}

Result<Tensor, NormalizationError> rms_norm(const Tensor& input, const Tensor& gamma, float epsilon) {
  return run(NormKind::RmsNorm, input, &gamma, nullptr, epsilon);
}

Result<Tensor, NormalizationError> softmax_last_axis(const Tensor& logits) {
  return run(NormKind::Softmax, logits, nullptr, nullptr, 0.0f);
}

#if RUDNN_HAS_AUTOTUNE
namespace {

// How autotune builds and launches a normalization candidate: the key's signature with
// rows = the bucket (the largest size the bucket serves), random inputs in `sets` copies,
// plans from the same build_plan as real calls (so tuned kernels land in the disk cache).
class NormTuningProblem final : public ops::PlanTuningProblem {
 public:
  static Result<std::unique_ptr<autotune::TuningProblem>, RuntimeError> make(const Device& device,
                                                                            const autotune::TuningKey& key) {
    std::optional<NormKind> kind;
    for (NormKind k : {NormKind::LayerNorm, NormKind::RmsNorm, NormKind::Softmax})
      if (key.op == "rudnn." + std::string(contracts::norm_op_name(k))) kind = k;
    if (!kind) return RuntimeError(ErrorKind::InvalidValue, "op", "a normalization op", key.op);
    const std::size_t operands = *kind == NormKind::Softmax ? 1 : *kind == NormKind::RmsNorm ? 2 : 0;
    if ((operands && key.dtypes.size() != operands) || (!operands && key.dtypes.size() != 2 && key.dtypes.size() != 3))
      return RuntimeError(ErrorKind::InvalidValue, "dtypes", fmt::format("one dtype per operand of {}", key.op),
                          std::to_string(key.dtypes.size()));
    if (key.static_dims.size() != 1 || key.buckets.size() != 1)
      return RuntimeError(ErrorKind::InvalidValue, "key", "static dims {H} and buckets {rows}", key.to_string());
    const std::int64_t h = key.static_dims[0], rows = key.buckets[0];
    const int id = device.kind() == DeviceKind::Host ? -1 : device.ordinal();
    contracts::NormSignature sig;
    sig.kind = *kind;
    sig.input = {{rows, h}, key.dtypes[0], id};
    if (key.dtypes.size() > 1) sig.gamma = contracts::NormOperand{{h}, key.dtypes[1], id};
    if (key.dtypes.size() > 2) sig.beta = contracts::NormOperand{{h}, key.dtypes[2], id};
    if (auto e = contracts::check_normalization(sig))
      return RuntimeError(e->kind(), e->argument(), e->expected(), e->actual(), e->detail());
    auto queue = Queue::create(device);
    if (!queue.ok()) return queue.error();
    return std::unique_ptr<autotune::TuningProblem>(new NormTuningProblem(device, queue.value(), sig));
  }

  Result<compiler::LoweredOp, RuntimeError> lower(const compiler::KernelConfig& config) const override {
    return compiler::lower_normalization(compiler::NormRequest{sig_, true, config}, target());
  }

  std::size_t input_bytes() const override {
    std::size_t bytes = static_cast<std::size_t>(element_count(sig_.input.shape)) * dtype_size(sig_.input.dtype);
    for (const auto& o : {sig_.gamma, sig_.beta})
      if (o) bytes += static_cast<std::size_t>(element_count(o->shape)) * dtype_size(o->dtype);
    return bytes;
  }

  Status<RuntimeError> make_input_sets(int sets) override {
    std::mt19937_64 rng(0x5eed);  // fixed: inputs do not change a normalization kernel's time
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    auto random = [&](const contracts::NormOperand& o) {
      return random_tensor("tuning input", o.shape, o.dtype, [&] { return u(rng); });
    };
    for (int i = 0; i < sets; ++i) {
      InputSet set;
      auto x = random(sig_.input);
      if (!x.ok()) return x.error();
      set.input = std::move(x.value());
      for (auto [operand, slot] : {std::pair{&sig_.gamma, &set.gamma}, std::pair{&sig_.beta, &set.beta}})
        if (*operand) {
          auto t = random(**operand);
          if (!t.ok()) return t.error();
          slot->emplace(std::move(t.value()));
        }
      sets_.push_back(std::move(set));
    }
    auto out = Tensor::empty(sig_.input.shape, sig_.input.dtype, queue_);
    if (!out.ok()) return out.error();
    output_.emplace(std::move(out.value()));
    return queue_.synchronize();
  }

 private:
  struct InputSet {
    std::optional<Tensor> input, gamma, beta;
  };

  // Normalization kernels write only their output, never an input: nothing to restore between
  // launches (TimedCandidate::restore_outputs stays the default no-op).
  Status<RuntimeError> launch_plan(const ops::Plan& plan, int input_set) override {
    const InputSet& set = sets_[static_cast<std::size_t>(input_set)];
    std::array<ops::OperandView, 4> views{};
    const std::size_t n = operand_views(sig_.kind, *set.input, set.gamma ? &*set.gamma : nullptr,
                                        set.beta ? &*set.beta : nullptr, *output_, views);
    return ops::run_plan(plan, queue_, std::span(views.data(), n));
  }

  NormTuningProblem(Device device, Queue queue, contracts::NormSignature sig)
      : PlanTuningProblem(std::move(device), std::move(queue)), sig_(std::move(sig)) {}

  contracts::NormSignature sig_;
  std::vector<InputSet> sets_;
  std::optional<Tensor> output_;
};

// Registered when librudnn.so (or any binary with these objects) loads.
const bool kNormTuningRegistered = [] {
  autotune::register_problem_factory(std::string(autotune::normalization_search_space()->family()),
                                     &NormTuningProblem::make);
  return true;
}();

}  // namespace
#endif

}  // namespace rudnn::normalization
