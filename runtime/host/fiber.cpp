#include "host/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

#include <boost/context/detail/fcontext.hpp>

#if defined(__SANITIZE_ADDRESS__)
#define RUDNN_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RUDNN_EMU_ASAN 1
#endif
#endif
#ifdef RUDNN_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace rudnn::runtime::host {

namespace ctx = boost::context::detail;

namespace {

// ASan instruments frames with redzones and (optionally) fake stacks, so its stacks need more room.
#ifdef RUDNN_EMU_ASAN
constexpr std::size_t kDefaultStackKiB = 256;
#else
constexpr std::size_t kDefaultStackKiB = 128;
#endif

// RUDNN_EMU_STACK_KIB (64..8192) for kernels with unusually large local arrays; read once, because
// the pool holds stacks of one size.
std::size_t configured_stack_size() {
  static const std::size_t bytes = [] {
    std::size_t kib = kDefaultStackKiB;
    if (const char* e = std::getenv("RUDNN_EMU_STACK_KIB")) {
      const long v = std::strtol(e, nullptr, 10);
      if (v >= 64 && v <= 8192) kib = static_cast<std::size_t>(v);
    }
    return kib * 1024;
  }();
  return bytes;
}

inline void asan_start_switch(void** fake_stack_save, const void* bottom, std::size_t size) {
#ifdef RUDNN_EMU_ASAN
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
#else
  (void)fake_stack_save, (void)bottom, (void)size;
#endif
}

inline void asan_finish_switch(void* fake_stack_save, const void** bottom_old, std::size_t* size_old) {
#ifdef RUDNN_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake_stack_save, bottom_old, size_old);
#else
  (void)fake_stack_save, (void)bottom_old, (void)size_old;
#endif
}

}  // namespace

StackPool& StackPool::instance() {
  // Never destroyed: launches on other threads may still give stacks back during exit.
  static StackPool* pool = new StackPool;
  return *pool;
}

std::size_t StackPool::stack_size() { return configured_stack_size(); }

FiberStack* StackPool::take() {
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      FiberStack* s = free_.back();
      free_.pop_back();
      return s;
    }
  }
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t size = configured_stack_size();
  const std::size_t total = size + page;
  // MAP_NORESERVE: only the pages a kernel actually touches are committed.
  void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  // Stacks grow down: the guard page at the low end turns an overflow into a SIGSEGV instead of
  // silent corruption of the neighbouring stack.
  if (mprotect(m, page, PROT_NONE) != 0) {
    munmap(m, total);
    return nullptr;
  }
  auto* s = new FiberStack;
  s->mapping = m;
  s->mapping_size = total;
  s->base = static_cast<char*>(m) + page;
  s->size = size;
  return s;
}

void StackPool::give(FiberStack* stack) {
  if (stack == nullptr) return;
  std::lock_guard lock(mutex_);
  free_.push_back(stack);
}

struct FiberTrampoline {
  static void entry(ctx::transfer_t t) {
    auto* self = static_cast<Fiber*>(t.data);
    self->scheduler_->ctx = t.fctx;
    asan_finish_switch(nullptr, &self->scheduler_->stack_bottom, &self->scheduler_->stack_size);
    self->fn_(self->arg_);
    self->leave(true);
  }
};

void Fiber::start(FiberStack* stack, Fn fn, void* arg) {
  stack_ = stack;
  fn_ = fn;
  arg_ = arg;
  asan_fake_stack_ = nullptr;
#ifdef RUDNN_EMU_ASAN
  // An abandoned fiber's frames keep their redzone poison; a new fiber on that stack would trip
  // over it. (Finished fibers popped their frames, so this is only needed after a fault.)
  if (stack->dirty) __asan_unpoison_memory_region(stack->base, stack->size);
#endif
  stack->dirty = false;
  ctx_ = ctx::make_fcontext(stack->base + stack->size, stack->size, &FiberTrampoline::entry);
}

void Fiber::resume(FiberScheduler& scheduler) {
  scheduler_ = &scheduler;
  void* fake = nullptr;
  asan_start_switch(&fake, stack_->base, stack_->size);
  ctx::transfer_t t = ctx::jump_fcontext(ctx_, this);
  asan_finish_switch(fake, nullptr, nullptr);
  ctx_ = t.fctx;
}

void Fiber::yield() {
  FiberScheduler* s = scheduler_;
  asan_start_switch(&asan_fake_stack_, s->stack_bottom, s->stack_size);
  ctx::transfer_t t = ctx::jump_fcontext(s->ctx, nullptr);
  asan_finish_switch(asan_fake_stack_, &scheduler_->stack_bottom, &scheduler_->stack_size);
  scheduler_->ctx = t.fctx;
}

void Fiber::leave(bool finished) {
  FiberScheduler* s = scheduler_;
#ifdef RUDNN_EMU_ASAN
  // The frames still on this stack keep their redzone poison, which would trip the next fiber that
  // uses the stack. A finished fiber has only the trampoline's frames left near the top, so a cheap
  // partial unpoison does; an abandoned one may be deep in the stack: unpoison all of it.
  char* top = stack_->base + stack_->size;
  char* low = static_cast<char*>(__builtin_frame_address(0)) - 1024;
  if (!finished || low < stack_->base) low = stack_->base;
  __asan_unpoison_memory_region(low, static_cast<std::size_t>(top - low));
#else
  (void)finished;
#endif
  // nullptr: this fiber is never resumed, ASan may drop its fake stack.
  asan_start_switch(nullptr, s->stack_bottom, s->stack_size);
  ctx::jump_fcontext(s->ctx, nullptr);
  __builtin_unreachable();
}

}  // namespace rudnn::runtime::host
