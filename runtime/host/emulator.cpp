// The host emulation device (DESIGN §4): a block's threads are fibers on one OS thread, scheduled in
// rounds. Each round resumes every ready thread once, in forward, reverse or seeded-random order,
// until it reaches its next yield point (a block barrier or a warp collective) or exits. Yield points
// are rendezvous: a barrier releases its threads when the last one arrives, a warp collective when
// the last lane of its mask arrives; released threads run in the next round. A round with nobody
// ready while threads remain is a deadlock. Kernel bugs are detected eagerly at the call that makes
// them certain, recorded with the block, thread and call site, and the block is abandoned.
#include "host/emulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "host/fiber.h"
#include "host/lane_maps.h"
#include "host/warp_math.h"
#include "host/wgmma_layout.h"

namespace rudnn::runtime::host {
namespace {

constexpr unsigned kMaxThreadsPerBlock = 1024;
// Shared memory is filled with 0xFF bytes at block start: NaN as f64, f32, f16, bf16 and fp8, and -1
// as an integer, so reading memory no thread wrote shows up in results.
constexpr unsigned char kPoisonByte = 0xFF;
// What a shuffle returns when it reads a lane outside its mask (NaN as f32 / f64).
constexpr std::uint64_t kPoison32 = 0xFFBADBADull;
constexpr std::uint64_t kPoison64 = 0xFFFBADBADBADBADull;

struct Site {
  const char* file = "?";
  int line = 0;
};
bool same_site(Site a, Site b) { return a.line == b.line && (a.file == b.file || std::strcmp(a.file, b.file) == 0); }
std::string where(Site s) { return fmt::format("{}:{}", s.file ? s.file : "?", s.line); }
std::string dim(const rudnn_emu_dim3& d) { return fmt::format("({},{},{})", d.x, d.y, d.z); }

enum class Wait : std::uint8_t { None, Barrier, Warp };
enum class Collective : std::uint8_t { SyncWarp, Shfl, Vote, Reduce, Mma, Ldmatrix, Wgmma, WgmmaWait };

// Per thread, the landed copies a fence.proxy.async clears one by one (Thread::unfenced).
constexpr std::size_t kUnfencedRanges = 256;

struct AsyncCopy {
  void* dst;
  const void* src;
  unsigned cp_size, src_size;
  std::uint64_t group;
};

struct Fault {
  std::string what, expected, actual;
  rudnn_emu_dim3 block{}, thread{};
  Site site;
};

struct Thread {
  rudnn_emu_thread_info info{};
  unsigned linear = 0;
  Fiber fiber;
  bool ready = false, done = false;
  Wait wait = Wait::None;
  Site site;
  // The pending collective and this lane's operands. mma/ldmatrix keep pointers into the lane's
  // own stack, which stays intact while the lane is suspended.
  Collective kind{};
  int mode = 0;
  unsigned mask = 0;
  std::uint64_t value = 0, value2 = 0;
  int arg = 0, width = 32, predicate = 0;
  const void* in0 = nullptr;
  const void* in1 = nullptr;
  const void* in2 = nullptr;
  void* out = nullptr;
  std::uint64_t result = 0;
  // cp.async: copies not yet retired, in issue order; `committed` = groups closed so far.
  std::vector<AsyncCopy> copies;
  std::uint64_t committed = 0;
  // wgmma: groups closed so far, and whether a wgmma.fence came after the last wait_group; the stack
  // pointer of the code that called its pending wgmma.wait_group (null: unknown).
  std::uint64_t wgmma_committed = 0;
  bool wgmma_fenced = false;
  const void* wait_stack_pointer = nullptr;
  // Shared memory (offset, bytes) its copies wrote since its last fence.proxy.async; adjacent
  // copies merge. Past kUnfencedRanges the list stops growing and the fence scans the whole arena
  // (kernels that never fence, mma.sync ones, would otherwise grow it with every copy).
  std::vector<std::pair<std::size_t, std::size_t>> unfenced;
  bool unfenced_overflow = false;
};

// A wgmma issued by a warp and not yet retired. Its operands are read at issue, as early as hardware
// may read them, and again when a wait_group retires it, as late as hardware may: they must be the
// same (a kernel that issues before its copies have landed, or overwrites an operand in flight, is
// told so), and the product is computed then.
struct PendingWgmma {
  int type, n, flags;
  std::uint64_t a_desc, b_desc, group;
  bool a_in_registers;
  const void* a_regs[32];
  void* d[32];
  std::vector<std::uint16_t> operands;  // as read at issue
  Site site;
};

// What the four warps of a warpgroup must agree on, one wgmma after another.
struct WgmmaIssue {
  int mode;
  std::uint64_t a_desc, b_desc;
  Site site;
};
struct Warpgroup {
  std::deque<WgmmaIssue> log;  // issues not yet made by every warp, from index `base`
  std::uint64_t base = 0;
  std::uint64_t issued[4] = {0, 0, 0, 0};
};

struct WarpOp {
  Collective kind;
  int mode;
  unsigned mask, arrived;
};
struct Warp {
  unsigned exists = 0, exited = 0;
  std::vector<WarpOp> ops;  // pending collectives; several only when lanes diverged
  std::vector<PendingWgmma> wgmma;
};

std::string collective_name(Collective kind, int mode, unsigned mask) {
  switch (kind) {
    case Collective::SyncWarp: return fmt::format("__syncwarp(0x{:08x})", mask);
    case Collective::Shfl: {
      static const char* names[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync"};
      return fmt::format("{}(0x{:08x}, {}-byte value)", names[mode & 3], mask, mode >> 8);
    }
    case Collective::Vote: {
      static const char* names[] = {"__ballot_sync", "__any_sync", "__all_sync"};
      return fmt::format("{}(0x{:08x})", names[mode % 3], mask);
    }
    case Collective::Reduce: {
      static const char* names[] = {"add", "min", "max", "and", "or", "xor"};
      return fmt::format("__reduce_{}_sync(0x{:08x}, {})", names[(mode & 15) % 6], mask,
                         (mode >> 4) ? "int" : "unsigned");
    }
    case Collective::Mma: return "mma.sync.m16n8k16";
    case Collective::Ldmatrix: return fmt::format("ldmatrix.x{}{}", mode & 15, (mode >> 4) ? ".trans" : "");
    case Collective::Wgmma:
      return fmt::format("wgmma.mma_async.m64n{}k16.{}{}", mode >> 8, (mode & 1) ? "bf16" : "f16",
                         (mode >> 1 & 1) ? " (A in registers)" : "");
    case Collective::WgmmaWait: return fmt::format("wgmma.wait_group {}", mode);
  }
  return "?";
}

// Operand element `at` of warp `rank`'s share (16 rows of A, then B's columns; 16 k each) for a
// fault message: "A element (row, k 3)" or "B element (column, k 3)".
std::string operand_element(std::size_t at, int rank) {
  const bool in_a = at < 16 * 16;
  const auto row = static_cast<int>(in_a ? at / 16 : at / 16 - 16), k = static_cast<int>(at % 16);
  return fmt::format("{} element ({}, k {})", in_a ? "A" : "B", in_a ? 16 * rank + row : row, k);
}

// A wgmma's descriptors for a fault message (A's only when A is in shared memory).
std::string describe_descriptors(bool a_in_registers, std::uint64_t a_desc, std::uint64_t b_desc) {
  return a_in_registers ? fmt::format("b 0x{:016x}", b_desc) : fmt::format("a 0x{:016x}, b 0x{:016x}", a_desc, b_desc);
}

struct LaunchState {
  ThreadEntry entry = nullptr;
  void** args = nullptr;
  Dim3 grid, block;
  unsigned threads_per_block = 0;
  std::uint64_t blocks = 0;
  std::size_t shared_bytes = 0;
  ScheduleOptions schedule;
  std::atomic<std::uint64_t> next_block{0};
  // Lowest faulting block so far; blocks above it are not started (claims are in increasing
  // order, so every block below it still runs and a lower fault can still replace this one).
  std::atomic<std::uint64_t> fault_block{~std::uint64_t{0}};
  std::mutex mutex;
  std::optional<Fault> fault;
  std::optional<RuntimeError> resource_error;
};

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Worker;
thread_local Worker* tl_worker = nullptr;

class Worker {
 public:
  explicit Worker(LaunchState& launch) : launch_(launch) {}
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() {
    for (FiberStack* s : stacks_) StackPool::instance().give(s);
    if (arena_ != nullptr) ::operator delete (arena_, std::align_val_t{16});
  }

  bool prepare();
  void run();

  Thread* current() const { return current_; }
  int syncthreads(Thread& t, int op, int predicate, Site s);
  // Joins the collective described by t's operand fields; returns once it completed.
  void collective(Thread& t, Collective kind, int mode, unsigned mask, Site s);
  // Checks a wgmma's warpgroup and fence, then joins the warp's collective that issues it.
  void wgmma(Thread& t, int mode, Site s);
  void check_shared(Thread& t, const void* p, std::size_t bytes, std::size_t align, const char* what, Site s);
  void retire_copies(Thread& t, std::uint64_t below_group);
  // fence.proxy.async by t: the async proxy (wgmma) may read what t's copies wrote.
  void fence_proxy_async(Thread& t);
  // Runs the warp's pending wgmma of groups below `below_group`, in issue order; false on a fault.
  bool retire_wgmma(Thread* lanes, std::uint64_t below_group);
  // Whether each lane's accumulators and A registers of `p` are still in scope at the wait; else a
  // fault naming the first lane whose frame returned.
  bool wgmma_registers_in_scope(Thread* lanes, const PendingWgmma& p);
  // Warp `rank`'s operands of `p` as shared memory (or A's registers) hold them now, into `out`; false
  // with *bad set when an element is outside the block's shared memory. Read at issue and at retirement.
  bool read_wgmma_operands(const PendingWgmma& p, int rank, std::vector<std::uint16_t>& out, std::uint32_t* bad) const {
    return warp_math::wgmma_operands(p.n, p.flags, rank, p.a_desc, p.a_in_registers ? p.a_regs : nullptr, p.b_desc,
                                     arena_, RUDNN_EMU_SHARED_WINDOW_BASE, launch_.shared_bytes, out, bad);
  }
  // The first of warp `rank`'s operand elements of p in shared memory (an index as above) that a
  // cp.async wrote without its thread's fence.proxy.async since, or -1.
  long unfenced_operand(const PendingWgmma& p, int rank) const {
    std::vector<std::uint16_t> marks;
    std::uint32_t bad = 0;
    if (!warp_math::wgmma_operands(p.n, p.flags, rank, p.a_desc, p.a_in_registers ? p.a_regs : nullptr, p.b_desc,
                                   unfenced_.data(), RUDNN_EMU_SHARED_WINDOW_BASE, launch_.shared_bytes, marks, &bad))
      return -1;
    for (std::size_t i = p.a_in_registers ? 16 * 16 : 0; i < marks.size(); ++i)
      if (marks[i] != 0) return static_cast<long>(i);
    return -1;
  }
  void set_fault(const Thread& t, Site s, std::string what, std::string expected, std::string actual);
  [[noreturn]] void abandon(Thread& t) { t.fiber.leave(false); }
  static void thread_main(void* arg);

 private:
  bool run_block(std::uint64_t b);
  void on_exit(Thread& t);
  void complete(Warp& w, const WarpOp& op, unsigned base);
  void issue_wgmma(Warp& w, const WarpOp& op, unsigned base);
  // The 32 lanes from `lanes` closed as many wgmma groups; else a fault naming the first that did not.
  bool lanes_agree_on_groups(Thread* lanes);
  bool warpgroups_agree();
  void report_deadlock();

  LaunchState& launch_;
  std::vector<Thread> threads_;
  std::vector<FiberStack*> stacks_;
  std::vector<Warp> warps_;
  std::vector<Warpgroup> warpgroups_;
  std::vector<unsigned> order_;
  unsigned char* arena_ = nullptr;
  // Per byte of the arena: 1 while the cp.async that wrote it awaits its thread's fence.proxy.async
  // (a wgmma must not read it then), and that thread's index + 1 (0: none).
  std::vector<unsigned char> unfenced_;
  std::vector<std::uint16_t> unfenced_by_;
  FiberScheduler scheduler_;
  Thread* current_ = nullptr;
  rudnn_emu_dim3 block_idx_{};
  std::optional<Fault> fault_;
  unsigned done_ = 0;  // threads that exited
  // the block barrier being gathered
  unsigned bar_arrived_ = 0, bar_first_ = 0;
  Site bar_site_;
  int bar_op_ = 0, bar_count_ = 0, bar_and_ = 1, bar_or_ = 0;
};

bool Worker::prepare() {
  const unsigned n = launch_.threads_per_block;
  threads_ = std::vector<Thread>(n);
  for (unsigned i = 0; i < n; ++i) {
    FiberStack* s = StackPool::instance().take();
    if (s == nullptr) return false;
    stacks_.push_back(s);
  }
  warps_ = std::vector<Warp>((n + 31) / 32);
  warpgroups_ = std::vector<Warpgroup>((warps_.size() + 3) / 4);
  for (unsigned w = 0; w < warps_.size(); ++w) {
    const unsigned lanes = std::min(32u, n - 32 * w);
    warps_[w].exists = lanes == 32 ? ~0u : ((1u << lanes) - 1);
  }
  arena_ = static_cast<unsigned char*>(::operator new (launch_.shared_bytes, std::align_val_t{16}, std::nothrow));
  return arena_ != nullptr;
}

void Worker::run() {
  Worker* previous = tl_worker;
  tl_worker = this;
  for (;;) {
    const std::uint64_t b = launch_.next_block.fetch_add(1);
    if (b >= launch_.blocks || b > launch_.fault_block.load()) break;
    if (run_block(b)) continue;
    std::lock_guard lock(launch_.mutex);
    if (b < launch_.fault_block.load()) {
      launch_.fault = std::move(fault_);
      launch_.fault_block.store(b);
    }
  }
  tl_worker = previous;
}

bool Worker::run_block(std::uint64_t b) {
  const Dim3 g = launch_.grid, bd = launch_.block;
  block_idx_ = {static_cast<unsigned>(b % g.x), static_cast<unsigned>((b / g.x) % g.y),
                static_cast<unsigned>(b / (std::uint64_t{g.x} * g.y))};
  std::memset(arena_, kPoisonByte, launch_.shared_bytes);
  unfenced_.assign(launch_.shared_bytes, 0);
  unfenced_by_.assign(launch_.shared_bytes, 0);
  fault_.reset();
  done_ = bar_arrived_ = 0;
  for (Warp& w : warps_) {
    w.exited = 0;
    w.ops.clear();
    w.wgmma.clear();
  }
  for (Warpgroup& g : warpgroups_) g = Warpgroup{};
  const unsigned n = launch_.threads_per_block;
  for (unsigned i = 0; i < n; ++i) {
    Thread& t = threads_[i];
    t.info.thread_idx = {i % bd.x, (i / bd.x) % bd.y, i / (bd.x * bd.y)};
    t.info.block_idx = block_idx_;
    t.info.block_dim = {bd.x, bd.y, bd.z};
    t.info.grid_dim = {g.x, g.y, g.z};
    t.info.dynamic_shared = arena_;
    t.info.dynamic_shared_bytes = launch_.shared_bytes;
    t.linear = i;
    t.ready = true;
    t.done = false;
    t.wait = Wait::None;
    t.copies.clear();
    t.committed = 0;
    t.wgmma_committed = 0;
    t.wgmma_fenced = false;
    t.wait_stack_pointer = nullptr;
    t.unfenced.clear();
    t.unfenced_overflow = false;
    t.fiber.start(stacks_[i], &Worker::thread_main, &t);
  }
  // Per block, so that results do not depend on which worker runs which block.
  std::uint64_t rng = launch_.schedule.seed ^ (b * 0xD1B54A32D192ED03ull);
  for (;;) {
    order_.clear();
    for (unsigned i = 0; i < n; ++i)
      if (threads_[i].ready) order_.push_back(i);
    if (order_.empty()) {
      if (done_ != n) report_deadlock();
      break;
    }
    if (launch_.schedule.order == Schedule::Reverse) {
      std::reverse(order_.begin(), order_.end());
    } else if (launch_.schedule.order == Schedule::Random) {
      for (std::size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[splitmix64(rng) % i]);
    }
    for (unsigned i : order_) {
      Thread& t = threads_[i];
      t.ready = false;
      current_ = &t;
      t.fiber.resume(scheduler_);
      current_ = nullptr;
      if (fault_) break;
    }
    if (fault_) break;
  }
  if (!fault_ && warpgroups_agree()) return true;
  // Abandoned fibers: their stacks keep whatever state they had; reuse them from scratch.
  for (unsigned i = 0; i < n; ++i)
    if (!threads_[i].done) stacks_[i]->dirty = true;
  return false;
}

void Worker::thread_main(void* arg) {
  Thread& t = *static_cast<Thread*>(arg);
  Worker& w = *tl_worker;
  bool threw = false;
  // An exception must not unwind into the fcontext trampoline: turn it into a fault.
  try {
    w.launch_.entry(w.launch_.args);
  } catch (const std::exception& e) {
    w.set_fault(t, {}, "kernel threw an exception", "no C++ exception to leave a thread",
                fmt::format("an exception: {}", e.what()));
    threw = true;
  } catch (...) {
    w.set_fault(t, {}, "kernel threw an exception", "no C++ exception to leave a thread",
                "an exception of unknown type");
    threw = true;
  }
  if (threw) w.abandon(t);
  w.on_exit(t);
}

void Worker::on_exit(Thread& t) {
  retire_copies(t, ~std::uint64_t{0});  // async copies complete eventually on hardware too
  t.done = true;
  ++done_;
  if (bar_arrived_ > 0) {
    const Thread& waiter = threads_[bar_first_];
    set_fault(t, bar_site_, "thread exited while others wait at a barrier",
              fmt::format("all {} threads of the block at the __syncthreads() at {}", launch_.threads_per_block,
                          where(bar_site_)),
              fmt::format("thread {} exited while {} thread(s) wait there (first: thread {})", dim(t.info.thread_idx),
                          bar_arrived_, dim(waiter.info.thread_idx)));
    abandon(t);
  }
  Warp& w = warps_[t.linear / 32];
  if (!w.wgmma.empty()) {
    set_fault(t, w.wgmma.front().site, "thread exited with a wgmma in flight",
              "a wgmma.wait_group retiring every wgmma.mma_async before the warp's threads exit",
              fmt::format("{} wgmma of the warp not retired (the first issued at {})", w.wgmma.size(),
                          where(w.wgmma.front().site)));
    abandon(t);
  }
  const unsigned bit = 1u << (t.linear % 32);
  w.exited |= bit;
  for (const WarpOp& op : w.ops) {
    if ((op.mask & bit) == 0) continue;
    const Thread& waiter = threads_[(t.linear & ~31u) + __builtin_ctz(op.arrived)];
    set_fault(t, waiter.site, "lane exited while its warp waits for it",
              fmt::format("lane {} to join {} at {}", t.linear % 32, collective_name(op.kind, op.mode, op.mask),
                          where(waiter.site)),
              fmt::format("thread {} exited", dim(t.info.thread_idx)));
    abandon(t);
  }
}

void Worker::set_fault(const Thread& t, Site s, std::string what, std::string expected, std::string actual) {
  if (fault_) return;
  fault_ = Fault{std::move(what), std::move(expected), std::move(actual), block_idx_, t.info.thread_idx, s};
}

int Worker::syncthreads(Thread& t, int op, int predicate, Site s) {
  if (done_ > 0) {
    unsigned e = 0;
    while (!threads_[e].done) ++e;
    set_fault(
        t, s, "thread exited while others wait at a barrier",
        fmt::format("all {} threads of the block at the __syncthreads() at {}", launch_.threads_per_block, where(s)),
        fmt::format("thread {} has already exited, so the barrier can never complete",
                    dim(threads_[e].info.thread_idx)));
    abandon(t);
  }
  if (bar_arrived_ > 0 && (!same_site(bar_site_, s) || bar_op_ != op)) {
    set_fault(t, s, "divergent barrier",
              fmt::format("every thread of the block at the same barrier: {} thread(s) wait at the "
                          "__syncthreads() at {} (first: thread {})",
                          bar_arrived_, where(bar_site_), dim(threads_[bar_first_].info.thread_idx)),
              fmt::format("thread {} at a different __syncthreads() at {}", dim(t.info.thread_idx), where(s)));
    abandon(t);
  }
  if (bar_arrived_ == 0) {
    bar_site_ = s;
    bar_op_ = op;
    bar_first_ = t.linear;
    bar_count_ = 0;
    bar_and_ = 1;
    bar_or_ = 0;
  }
  bar_count_ += predicate != 0;
  bar_and_ &= predicate != 0;
  bar_or_ |= predicate != 0;
  t.wait = Wait::Barrier;
  t.site = s;
  if (++bar_arrived_ == launch_.threads_per_block) {
    const int r = op == RUDNN_EMU_BARRIER_COUNT ? bar_count_
                  : op == RUDNN_EMU_BARRIER_AND ? bar_and_
                  : op == RUDNN_EMU_BARRIER_OR  ? bar_or_
                                                : 0;
    for (Thread& x : threads_) {
      x.result = static_cast<std::uint64_t>(r);
      x.wait = Wait::None;
      x.ready = true;
    }
    bar_arrived_ = 0;
  }
  t.fiber.yield();
  return static_cast<int>(t.result);
}

void Worker::collective(Thread& t, Collective kind, int mode, unsigned mask, Site s) {
  const unsigned lane = t.linear % 32, bit = 1u << lane;
  Warp& w = warps_[t.linear / 32];
  if ((mask & bit) == 0) {
    set_fault(t, s, "lane not in its own mask",
              fmt::format("the calling lane {} in the mask of {}", lane, collective_name(kind, mode, mask)),
              fmt::format("mask 0x{:08x}", mask));
    abandon(t);
  }
  if ((mask & ~w.exists) != 0) {
    set_fault(t, s, "mask names lanes that do not exist",
              fmt::format("a mask within the warp's existing lanes 0x{:08x} (block of {} threads)", w.exists,
                          launch_.threads_per_block),
              fmt::format("{}", collective_name(kind, mode, mask)));
    abandon(t);
  }
  if ((mask & w.exited) != 0) {
    set_fault(t, s, "mask names exited lanes",
              fmt::format("every lane of the mask of {} still running", collective_name(kind, mode, mask)),
              fmt::format("exited lanes 0x{:08x}", mask & w.exited));
    abandon(t);
  }
  std::size_t k = 0;
  while (k < w.ops.size() && w.ops[k].mask != mask) ++k;
  if (k == w.ops.size()) {
    w.ops.push_back({kind, mode, mask, 0});
  } else if (w.ops[k].kind != kind || w.ops[k].mode != mode) {
    const Thread& other = threads_[(t.linear & ~31u) + __builtin_ctz(w.ops[k].arrived)];
    set_fault(t, s, "lanes of one mask execute different warp collectives",
              fmt::format("{} (lane {} waits in it at {})", collective_name(w.ops[k].kind, w.ops[k].mode, mask),
                          other.linear % 32, where(other.site)),
              fmt::format("lane {} at {}", lane, collective_name(kind, mode, mask)));
    abandon(t);
  }
  t.wait = Wait::Warp;
  t.site = s;
  t.kind = kind;
  t.mode = mode;
  t.mask = mask;
  w.ops[k].arrived |= bit;
  if (w.ops[k].arrived == mask) {
    const WarpOp op = w.ops[k];
    w.ops.erase(w.ops.begin() + static_cast<std::ptrdiff_t>(k));
    complete(w, op, t.linear & ~31u);
    if (fault_) abandon(t);
  }
  t.fiber.yield();
}

void Worker::complete(Warp& w, const WarpOp& op, unsigned base) {
  (void)w;
  Thread* lanes = &threads_[base];
  switch (op.kind) {
    case Collective::SyncWarp: break;
    case Collective::Shfl: {
      const unsigned size = static_cast<unsigned>(op.mode >> 8);
      for (unsigned l = 0; l < 32; ++l) {
        if ((op.mask >> l & 1) == 0) continue;
        const int src = lanes::shfl_source(op.mode & 3, static_cast<int>(l), lanes[l].arg, lanes[l].width);
        lanes[l].result = (op.mask >> src & 1) ? lanes[src].value : size == 8 ? kPoison64 : kPoison32;
      }
      break;
    }
    case Collective::Vote: {
      unsigned ballot = 0;
      for (unsigned l = 0; l < 32; ++l)
        if ((op.mask >> l & 1) && lanes[l].predicate != 0) ballot |= 1u << l;
      const std::uint64_t r = op.mode == RUDNN_EMU_VOTE_BALLOT ? ballot
                              : op.mode == RUDNN_EMU_VOTE_ANY  ? (ballot != 0)
                                                               : (ballot == op.mask);
      for (unsigned l = 0; l < 32; ++l)
        if (op.mask >> l & 1) lanes[l].result = r;
      break;
    }
    case Collective::Reduce: {
      const int rop = op.mode & 15;
      const bool is_signed = (op.mode >> 4) != 0;
      bool first = true;
      std::uint32_t acc = 0;
      for (unsigned l = 0; l < 32; ++l) {
        if ((op.mask >> l & 1) == 0) continue;
        const auto v = static_cast<std::uint32_t>(lanes[l].value);
        if (first) {
          acc = v;
          first = false;
          continue;
        }
        const bool less = is_signed ? static_cast<std::int32_t>(v) < static_cast<std::int32_t>(acc) : v < acc;
        switch (rop) {
          case RUDNN_EMU_REDUCE_ADD: acc += v; break;  // wraps, as in hardware
          case RUDNN_EMU_REDUCE_MIN: acc = less ? v : acc; break;
          case RUDNN_EMU_REDUCE_MAX: acc = (!less && v != acc) ? v : acc; break;
          case RUDNN_EMU_REDUCE_AND: acc &= v; break;
          case RUDNN_EMU_REDUCE_OR: acc |= v; break;
          default: acc ^= v; break;
        }
      }
      for (unsigned l = 0; l < 32; ++l)
        if (op.mask >> l & 1) lanes[l].result = acc;
      break;
    }
    case Collective::Mma: {
      const void* a[32];
      const void* b[32];
      const void* c[32];
      void* d[32];
      for (unsigned l = 0; l < 32; ++l) {
        a[l] = lanes[l].in0;
        b[l] = lanes[l].in1;
        c[l] = lanes[l].in2;
        d[l] = lanes[l].out;
      }
      warp_math::mma_m16n8k16(op.mode, a, b, c, d);
      break;
    }
    case Collective::Ldmatrix: {
      const void* rows[32];
      void* regs[32];
      for (unsigned l = 0; l < 32; ++l) {
        rows[l] = lanes[l].in0;
        regs[l] = lanes[l].out;
      }
      warp_math::ldmatrix(op.mode & 15, (op.mode >> 4) != 0, rows, regs);
      break;
    }
    case Collective::Wgmma: issue_wgmma(w, op, base); break;
    case Collective::WgmmaWait: {
      // .sync.aligned: the warp's lanes wait together, so none of them sees a retirement early.
      const std::uint64_t committed = lanes[0].wgmma_committed, n = static_cast<std::uint64_t>(op.mode);
      if (!lanes_agree_on_groups(lanes)) return;
      if (!retire_wgmma(lanes, committed > n ? committed - n : 0)) return;
      for (unsigned l = 0; l < 32; ++l) lanes[l].wgmma_fenced = false;
      break;
    }
  }
  for (unsigned l = 0; l < 32; ++l) {
    if ((op.mask >> l & 1) == 0) continue;
    lanes[l].wait = Wait::None;
    lanes[l].ready = true;
  }
}

void Worker::wgmma(Thread& t, int mode, Site s) {
  const unsigned warp = t.linear / 32, first = warp / 4 * 128;
  if (first + 128 > launch_.threads_per_block) {
    set_fault(t, s, "wgmma in an incomplete warpgroup",
              fmt::format("four full warps (threads {} to {}) in the warpgroup of warp {}", first, first + 127, warp),
              fmt::format("a block of {} threads", launch_.threads_per_block));
    abandon(t);
  }
  if (!t.wgmma_fenced) {
    set_fault(t, s, "wgmma.mma_async without a wgmma.fence",
              "a wgmma.fence before the thread's first wgmma.mma_async and after each wgmma.wait_group "
              "(the registers it reads may have been touched since)",
              fmt::format("{} with no fence since {}", collective_name(Collective::Wgmma, mode, ~0u),
                          t.wgmma_committed == 0 ? "the thread started" : "its last wait_group"));
    abandon(t);
  }
  collective(t, Collective::Wgmma, mode, ~0u, s);
}

bool Worker::lanes_agree_on_groups(Thread* lanes) {
  for (unsigned l = 1; l < 32; ++l) {
    if (lanes[l].wgmma_committed == lanes[0].wgmma_committed) continue;
    set_fault(lanes[l], lanes[l].site, "lanes of a warp closed different numbers of wgmma groups",
              fmt::format("{} wgmma.commit_group, as lane 0", lanes[0].wgmma_committed),
              fmt::format("lane {}: {}", l, lanes[l].wgmma_committed));
    return false;
  }
  return true;
}

void Worker::issue_wgmma(Warp& w, const WarpOp& op, unsigned base) {
  Thread* lanes = &threads_[base];
  const bool a_in_registers = (op.mode >> 1 & 1) != 0;
  const auto descriptors = [&](const Thread& x) { return describe_descriptors(a_in_registers, x.value, x.value2); };
  for (unsigned l = 1; l < 32; ++l) {
    if ((!a_in_registers && lanes[l].value != lanes[0].value) || lanes[l].value2 != lanes[0].value2) {
      set_fault(lanes[l], lanes[l].site, "wgmma descriptors differ between lanes",
                fmt::format("every lane's descriptors as lane 0's ({})", descriptors(lanes[0])),
                fmt::format("lane {}: {}", l, descriptors(lanes[l])));
      return;
    }
  }
  if (!lanes_agree_on_groups(lanes)) return;
  // The four warps of the warpgroup issue the same sequence of wgmma.
  const unsigned warp = base / 32, rank = warp % 4;
  Warpgroup& g = warpgroups_[warp / 4];
  const std::uint64_t index = g.issued[rank]++;
  const WgmmaIssue issue{op.mode, a_in_registers ? 0 : lanes[0].value, lanes[0].value2, lanes[0].site};
  if (index - g.base < g.log.size()) {
    const WgmmaIssue& other = g.log[index - g.base];
    if (other.mode != issue.mode || other.a_desc != issue.a_desc || other.b_desc != issue.b_desc) {
      set_fault(lanes[0], lanes[0].site, "warps of one warpgroup issue different wgmma",
                fmt::format("wgmma #{} of every warp of warpgroup {} as the first warp's to issue it: {} ({}) at {}",
                            index, warp / 4, collective_name(Collective::Wgmma, other.mode, ~0u),
                            describe_descriptors(a_in_registers, other.a_desc, other.b_desc), where(other.site)),
                fmt::format("warp {}: {} ({})", warp, collective_name(Collective::Wgmma, op.mode, ~0u),
                            descriptors(lanes[0])));
      return;
    }
  } else {
    g.log.push_back(issue);
  }
  while (!g.log.empty() && *std::min_element(g.issued, g.issued + 4) > g.base) {
    g.log.pop_front();
    ++g.base;
  }
  // False, with a fault, for a descriptor the emulator would have to guess at.
  const auto modelled = [&](const char* name, std::uint64_t desc) {
    const char* why = wgmma::unmodelled(wgmma::decode(desc));
    if (why == nullptr) return true;
    set_fault(
        lanes[0], lanes[0].site, "wgmma descriptor the emulator does not model",
        "base offset 0 and a swizzled operand starting at its pattern's first row (start address "
        "bits 7.. within the pattern zero)",
        fmt::format("{} in descriptor {} 0x{:016x} (start address {})", why, name, desc, wgmma::decode(desc).start));
    return false;
  };
  if ((!a_in_registers && !modelled("a", lanes[0].value)) || !modelled("b", lanes[0].value2)) return;
  PendingWgmma p;
  p.type = op.mode & 1;
  p.n = op.mode >> 8;
  p.flags = (op.mode >> 2) & 31;
  p.a_desc = lanes[0].value;
  p.b_desc = lanes[0].value2;
  p.group = lanes[0].wgmma_committed;
  p.a_in_registers = a_in_registers;
  p.site = lanes[0].site;
  for (unsigned l = 0; l < 32; ++l) {
    p.a_regs[l] = lanes[l].in0;
    p.d[l] = lanes[l].out;
  }
  std::uint32_t bad = 0;
  if (!read_wgmma_operands(p, static_cast<int>(rank), p.operands, &bad)) {
    set_fault(lanes[0], p.site, "wgmma operand outside shared memory",
              fmt::format("every element of A and B inside the block's {} bytes of dynamic shared memory "
                          "(shared addresses {} to {})",
                          launch_.shared_bytes, RUDNN_EMU_SHARED_WINDOW_BASE,
                          RUDNN_EMU_SHARED_WINDOW_BASE + launch_.shared_bytes),
              fmt::format("an element at shared address {} ({})", bad, descriptors(lanes[0])));
    return;
  }
  if (const long at = unfenced_operand(p, static_cast<int>(rank)); at >= 0) {
    set_fault(lanes[0], p.site, "wgmma reads shared memory that a cp.async wrote without fence.proxy.async",
              "a fence.proxy.async (fence_proxy_async_shared) by every thread whose cp.async wrote an operand, "
              "after its copies landed and before the barrier ahead of the wgmma: the generic proxy's writes "
              "are not visible to the async proxy (wgmma) without it",
              fmt::format("{} of warp {}'s share unfenced ({})",
                          operand_element(static_cast<std::size_t>(at), static_cast<int>(rank)), lanes[0].linear / 32,
                          descriptors(lanes[0])));
    return;
  }
  for (unsigned l = 0; l < 32; ++l) {
    // D = A·B ignores D's old value: poison it, so a read before the wait_group shows as NaN.
    if ((p.flags & RUDNN_EMU_WGMMA_ACCUMULATE) == 0)
      std::fill_n(static_cast<float*>(p.d[l]), p.n / 2, std::numeric_limits<float>::quiet_NaN());
  }
  w.wgmma.push_back(std::move(p));
}

// A wgmma's registers are live until the wait that retires it (the PTX ISA: accessing them before
// is undefined), and on the host they are the lane's stack memory. An address in the lane's own
// stack below the stack pointer of the code that waits belongs to a frame that has returned: the
// retirement would write into it (the accumulators of a helper that issued, committed and
// returned). Addresses elsewhere (ASan's fake stack, a null stack pointer) are not judged. What this
// cannot see: a frame that returned and whose memory a later frame of the waiting code reuses (an
// issuing helper and a separate waiting helper), and a block scope closed inside one frame.
bool Worker::wgmma_registers_in_scope(Thread* lanes, const PendingWgmma& p) {
  for (unsigned l = 0; l < 32; ++l) {
    const Thread& lane = lanes[l];
    const FiberStack* stack = lane.fiber.stack();
    const auto* sp = static_cast<const char*>(lane.wait_stack_pointer);
    if (stack == nullptr || sp == nullptr) continue;
    auto dead = [&](const void* at) {
      const auto* c = static_cast<const char*>(at);
      return c >= stack->base && c < sp && c < stack->base + stack->size;
    };
    const bool d_dead = dead(p.d[l]), a_dead = p.a_in_registers && dead(p.a_regs[l]);
    if (!d_dead && !a_dead) continue;
    set_fault(lanes[0], p.site, "wgmma registers in a frame that returned before their wait",
              "the accumulators (and an RS wgmma's A registers) of a wgmma alive until the wgmma.wait_group "
              "that retires it, in the waiting code's frame or its callers'",
              fmt::format("thread {}'s {} at {} lie below its stack pointer {} at the wait (their frame returned)",
                          lanes[0].linear + l, d_dead ? "accumulators" : "A registers",
                          fmt::ptr(d_dead ? static_cast<const void*>(p.d[l]) : p.a_regs[l]),
                          fmt::ptr(lane.wait_stack_pointer)));
    return false;
  }
  return true;
}

bool Worker::retire_wgmma(Thread* lanes, std::uint64_t below_group) {
  Thread& t = lanes[0];
  Warp& w = warps_[t.linear / 32];
  std::size_t retired = 0;
  for (; retired < w.wgmma.size() && w.wgmma[retired].group < below_group; ++retired) {
    const PendingWgmma& p = w.wgmma[retired];
    if (!wgmma_registers_in_scope(lanes, p)) return false;
    const int rank = static_cast<int>(t.linear / 32 % 4);
    std::uint32_t bad = 0;
    std::vector<std::uint16_t> now;
    const bool inside = read_wgmma_operands(p, rank, now, &bad);
    if (!inside || now != p.operands) {
      std::size_t at = 0;
      while (at < now.size() && now[at] == p.operands[at]) ++at;
      set_fault(t, p.site, "wgmma operand changed while the wgmma was in flight",
                "A and B (shared memory, or A's registers) unchanged from the wgmma's issue until the "
                "wgmma.wait_group that retires it (copies landed, and nothing written, before the issue)",
                fmt::format("{} of warp {}'s share was 0x{:04x} at issue, 0x{:04x} at the wait "
                            "(descriptors a 0x{:016x}, b 0x{:016x})",
                            operand_element(at, rank), t.linear / 32, p.operands[at], at < now.size() ? now[at] : 0,
                            p.a_desc, p.b_desc));
      return false;
    }
    warp_math::wgmma(p.type, p.n, p.flags, rank, p.operands, p.d);
  }
  w.wgmma.erase(w.wgmma.begin(), w.wgmma.begin() + static_cast<std::ptrdiff_t>(retired));
  return true;
}

bool Worker::warpgroups_agree() {
  for (std::size_t gi = 0; gi < warpgroups_.size(); ++gi) {
    const Warpgroup& g = warpgroups_[gi];
    const auto [lo, hi] = std::minmax_element(g.issued, g.issued + 4);
    if (*lo == *hi) continue;
    const WgmmaIssue& skipped = g.log[*lo - g.base];
    const auto behind = static_cast<unsigned>(lo - g.issued), ahead = static_cast<unsigned>(hi - g.issued);
    set_fault(
        threads_[(gi * 4 + behind) * 32], skipped.site, "a warp of a warpgroup skipped a wgmma",
        fmt::format("every warp of warpgroup {} issuing the same wgmma", gi),
        fmt::format("warp {} issued {} wgmma, warp {} {}; the first it skipped: {} at {}", gi * 4 + ahead, *hi,
                    gi * 4 + behind, *lo, collective_name(Collective::Wgmma, skipped.mode, ~0u), where(skipped.site)));
    return false;
  }
  return true;
}

void Worker::report_deadlock() {
  struct Group {
    Wait wait;
    Collective kind;
    int mode;
    unsigned mask;
    Site site;
    unsigned count, first;
  };
  std::vector<Group> groups;
  const Thread* first = nullptr;
  for (const Thread& t : threads_) {
    if (t.done) continue;
    if (first == nullptr) first = &t;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return g.wait == t.wait && same_site(g.site, t.site) &&
             (t.wait != Wait::Warp || (g.kind == t.kind && g.mode == t.mode && g.mask == t.mask));
    });
    if (it != groups.end()) {
      ++it->count;
    } else {
      groups.push_back({t.wait, t.kind, t.mode, t.mask, t.site, 1, t.linear});
    }
  }
  std::string actual;
  for (const Group& g : groups) {
    if (!actual.empty()) actual += "; ";
    actual +=
        fmt::format("{} thread(s) wait at {} at {} (first: thread {})", g.count,
                    g.wait == Wait::Barrier ? std::string("__syncthreads()") : collective_name(g.kind, g.mode, g.mask),
                    where(g.site), dim(threads_[g.first].info.thread_idx));
  }
  if (done_ > 0) actual += fmt::format("; {} thread(s) exited", done_);
  set_fault(*first, first->site, "deadlock",
            "every barrier reached by all threads of the block and every warp collective by all "
            "lanes of its mask",
            actual);
}

void Worker::check_shared(Thread& t, const void* p, std::size_t bytes, std::size_t align, const char* what, Site s) {
  const auto* c = static_cast<const unsigned char*>(p);
  const bool inside = c >= arena_ && c + bytes <= arena_ + launch_.shared_bytes;
  if (inside && reinterpret_cast<std::uintptr_t>(p) % align == 0) return;
  set_fault(t, s, inside ? "misaligned shared memory address" : "address outside shared memory",
            fmt::format("{}: a {}-byte aligned address of {} bytes inside the block's {} bytes of "
                        "dynamic shared memory",
                        what, align, bytes, launch_.shared_bytes),
            inside ? fmt::format("address {} (offset {} in shared memory)", p, static_cast<long long>(c - arena_))
                   : fmt::format("address {}, not in the block's shared memory", p));
  abandon(t);
}

void Worker::retire_copies(Thread& t, std::uint64_t below_group) {
  std::size_t kept = 0;
  for (const AsyncCopy& c : t.copies) {
    if (c.group < below_group) {
      std::memcpy(c.dst, c.src, c.src_size);
      std::memset(static_cast<char*>(c.dst) + c.src_size, 0, c.cp_size - c.src_size);
      // Written through the generic proxy: not yet visible to a wgmma (the async proxy).
      const auto at = static_cast<std::size_t>(static_cast<unsigned char*>(c.dst) - arena_);
      std::fill_n(unfenced_.begin() + static_cast<std::ptrdiff_t>(at), c.cp_size, 1);
      std::fill_n(unfenced_by_.begin() + static_cast<std::ptrdiff_t>(at), c.cp_size,
                  static_cast<std::uint16_t>(t.linear + 1));
      if (!t.unfenced.empty() && t.unfenced.back().first + t.unfenced.back().second == at)
        t.unfenced.back().second += c.cp_size;
      else if (t.unfenced.size() < kUnfencedRanges)
        t.unfenced.emplace_back(at, c.cp_size);
      else
        t.unfenced_overflow = true;
    } else {
      t.copies[kept++] = c;
    }
  }
  t.copies.resize(kept);
}

void Worker::fence_proxy_async(Thread& t) {
  const auto self = static_cast<std::uint16_t>(t.linear + 1);
  auto clear = [&](std::size_t at, std::size_t bytes) {
    for (std::size_t i = at; i < at + bytes; ++i)
      if (unfenced_by_[i] == self) unfenced_[i] = unfenced_by_[i] = 0;  // a later writer's mark stays
  };
  if (t.unfenced_overflow)
    clear(0, unfenced_by_.size());
  else
    for (const auto& [at, bytes] : t.unfenced) clear(at, bytes);
  t.unfenced.clear();
  t.unfenced_overflow = false;
}

// --------------------------------------------------------------------------------------------------
// The ABI table. Every entry runs inside a fiber of the current OS thread's worker.

Thread* current_thread() {
  Worker* w = tl_worker;
  return w != nullptr ? w->current() : nullptr;
}

const rudnn_emu_thread_info* api_thread_info() {
  static const rudnn_emu_thread_info outside{};  // host code calling a device intrinsic
  Thread* t = current_thread();
  return t != nullptr ? &t->info : &outside;
}

int api_syncthreads(int op, int predicate, const char* file, int line) {
  Thread* t = current_thread();
  if (t == nullptr) return 0;
  return tl_worker->syncthreads(*t, op, predicate, {file, line});
}

bool check_width(Thread& t, int width, Site s) {
  if (lanes::valid_width(width)) return true;
  tl_worker->set_fault(t, s, "invalid shuffle width", "a power of two in [1, 32]", fmt::format("width {}", width));
  return false;
}

void api_syncwarp(unsigned mask, const char* file, int line) {
  Thread* t = current_thread();
  if (t == nullptr) return;
  tl_worker->collective(*t, Collective::SyncWarp, 0, mask, {file, line});
}

std::uint64_t api_shfl(int mode, unsigned mask, std::uint64_t value, unsigned size, int lane_arg, int width,
                       const char* file, int line) {
  Thread* t = current_thread();
  if (t == nullptr) return value;
  if (!check_width(*t, width, {file, line})) tl_worker->abandon(*t);
  t->value = value;
  t->arg = lane_arg;
  t->width = width;
  tl_worker->collective(*t, Collective::Shfl, (mode & 3) | static_cast<int>(size << 8), mask, {file, line});
  return t->result;
}

unsigned api_vote(int mode, unsigned mask, int predicate, const char* file, int line) {
  Thread* t = current_thread();
  if (t == nullptr) return 0;
  t->predicate = predicate;
  tl_worker->collective(*t, Collective::Vote, mode, mask, {file, line});
  return static_cast<unsigned>(t->result);
}

std::uint32_t api_reduce(int op, int is_signed, unsigned mask, std::uint32_t value, const char* file, int line) {
  Thread* t = current_thread();
  if (t == nullptr) return value;
  if (op < RUDNN_EMU_REDUCE_ADD || op > RUDNN_EMU_REDUCE_XOR) {
    tl_worker->set_fault(*t, {file, line}, "invalid warp reduction", "add, min, max, and, or, xor",
                         fmt::format("operation {}", op));
    tl_worker->abandon(*t);
  }
  t->value = value;
  tl_worker->collective(*t, Collective::Reduce, op | (is_signed != 0 ? 16 : 0), mask, {file, line});
  return static_cast<std::uint32_t>(t->result);
}

void api_threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

void api_trap(const char* message, const char* file, int line) {
  Thread* t = current_thread();
  if (t == nullptr) return;
  tl_worker->set_fault(*t, {file, line}, "trap", "no trap", fmt::format("{}", message != nullptr ? message : "trap"));
  tl_worker->abandon(*t);
}

void api_mma(int type, float* d, const std::uint32_t* a, const std::uint32_t* b, const float* c, const char* file,
             int line) {
  Thread* t = current_thread();
  if (t == nullptr) return;
  t->in0 = a;
  t->in1 = b;
  t->in2 = c;
  t->out = d;
  tl_worker->collective(*t, Collective::Mma, type, ~0u, {file, line});
}

void api_ldmatrix(int count, int trans, std::uint32_t* regs, const void* row, const char* file, int line) {
  Thread* t = current_thread();
  if (t == nullptr) return;
  const Site s{file, line};
  if (count != 1 && count != 2 && count != 4) {
    tl_worker->set_fault(*t, s, "invalid ldmatrix", "x1, x2 or x4", fmt::format("x{}", count));
    tl_worker->abandon(*t);
  }
  // Only lanes 0..8*count-1 supply row addresses; the others' are ignored, as in hardware.
  if (t->linear % 32 < 8u * static_cast<unsigned>(count)) tl_worker->check_shared(*t, row, 16, 16, "ldmatrix row", s);
  t->in0 = row;
  t->out = regs;
  tl_worker->collective(*t, Collective::Ldmatrix, count | (trans != 0 ? 16 : 0), ~0u, s);
}

void api_cp_async(void* dst, const void* src, unsigned cp_size, unsigned src_size, const char* file, int line) {
  Thread* t = current_thread();
  if (t == nullptr) return;
  const Site s{file, line};
  if ((cp_size != 4 && cp_size != 8 && cp_size != 16) || src_size > cp_size) {
    tl_worker->set_fault(*t, s, "invalid cp.async", "cp-size 4, 8 or 16 and src-size <= cp-size",
                         fmt::format("cp-size {}, src-size {}", cp_size, src_size));
    tl_worker->abandon(*t);
  }
  tl_worker->check_shared(*t, dst, cp_size, cp_size, "cp.async destination", s);
  if (src_size > 0 && reinterpret_cast<std::uintptr_t>(src) % cp_size != 0) {
    tl_worker->set_fault(*t, s, "misaligned cp.async source", fmt::format("a {}-byte aligned global address", cp_size),
                         fmt::format("address {}", src));
    tl_worker->abandon(*t);
  }
  // Until a wait_group retires the copy, readers see poison, as they might see stale data on a GPU.
  std::memset(dst, kPoisonByte, cp_size);
  t->copies.push_back({dst, src, cp_size, src_size, t->committed});
}

void api_cp_async_commit(const char*, int) {
  Thread* t = current_thread();
  if (t != nullptr) ++t->committed;
}

void api_cp_async_wait(int pending, const char* file, int line) {
  Thread* t = current_thread();
  if (t == nullptr) return;
  if (pending < 0) {
    tl_worker->set_fault(*t, {file, line}, "invalid cp.async.wait_group", "N >= 0", fmt::format("{}", pending));
    tl_worker->abandon(*t);
  }
  const auto n = static_cast<std::uint64_t>(pending);
  tl_worker->retire_copies(*t, t->committed > n ? t->committed - n : 0);
}

void api_wgmma(int type, int n, float* d, const std::uint32_t* a_regs, std::uint64_t a_desc, std::uint64_t b_desc,
               int flags, const char* file, int line) {
  Thread* t = current_thread();
  if (t == nullptr) return;
  const Site s{file, line};
  const bool valid_shape =
      n >= 8 && n <= 256 && n % 8 == 0 && (type == RUDNN_EMU_MMA_F16 || type == RUDNN_EMU_MMA_BF16);
  if (!valid_shape || (flags & ~31) != 0 || (a_regs != nullptr && (flags & RUDNN_EMU_WGMMA_TRANS_A) != 0)) {
    tl_worker->set_fault(*t, s, "invalid wgmma",
                         "m64nNk16, N a multiple of 8 in [8, 256], f16 or bf16 inputs, flags in 0..31, "
                         "imm-trans-a only with A in shared memory",
                         fmt::format("N {}, type {}, flags {}, A {}", n, type, flags,
                                     a_regs != nullptr ? "in registers" : "in shared memory"));
    tl_worker->abandon(*t);
  }
  t->in0 = a_regs;
  t->out = d;
  t->value = a_desc;
  t->value2 = b_desc;
  tl_worker->wgmma(*t, type | (a_regs != nullptr ? 2 : 0) | flags << 2 | n << 8, s);
}

void api_wgmma_fence(const char*, int) {
  if (Thread* t = current_thread()) t->wgmma_fenced = true;
}

void api_wgmma_commit(const char*, int) {
  if (Thread* t = current_thread()) ++t->wgmma_committed;
}

void api_fence_proxy_async(const char*, int) {
  if (Thread* t = current_thread()) tl_worker->fence_proxy_async(*t);
}

void api_wgmma_wait(int pending, const void* stack_pointer, const char* file, int line) {
  Thread* t = current_thread();
  if (t == nullptr) return;
  t->wait_stack_pointer = stack_pointer;
  if (pending < 0) {
    tl_worker->set_fault(*t, {file, line}, "invalid wgmma.wait_group", "N >= 0", fmt::format("{}", pending));
    tl_worker->abandon(*t);
  }
  tl_worker->collective(*t, Collective::WgmmaWait, pending, ~0u, {file, line});
}

const rudnn_emu_api kApi = {
    RUDNN_EMU_ABI_VERSION,
    sizeof(rudnn_emu_api),
    api_thread_info,
    api_syncthreads,
    api_syncwarp,
    api_shfl,
    api_vote,
    api_threadfence,
    api_trap,
    api_mma,
    api_ldmatrix,
    api_cp_async,
    api_cp_async_commit,
    api_cp_async_wait,
    api_reduce,
    api_wgmma,
    api_wgmma_fence,
    api_wgmma_commit,
    api_wgmma_wait,
    api_fence_proxy_async,
};

// --------------------------------------------------------------------------------------------------
// Settings

std::mutex g_settings_mutex;
std::optional<ScheduleOptions> g_schedule;  // guarded by g_settings_mutex
std::atomic<std::size_t> g_shared_limit{kDefaultSharedMemoryLimit};
std::atomic<unsigned> g_worker_threads{0};

unsigned env_worker_threads() {
  static const unsigned n = [] {
    unsigned v = 0;
    if (const char* e = std::getenv("RUDNN_EMU_THREADS")) {
      const std::string_view s(e);
      std::from_chars(s.data(), s.data() + s.size(), v);
    }
    if (v == 0) v = std::thread::hardware_concurrency();
    return std::max(v, 1u);
  }();
  return n;
}

RuntimeError launch_error(std::string argument, std::string expected, std::string actual, std::string detail) {
  return RuntimeError(ErrorKind::EmulatorFault, std::move(argument), std::move(expected), std::move(actual),
                      std::move(detail));
}

}  // namespace

