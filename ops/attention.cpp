// The public attention entry: contract check → strategy fit → plan cache → (cold) compiler, with the
// autotune provider for the Autotune strategy → launches. With the autotune component this file also
// tells autotune how to build and time an attention candidate (AttentionTuningProblem).
#include "rudnn/attention.h"

#include <bit>
#include <cmath>
#include <random>

#include "contracts/attention.h"
#include "log.h"
#include "plan_cache.h"
#include "tuned_plan.h"
#if RUDNN_HAS_AUTOTUNE
#include "rudnn/autotune.h"
#include "rudnn/autotune/provider.h"
#include "rudnn/autotune/search_space.h"
#include "rudnn/autotune/tuner.h"
#endif

namespace rudnn::attention {

namespace {

// Plan-key word 0: distinct from the other families' (0..2, 100.., 200).
constexpr std::int64_t kAttentionKey = 300;

int device_id(const Device& d) { return d.kind() == DeviceKind::Host ? -1 : d.ordinal(); }
contracts::AttentionOperand operand(const Tensor& t) { return {t.shape(), t.dtype(), device_id(t.device())}; }

contracts::AttentionStrategy to_contract(attention::AttentionStrategy s) {
  switch (s) {
    case attention::AttentionStrategy::FlashBlackboxAccelerated: return contracts::AttentionStrategy::FlashBlackboxAccelerated;
    case attention::AttentionStrategy::FlashUnit: return contracts::AttentionStrategy::FlashUnit;
    case attention::AttentionStrategy::Fallback: return contracts::AttentionStrategy::Fallback;
    case attention::AttentionStrategy::Autotune: return contracts::AttentionStrategy::Autotune;
  }
  return contracts::AttentionStrategy::Fallback;
}

// log2 of a power-of-two bucket (autotune::anchor rounds up to one).
std::int64_t log2_bucket(std::int64_t v) {
  std::int64_t b = 0;
  while ((std::int64_t{1} << b) < v) ++b;
  return b;
}

// The operand views in slot order: query, key, value, mask, attn_bias, output.
Status<RuntimeError> launch(const ops::Plan& plan, const Queue& queue, const Tensor& q, const Tensor& k,
                            const Tensor& v, const Tensor* mask, const Tensor* bias, const Tensor& out) {
  std::array<ops::OperandView, 6> views{};
  views[0] = {q.data(), &q.shape()};
  views[1] = {k.data(), &k.shape()};
  views[2] = {v.data(), &v.shape()};
  if (mask) views[3] = {mask->data(), &mask->shape()};
  if (bias) views[4] = {bias->data(), &bias->shape()};
  views[5] = {out.data(), &out.shape()};
  return ops::run_plan(plan, queue, views);
}

}  // namespace

attention::AttentionStrategy default_strategy() {
#if RUDNN_HAS_AUTOTUNE
  return attention::AttentionStrategy::Autotune;
#else
  return attention::AttentionStrategy::Fallback;
#endif
}

Result<Tensor, AttentionSetupError> attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                              const std::optional<Tensor>& mask, const std::optional<Tensor>& attn_bias,
                                              AttentionModuleOptions options, attention::AttentionStrategy strategy) {
  contracts::AttentionSignature sig{operand(query), operand(key), operand(value), std::nullopt, std::nullopt, 1.0,
                                    options.causal};
  if (mask) sig.mask = operand(*mask);
  if (attn_bias) sig.bias = operand(*attn_bias);
  if (options.scale) sig.scale = *options.scale;
  else if (query.rank() == 4 && query.dim(3) > 0) sig.scale = 1.0 / std::sqrt(static_cast<double>(query.dim(3)));
  if (auto e = contracts::check_attention(sig)) return *e;
  const contracts::AttentionStrategy requested = to_contract(strategy);
#if !RUDNN_HAS_AUTOTUNE
  if (requested == contracts::AttentionStrategy::Autotune)
    return AttentionSetupError(ErrorKind::Unsupported, "strategy", "a build with the autotune component for Autotune",
                               "a build without it");
#endif
  if (requested != contracts::AttentionStrategy::Autotune)
    if (auto e = contracts::check_strategy_fits(sig, requested, ops::target_for(query.device()).arch)) return *e;
  std::vector<std::pair<const Tensor*, const char*>> all = {{&query, "query"}, {&key, "key"}, {&value, "value"}};
  if (mask) all.push_back({&*mask, "mask"});
  if (attn_bias) all.push_back({&*attn_bias, "attn_bias"});
  for (auto [t, name] : all) {
    if (!t->is_contiguous())
      return AttentionSetupError(ErrorKind::ShapeMismatch, name, "a contiguous tensor",
                                 "strides " + shape_to_string(t->strides()));
    if (!(t->queue() == query.queue()))
      return AttentionSetupError(ErrorKind::QueueMismatch, name, "the query's queue", "another queue of the same device");
  }

  const Device& device = query.device();
  const std::int64_t b = query.dim(0), hq = query.dim(1), tq = query.dim(2), d = query.dim(3);
  const std::int64_t hkv = key.dim(1), tk = key.dim(2), dv = value.dim(3);
  std::int64_t mode_word = 0, buckets = 0;
#if RUDNN_HAS_AUTOTUNE
  if (requested == contracts::AttentionStrategy::Autotune && autotune::mode() != autotune::Mode::Off) {
    mode_word = 1 + static_cast<std::int64_t>(autotune::mode());
    buckets = log2_bucket(b) | (log2_bucket(tq) << 8) | (log2_bucket(tk) << 16);
  }
#endif
  auto bcast = [](const std::optional<Tensor>& t) -> std::int64_t {
    if (!t) return 0;
    return 1 | (t->dim(0) == 1 ? 2 : 0) | (t->dim(1) == 1 ? 4 : 0) | (static_cast<std::int64_t>(t->dtype()) << 3);
  };
  ops::PlanKey pkey;
  pkey.words = {kAttentionKey,
                static_cast<std::int64_t>(query.dtype()) | (static_cast<std::int64_t>(requested) << 8) |
                    (options.causal ? 1 << 12 : 0),
                hq | (hkv << 20),
                d | (dv << 20),
                bcast(mask) | (bcast(attn_bias) << 16),
                static_cast<std::int64_t>(device.kind()) | (static_cast<std::int64_t>(device.ordinal()) << 8),
                static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(static_cast<float>(sig.scale))),
                mode_word,
                buckets,
                0};
  auto& cache = ops::PlanCache::instance();
  std::shared_ptr<const ops::Plan> plan = cache.find(pkey);
  if (!plan) {
    auto made = ops::make_tuned_plan(device, mode_word != 0, [&](compiler::ConfigProvider* provider) {
      return compiler::lower_attention(compiler::AttentionRequest{sig, requested, std::nullopt, provider},
                                       ops::target_for(device));
    });
    if (!made.ok()) return AttentionSetupError::from(made.error());
    plan = made.value();
    cache.insert(pkey, plan);
  }
  ops::note_choice(*plan);
  auto out = Tensor::empty({b, hq, tq, dv}, query.dtype(), query.queue());
  if (!out.ok()) return AttentionSetupError::from(out.error());
  if (ops::poison_outputs())
    if (auto s = out->poison(); !s.ok()) return AttentionSetupError::from(s.error());
  if (auto s = launch(*plan, query.queue(), query, key, value, mask ? &*mask : nullptr, attn_bias ? &*attn_bias : nullptr,
                      out.value());
      !s.ok())
    return AttentionSetupError::from(s.error());
  return std::move(out.value());
}

