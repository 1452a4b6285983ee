#pragma once
// What a target architecture can run, for the contracts and the heuristics that pick tensor-core
// kernels. One place, so the MoE experts, the flash attention kernel and the chunked gated delta
// rule agree on which GPUs have the instructions their tensor-core paths are written with.
#include <cstdint>
#include <string>

namespace rudnn::contracts {

// Whether `arch` has mma.sync m16n8k16 with f16/bf16 inputs, ldmatrix and 16-byte cp.async — the
// instructions of every tensor-core template: sm_80 or newer, and the host emulation device
// ("host-..."), which emulates them. An empty arch means "not known here" and answers true (the
// check happens where the target is known).
bool has_mma_m16n8k16(const std::string& arch);

// Dynamic shared memory a block may opt into: sm_80 163 KiB, sm_86/sm_89 99 KiB, sm_90 227 KiB. The
// largest bounds every kernel of any target (the op verifiers); a heuristic reads its target's own
// (KernelTarget::maxSharedBytes), and one that serves every sm_80+ target fits the smallest.
inline constexpr std::int64_t kLargestSharedBytes = 227 * 1024;
inline constexpr std::int64_t kSmallestSharedBytes = 99 * 1024;

// The requirement as an error's "expected" text.
inline constexpr const char* kMmaRequirement = "a GPU with mma.sync m16n8k16 f16/bf16 (sm_80 or newer)";

// Whether rudnn may run its warpgroup-MMA kernels (wgmma.mma_async, the templates' wgmma_* wrappers)
// on `arch`: only the arch-specific target sm_90a has wgmma (H100, H200; it is neither in sm_90 nor in
// later architectures' PTX). The host emulation device reporting sm_90a (`host_emulation`) emulates
// it; "host..." and empty (not known here) answer true. A GPU needs RUDNN_WGMMA=1 besides, since no
// GPU has run these kernels yet (docs/wgmma.md): until one has, Autotune must not pick an unchecked
// kernel by its speed. A kernel_config that uses wgmma carries the key "wgmma" = 1 (every family
// alike), and rudnn-select-kernel-config refuses it where this is false.
bool has_wgmma(const std::string& arch, bool host_emulation = false);
// Whether a heuristic (a config chosen without being asked for) may take a wgmma kernel on `arch`:
// has_wgmma without the host flag, so the host emulation device needs the opt-in too and its tests
// keep covering mma.sync by default, and never for an empty arch (no target known: the portable
// choice). Forced configs and Autotune candidates ask has_wgmma itself.
bool heuristics_take_wgmma(const std::string& arch);
inline constexpr const char* kWgmmaRequirement =
    "a GPU with wgmma (sm_90a: H100, H200) and RUDNN_WGMMA=1 (opt-in until a GPU run verifies the wgmma kernels)";
inline constexpr const char* kWgmmaConfigKey = "wgmma";

}  // namespace rudnn::contracts
