// torch.ops.rudnn.paged_* → rudnn::paged_attention. A PagedPlan (the Python object
// rudnn.paged_attention.PagedPlan holds one) is a DevicePlan uploaded once for a schedule, with the
// split-KV and deterministic-backward workspaces its calls have needed, made once per shape and
// kept (docs/pytorch.md).
#include <map>
#include <memory>
#include <mutex>

#include "bridge.h"
#include "rudnn/paged_attention.h"

namespace rudnn::python {

namespace {

using paged_attention::DevicePlan;
using paged_attention::OrderedBackwardWorkspace;
using paged_attention::SplitWorkspace;

class PagedPlan {
 public:
  PagedPlan(DevicePlan plan, Place place) : plan_(std::move(plan)), place_(std::move(place)) {}
  const DevicePlan& plan() const { return plan_; }
  const Place& place() const { return place_; }

  // The split-KV workspace for (heads, value dim, splits), made on first use (under workspace_mutex()).
  Result<SplitWorkspace*, PagedAttentionError> split_workspace(const Tensor& q, std::int64_t heads,
                                                               std::int64_t value_dim, std::int64_t splits) {
    auto key = std::make_tuple(heads, value_dim, splits);
    if (auto found = splits_.find(key); found != splits_.end()) return &found->second;
    auto made = SplitWorkspace::create(q, plan_.queries(), heads, value_dim, splits);
    if (!made) return made.error();
    return &splits_.emplace(key, std::move(made.value())).first->second;
  }
  // The deterministic backward's workspace for q's heads, made on first use (under workspace_mutex()).
  Result<OrderedBackwardWorkspace*, PagedAttentionError> ordered_workspace(const Tensor& q) {
    if (auto found = ordered_.find(q.dim(1)); found != ordered_.end()) return &found->second;
    auto made = OrderedBackwardWorkspace::create(plan_, q);
    if (!made) return made.error();
    return &ordered_.emplace(q.dim(1), std::move(made.value())).first->second;
  }
  // One call at a time per plan through a kept workspace: a split call's partial and merge kernels and
  // the ordered backward's state must not interleave with another thread's call.
  std::mutex& workspace_mutex() { return workspace_mutex_; }