#if RUDNN_HAS_AUTOTUNE
namespace {

// How autotune builds and times an attention candidate: the key's heads, dims, flags and the
// buckets' sizes (B, Tq, Tk), random q/k/v (and a mask excluding ~10 % of keys, a bias), plans from
// the same build_plan as real calls.
class AttentionTuningProblem final : public ops::PlanTuningProblem {
 public:
  static Result<std::unique_ptr<autotune::TuningProblem>, RuntimeError> make(const Device& device,
                                                                            const autotune::TuningKey& key) {
    // static dims {Hq, Hkv, D, Dv, causal, mask, bias, strategy}; buckets {B, Tq, Tk}; dtypes {query[, bias]}.
    if (key.op != "rudnn.attention" || key.static_dims.size() != 8 || key.buckets.size() != 3 || key.dtypes.empty())
      return RuntimeError(ErrorKind::InvalidValue, "key", "rudnn.attention [Hq, Hkv, D, Dv, causal, mask, bias, strategy]",
                          key.to_string());
    const auto& s = key.static_dims;
    const int id = device.kind() == DeviceKind::Host ? -1 : device.ordinal();
    const std::int64_t b = key.buckets[0], tq = key.buckets[1], tk = key.buckets[2];
    contracts::AttentionSignature sig;
    sig.query = {{b, s[0], tq, s[2]}, key.dtypes[0], id};
    sig.key = {{b, s[1], tk, s[2]}, key.dtypes[0], id};
    sig.value = {{b, s[1], tk, s[3]}, key.dtypes[0], id};
    if (s[5]) sig.mask = contracts::AttentionOperand{{1, 1, tq, tk}, DType::U8, id};
    if (s[6]) sig.bias = contracts::AttentionOperand{{1, 1, tq, tk}, key.dtypes.back(), id};
    sig.causal = s[4] != 0;
    sig.scale = 1.0 / std::sqrt(static_cast<double>(s[2]));
    if (auto e = contracts::check_attention(sig))
      return RuntimeError(e->kind(), e->argument(), e->expected(), e->actual(), e->detail());
    auto queue = Queue::create(device);
    if (!queue.ok()) return queue.error();
    return std::unique_ptr<autotune::TuningProblem>(new AttentionTuningProblem(
        device, queue.value(), sig, static_cast<contracts::AttentionStrategy>(s[7])));
  }

