#pragma once
// Fibers for the host emulation device: one per emulated CUDA thread, switched with Boost.Context's
// fcontext (ucontext's swapcontext makes a signal-mask syscall per switch, ~50x slower).
//
// A fiber runs `FiberFn(arg)` on an mmap'd stack with a guard page; it gives control back to the
// scheduler that resumed it with `Fiber::yield()` and leaves for good with `Fiber::leave()` (after
// the function returns, or when the emulator abandons a faulting thread). A fiber that never
// finished is simply dropped: nothing is unwound through fcontext, its stack is reused as is.
//
// AddressSanitizer must be told about every switch (__sanitizer_start/finish_switch_fiber), or it
// reports false stack-buffer overflows and use-after-return on the first switch.
#include <cstddef>
#include <mutex>
#include <vector>

namespace rudnn::runtime::host {

struct FiberStack {
  void* mapping = nullptr;  // whole mapping, guard page first
  std::size_t mapping_size = 0;
  char* base = nullptr;  // lowest usable address
  std::size_t size = 0;  // usable bytes
  bool dirty = false;    // an abandoned fiber left ASan stack poison behind
};

// Stacks are expensive to map (and each costs VMAs), so they are kept for the life of the process
// and shared by every launch: a worker takes what its block needs and gives them back.
class StackPool {
 public:
  static StackPool& instance();
  FiberStack* take();  // nullptr when the mapping fails
  void give(FiberStack* stack);
  static std::size_t stack_size();

 private:
  std::mutex mutex_;
  std::vector<FiberStack*> free_;
};

// The scheduler side of one OS thread: its saved context and (under ASan) its stack bounds.
struct FiberScheduler;

class Fiber {
 public:
  using Fn = void (*)(void* arg);
  // Prepares the fiber to run fn(arg) from the start of `stack` when first resumed.
  void start(FiberStack* stack, Fn fn, void* arg);
  // Runs the fiber until it yields or leaves. Called from the scheduler only.
  void resume(FiberScheduler& scheduler);
  // From inside the running fiber: back to the scheduler; returns when resumed again.
  void yield();
  // From inside the running fiber: back to the scheduler for good (never returns). `finished`:
  // the fiber's function returned (rather than being abandoned deep inside a call).
  [[noreturn]] void leave(bool finished);
  FiberStack* stack() const { return stack_; }

 private:
  friend struct FiberTrampoline;
  void* ctx_ = nullptr;  // fcontext_t of the suspended fiber
  FiberStack* stack_ = nullptr;
  Fn fn_ = nullptr;
  void* arg_ = nullptr;
  FiberScheduler* scheduler_ = nullptr;
  void* asan_fake_stack_ = nullptr;
};

struct FiberScheduler {
  void* ctx = nullptr;  // fcontext_t of the scheduler while a fiber runs
  const void* stack_bottom = nullptr;
  std::size_t stack_size = 0;
};

}  // namespace rudnn::runtime::host