const rudnn_emu_api* emulator_api() { return &kApi; }

std::optional<ScheduleOptions> parse_schedule(std::string_view text) {
  if (text == "forward") return ScheduleOptions{Schedule::Forward, 0};
  if (text == "reverse") return ScheduleOptions{Schedule::Reverse, 0};
  if (text == "random") return ScheduleOptions{Schedule::Random, 0};
  if (text.substr(0, 7) == "random:" && text.size() > 7) {
    std::uint64_t seed = 0;
    const auto [p, ec] = std::from_chars(text.data() + 7, text.data() + text.size(), seed);
    if (ec == std::errc() && p == text.data() + text.size()) return ScheduleOptions{Schedule::Random, seed};
  }
  return std::nullopt;
}

ScheduleOptions default_schedule() {
  std::lock_guard lock(g_settings_mutex);
  if (!g_schedule) {
    g_schedule = ScheduleOptions{};
    if (const char* e = std::getenv("RUDNN_EMU_SCHEDULE"); e && *e) {
      if (auto parsed = parse_schedule(e)) {
        g_schedule = *parsed;
      } else {
        std::fprintf(stderr,
                     "rudnn: ignoring RUDNN_EMU_SCHEDULE=%s (expected forward, reverse, random or "
                     "random:SEED)\n",
                     e);
      }
    }
  }
  return *g_schedule;
}