 private:
  DevicePlan plan_;
  Place place_;
  std::mutex workspace_mutex_;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, SplitWorkspace> splits_;
  std::map<std::int64_t, OrderedBackwardWorkspace> ordered_;
};

using Tables = std::vector<std::vector<std::int32_t>>;
using Ints = std::vector<std::int64_t>;

// A plan's calls run on the queue it was uploaded to (its metadata lives there); a call from another
// stream is rejected before any workspace is made for it.
std::optional<Error> check_place(const PagedPlan& plan, const Place& place) {
  if (place == plan.place()) return std::nullopt;
  auto describe = [](const Place& p) {
    return std::get<0>(p) == 0 ? std::string("the host device")
                               : "cuda:" + std::to_string(std::get<1>(p)) + " stream " + std::to_string(std::get<2>(p));
  };
  return Error(ErrorKind::QueueMismatch, "query", "the plan's device and stream (" + describe(plan.place()) + ")",
               describe(place));
}

// The ranks a kept workspace reads dims from, checked first so that a wrong rank is the library's
// kind of error, never an out-of-range dim().
std::optional<Error> check_ranks(const Tensor& q, const Tensor* value) {
  if (q.rank() != 3)
    return Error(ErrorKind::ShapeMismatch, "query", "[queries, heads, dim]", shape_to_string(q.shape()));
  if (value && value->rank() != 4)
    return Error(ErrorKind::ShapeMismatch, "value", "[pages, page_size, heads, dim]", shape_to_string(value->shape()));
  return std::nullopt;
}

// The split workspace of a call (splits = 1: none; the library checks the rest).
Result<SplitWorkspace*, PagedAttentionError> workspace_of(PagedPlan& plan, const Tensor& q, const Tensor& value,
                                                          std::int64_t splits) {
  if (splits == 1) return static_cast<SplitWorkspace*>(nullptr);
  if (auto e = check_ranks(q, &value)) return PagedAttentionError(*e);
  return plan.split_workspace(q, q.dim(1), value.dim(3), splits);
}

}  // namespace

void bind_paged_attention(nb::module_& m) {
  nb::class_<PagedPlan>(m, "PagedPlan")
      .def_prop_ro("queries", [](const PagedPlan& p) { return p.plan().queries(); })
      .def_prop_ro("sequences", [](const PagedPlan& p) { return p.plan().sequences(); })
      .def_prop_ro("page_size", [](const PagedPlan& p) { return p.plan().page_size(); })
      .def_prop_ro("pages", [](const PagedPlan& p) { return p.plan().pages(); });

  // (error or None, plan or None): the schedule validated on the host, uploaded on `place`.
  m.def("paged_plan", [](const Place& place, std::int64_t page_size, std::int64_t pages, const Tables& tables,
                         const Ints& lengths, const Ints& sequence_ids, const Ints& positions) {
    std::unique_ptr<PagedPlan> made;
    Outcome outcome = run("paged_attention", place, [&](Views& v) -> std::optional<Error> {
      auto host = paged_attention::HostPlan::create(page_size, pages, tables, lengths, sequence_ids, positions);
      if (!host) return host.error();
      // upload() takes its device and queue from a query tensor; any tensor on the queue will do.
      auto anchor = Tensor::empty({1}, DType::F32, v.queue());
      if (!anchor) return anchor.error();
      auto plan = DevicePlan::upload(*host, *anchor);
      if (!plan) return plan.error();
      made = std::make_unique<PagedPlan>(std::move(plan.value()), place);
      return std::nullopt;
    });
    return std::make_tuple(outcome, std::move(made));
  });

  m.def("paged_attention",
        [](const Place& place, PagedPlan& plan, const TensorArg& q, const TensorArg& key_cache,
           const TensorArg& value_cache, float scale, bool causal, std::int64_t splits, const TensorArg& out) {
          return run("paged_attention", place, [&](Views& v) -> std::optional<Error> {
            auto query = v(q, "query");
            auto k = v(key_cache, "key");
            auto val = v(value_cache, "value");
            auto o = v(out, "out");
            if (v.error()) return v.error();
            if (auto e = check_place(plan, place)) return e;
            std::lock_guard lock(plan.workspace_mutex());
            auto workspace = workspace_of(plan, *query, *val, splits);
            if (!workspace) return workspace.error();
            return failure(plan.plan().attention_into(*query, *k, *val, scale, causal, *o, *workspace));
          });
        });
  m.def("paged_mla",
        [](const Place& place, PagedPlan& plan, const TensorArg& q, const TensorArg& qp, const TensorArg& latent,
           const TensorArg& kp, float scale, bool causal, std::int64_t splits, const TensorArg& out) {
          return run("paged_attention", place, [&](Views& v) -> std::optional<Error> {
            auto query = v(q, "query");
            auto rope = v(qp, "query_rope");
            auto lat = v(latent, "latent");
            auto krope = v(kp, "key_rope");
            auto o = v(out, "out");
            if (v.error()) return v.error();
            if (auto e = check_place(plan, place)) return e;
            std::lock_guard lock(plan.workspace_mutex());
            auto workspace = workspace_of(plan, *query, *lat, splits);
            if (!workspace) return workspace.error();
            return failure(plan.plan().mla_into(*query, *rope, *lat, *krope, scale, causal, *o, *workspace));
          });
        });
  // The gradients into the given buffers (absent: not computed); deterministic: the ordered path.
  m.def("paged_attention_backward", [](const Place& place, PagedPlan& plan, const TensorArg& q,
                                       const TensorArg& key_cache, const TensorArg& value_cache,
                                       const TensorArg& grad_out, float scale, bool causal, bool deterministic,
                                       const OptionalTensor& dq, const OptionalTensor& dk, const OptionalTensor& dv) {
    return run("paged_attention", place, [&](Views& v) -> std::optional<Error> {
      auto query = v(q, "query");
      auto k = v(key_cache, "key");
      auto val = v(value_cache, "value");
      auto dy = v(grad_out, "grad_out");
      auto gq = v(dq, "dquery");
      auto gk = v(dk, "dkey");
      auto gv = v(dv, "dvalue");
      if (v.error()) return v.error();
      paged_attention::AttentionBackwardOutputs out{gq ? &*gq : nullptr, gk ? &*gk : nullptr, gv ? &*gv : nullptr};
      if (auto e = check_place(plan, place)) return e;
      if (!deterministic)
        return failure(plan.plan().attention_backward_selected_into(*query, *k, *val, *dy, scale, causal, out));
      if (auto e = check_ranks(*query, nullptr)) return e;
      std::lock_guard lock(plan.workspace_mutex());
      auto workspace = plan.ordered_workspace(*query);
      if (!workspace) return workspace.error();
      return failure(
          plan.plan().attention_backward_ordered_into(*query, *k, *val, *dy, scale, causal, **workspace, out));
    });
  });
  m.def("paged_mla_backward", [](const Place& place, PagedPlan& plan, const TensorArg& q, const TensorArg& qp,
                                 const TensorArg& latent, const TensorArg& kp, const TensorArg& grad_out, float scale,
                                 bool causal, bool deterministic, const OptionalTensor& dq, const OptionalTensor& dqp,
                                 const OptionalTensor& dlatent, const OptionalTensor& dkp) {
    return run("paged_attention", place, [&](Views& v) -> std::optional<Error> {
      auto query = v(q, "query");
      auto rope = v(qp, "query_rope");
      auto lat = v(latent, "latent");
      auto krope = v(kp, "key_rope");
      auto dy = v(grad_out, "grad_out");
      auto gq = v(dq, "dquery");
      auto gqp = v(dqp, "dquery_rope");
      auto glat = v(dlatent, "dlatent");
      auto gkp = v(dkp, "dkey_rope");
      if (v.error()) return v.error();
      paged_attention::MlaBackwardOutputs out{gq ? &*gq : nullptr, gqp ? &*gqp : nullptr, glat ? &*glat : nullptr,
                                              gkp ? &*gkp : nullptr};
      if (auto e = check_place(plan, place)) return e;
      if (!deterministic)
        return failure(plan.plan().mla_backward_selected_into(*query, *rope, *lat, *krope, *dy, scale, causal, out));
      if (auto e = check_ranks(*query, nullptr)) return e;
      std::lock_guard lock(plan.workspace_mutex());
      auto workspace = plan.ordered_workspace(*query);
      if (!workspace) return workspace.error();
      return failure(
          plan.plan().mla_backward_ordered_into(*query, *rope, *lat, *krope, *dy, scale, causal, **workspace, out));
    });
  });
  // Writes k and v at each query row's slot of the caches, in place.
  m.def("paged_append", [](const Place& place, PagedPlan& plan, const TensorArg& k, const TensorArg& v,
                           const TensorArg& key_cache, const TensorArg& value_cache) {
    return run("paged_attention", place, [&](Views& views) -> std::optional<Error> {
      auto key = views(k, "key");
      auto value = views(v, "value");
      auto kc = views(key_cache, "key_cache");
      auto vc = views(value_cache, "value_cache");
      if (views.error()) return views.error();
      if (auto e = check_place(plan, place)) return e;
      void* const key_storage = kc->data();
      void* const value_storage = vc->data();
      // Moved: no other handle shares the views, so append writes the torch tensors in place.
      auto appended = plan.plan().append(*key, *value, std::move(*kc), std::move(*vc));
      if (!appended) return appended.error();
      if (appended->key_cache.data() != key_storage || appended->value_cache.data() != value_storage)
        return Error(ErrorKind::Internal, "key_cache", "appended in place", "a copy");
      return std::nullopt;
    });
  });
}

}  // namespace rudnn::python
