#pragma once
// The host emulation device: runs CUDA-style kernels compiled for the host (with the prelude in
// templates/rudnn/prelude/host.h) as one fiber per CUDA thread, and catches the kernel bugs a GPU
// would hide or hang on (DESIGN §4, EMULATOR-FACTS.md).
//
// Environment: RUDNN_EMU_SCHEDULE=forward|reverse|random[:seed] (default schedule),
// RUDNN_EMU_THREADS=N (OS threads per launch, default hardware concurrency), RUDNN_EMU_STACK_KIB=N
// (fiber stack size, default 128 KiB, 256 KiB under ASan; each stack has a guard page below it).
//
// Not modelled (DESIGN §4): memory-model bugs, timing, occupancy, bank conflicts, and inter-block
// co-residency: a block that spins waiting for another block may hang, as may a thread that spins on
// shared memory waiting for another thread of its block without reaching a barrier or a warp
// collective (threads switch only at those points).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "rudnn/error.h"
#include "rudnn/prelude/emu_abi.h"

namespace rudnn::runtime::host {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// The order in which the threads that are ready are resumed between two yield points (barriers and
// warp collectives). A kernel whose result depends on it has a missing barrier.
enum class Schedule { Forward, Reverse, Random };
struct ScheduleOptions {
  Schedule order = Schedule::Forward;
  std::uint64_t seed = 0;  // Random only; each block draws from (seed, block index)
};

// Called once per emulated thread, inside its fiber.
using ThreadEntry = void (*)(void** args);

// The table a kernel module's rudnn_emu_bind() receives.
const rudnn_emu_api* emulator_api();

// Runs grid x block threads of `entry` and returns when all have finished. Blocks run on up to
// worker_threads() OS threads; results never depend on how many. Kernel bugs the emulator catches
// (divergent barrier, a thread exiting while others wait at a barrier, deadlock, a lane not in its
// own shuffle mask, shared memory over the limit, a block over 1024 threads, trap, ...) come back as
// RuntimeError{ErrorKind::EmulatorFault} whose message names the block, thread and call site; the
// launch then stops (blocks not yet started are skipped). Never hangs, never aborts the process.
// When several blocks fault, the one with the lowest linear index is reported.
Status<RuntimeError> launch(ThreadEntry entry, void** args, Dim3 grid, Dim3 block, std::size_t dynamic_shared_bytes,
                            const ScheduleOptions& schedule);

// RUDNN_EMU_SCHEDULE=forward|reverse|random[:seed] (read once), unless set_default_schedule was
// called. Thread-safe.
ScheduleOptions default_schedule();
void set_default_schedule(const ScheduleOptions& schedule);
// "forward", "reverse", "random", "random:SEED"; nullopt for anything else.
std::optional<ScheduleOptions> parse_schedule(std::string_view text);

// Dynamic shared memory a block may use; default 227 KiB (Hopper, after opting in).
inline constexpr std::size_t kDefaultSharedMemoryLimit = 227 * 1024;
void set_shared_memory_limit(std::size_t bytes);
std::size_t shared_memory_limit();

// OS threads used by a launch: RUDNN_EMU_THREADS, else the hardware concurrency. `n` = 0 restores
// that default. Thread-safe.
void set_worker_threads(unsigned n);
unsigned worker_threads();

}  // namespace rudnn::runtime::host