void set_default_schedule(const ScheduleOptions& schedule) {
  std::lock_guard lock(g_settings_mutex);
  g_schedule = schedule;
}

void set_shared_memory_limit(std::size_t bytes) { g_shared_limit.store(bytes); }
std::size_t shared_memory_limit() { return g_shared_limit.load(); }

void set_worker_threads(unsigned n) { g_worker_threads.store(n); }
unsigned worker_threads() {
  const unsigned n = g_worker_threads.load();
  return n != 0 ? n : env_worker_threads();
}

Status<RuntimeError> launch(ThreadEntry entry, void** args, Dim3 grid, Dim3 block, std::size_t dynamic_shared_bytes,
                            const ScheduleOptions& schedule) {
  const auto dims = [](Dim3 d) { return fmt::format("({},{},{})", d.x, d.y, d.z); };
  if (entry == nullptr) return launch_error("entry", "a kernel entry", "null", "launch");
  const std::uint64_t threads = std::uint64_t{block.x} * block.y * block.z;
  if (block.x == 0 || block.y == 0 || block.z == 0 || block.x > 1024 || block.y > 1024 || block.z > 64 ||
      threads > kMaxThreadsPerBlock) {
    return launch_error("block", "1 to 1024 threads per block (x, y <= 1024, z <= 64)",
                        fmt::format("{} = {} threads", dims(block), threads), "invalid block size");
  }
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535) {
    return launch_error("grid", "x in [1, 2^31-1], y and z in [1, 65535]", dims(grid), "invalid grid size");
  }
  const std::size_t limit = shared_memory_limit();
  if (dynamic_shared_bytes > limit) {
    return launch_error("dynamic_shared_bytes", fmt::format("at most {} bytes of shared memory per block", limit),
                        fmt::format("{} bytes", dynamic_shared_bytes), "shared memory over the limit");
  }

  LaunchState state;
  state.entry = entry;
  state.args = args;
  state.grid = grid;
  state.block = block;
  state.threads_per_block = static_cast<unsigned>(threads);
  state.blocks = std::uint64_t{grid.x} * grid.y * grid.z;
  state.shared_bytes = dynamic_shared_bytes;
  state.schedule = schedule;

  auto work = [&state] {
    Worker worker(state);
    if (!worker.prepare()) {
      std::lock_guard lock(state.mutex);
      if (!state.resource_error) {
        state.resource_error =
            RuntimeError(ErrorKind::OutOfMemory, "launch", "fiber stacks and shared memory for one block",
                         "allocation failure", "host emulation device");
      }
      state.next_block.store(state.blocks);  // nobody starts another block
      return;
    }
    worker.run();
  };
  const unsigned workers = static_cast<unsigned>(std::min<std::uint64_t>(worker_threads(), state.blocks));
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < workers; ++i) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // fewer OS threads only makes the launch slower
    }
  }
  work();
  for (std::thread& t : pool) t.join();

  if (state.resource_error) return *state.resource_error;
  if (state.fault) {
    const Fault& f = *state.fault;
    return launch_error(fmt::format("block {} thread {}{}", dim(f.block), dim(f.thread),
                                    f.site.line > 0 ? " at " + where(f.site) : std::string()),
                        f.expected, f.actual, fmt::format("{} [host emulation device]", f.what));
  }
  return {};
}

}  // namespace rudnn::runtime::host