  Result<compiler::LoweredOp, RuntimeError> lower(const compiler::KernelConfig& config) const override {
    return compiler::lower_attention(compiler::AttentionRequest{sig_, strategy_, config, nullptr}, target());
  }

  std::size_t input_bytes() const override {
    std::size_t bytes = 0;
    for (const auto* o : {&sig_.query, &sig_.key, &sig_.value})
      bytes += static_cast<std::size_t>(element_count(o->shape)) * dtype_size(o->dtype);
    return bytes;
  }

  Status<RuntimeError> make_input_sets(int sets) override {
    std::mt19937_64 rng(0x5eed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    auto random = [&](const contracts::AttentionOperand& o, bool mask) {
      return random_tensor("tuning operand", o.shape, o.dtype, [&] { return mask ? (u(rng) > 0.8 ? 1.0 : 0.0) : u(rng); });
    };
    for (int i = 0; i < sets; ++i) {
      Set set;
      for (auto [o, slot] : {std::pair{&sig_.query, &set.q}, {&sig_.key, &set.k}, {&sig_.value, &set.v}}) {
        auto t = random(*o, false);
        if (!t.ok()) return t.error();
        slot->emplace(std::move(t.value()));
      }
      sets_.push_back(std::move(set));
    }
    if (sig_.mask) {
      auto m = random(*sig_.mask, true);
      if (!m.ok()) return m.error();
      mask_.emplace(std::move(m.value()));
    }
    if (sig_.bias) {
      auto bt = random(*sig_.bias, false);
      if (!bt.ok()) return bt.error();
      bias_.emplace(std::move(bt.value()));
    }
    const Shape out{sig_.query.shape[0], sig_.query.shape[1], sig_.query.shape[2], sig_.value.shape[3]};
    auto o = Tensor::empty(out, sig_.query.dtype, queue_);
    if (!o.ok()) return o.error();
    out_.emplace(std::move(o.value()));
    return queue_.synchronize();
  }

 private:
  struct Set {
    std::optional<Tensor> q, k, v;
  };
  Status<RuntimeError> launch_plan(const ops::Plan& plan, int input_set) override {
    const Set& s = sets_[static_cast<std::size_t>(input_set)];
    return attention::launch(plan, queue_, *s.q, *s.k, *s.v, mask_ ? &*mask_ : nullptr, bias_ ? &*bias_ : nullptr, *out_);
  }

  AttentionTuningProblem(Device device, Queue queue, contracts::AttentionSignature sig,
                         contracts::AttentionStrategy strategy)
      : PlanTuningProblem(std::move(device), std::move(queue)), sig_(std::move(sig)), strategy_(strategy) {}

  contracts::AttentionSignature sig_;
  contracts::AttentionStrategy strategy_;
  std::vector<Set> sets_;
  std::optional<Tensor> mask_, bias_, out_;
};

const bool kAttentionTuningRegistered = [] {
  autotune::register_problem_factory(std::string(autotune::attention_search_space()->family()),
                                     &AttentionTuningProblem::make);
  return true;
}();

}  // namespace
#endif

}  // namespace rudnn::attention
