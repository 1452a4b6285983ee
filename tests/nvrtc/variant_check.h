#pragma once
// Compiles lowered kernel variants with NVRTC for sm_80 and sm_90a (two compiler threads: the CI
// machine has two cores) and checks each ptxas report: no spills, no stack frame, no static shared
// memory (templates take all shared memory dynamically). Prints the registers of each.
// RUDNN_VARIANT_CUBIN_DIR=dir also writes each cubin to dir/<entry>.<arch>.cubin, for reading the
// machine code without a GPU (scripts/sass-mix: the instruction mix of each kernel's loops).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/nvrtc/nvrtc_backend.h"

namespace rudnn::testing {

// Sets an environment variable for a scope and puts back what was there: RUDNN_WGMMA=1 while the
// variant lists are lowered (the wgmma tiles lower for sm_90a only when opted in).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name), had_(std::getenv(name) != nullptr) {
    if (had_) saved_ = std::getenv(name);
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, saved_.c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_;
  std::string saved_;
};

struct KernelVariant {
  std::string entry, source;
  bool sm90a_only = false;  // uses wgmma: compiled for sm_90a alone (elsewhere it is a compile error)
};

// The variants a run compiles: every one, or with RUDNN_VARIANT_SAMPLE=f (0 < f < 1) a random
// fraction f of them (at least one), drawn afresh each run from RUDNN_VARIANT_SEED when set, else
// from a random seed that is printed so a failing sample can be repeated. The CI machine (two cores,
// scripts/test) compiles half per run, so a regression in one variant is caught with probability 1/2
// per run: a change to a template or a lowering is checked with RUDNN_VARIANT_SAMPLE=1 before it lands.
// RUDNN_VARIANT_FILTER=text keeps only the variants whose entry contains `text` (before sampling): a
// developer's quick check of the kernels being changed.
template <class Variant>
std::vector<Variant> sampled(std::vector<Variant> variants, const char* family) {
  if (const char* filter = std::getenv("RUDNN_VARIANT_FILTER"); filter && *filter) {
    std::erase_if(variants, [&](const Variant& v) { return v.entry.find(filter) == std::string::npos; });
    std::printf("%s: %zu variants match RUDNN_VARIANT_FILTER=%s\n", family, variants.size(), filter);
  }
  const char* fraction_text = std::getenv("RUDNN_VARIANT_SAMPLE");
  const double fraction = fraction_text ? std::atof(fraction_text) : 1.0;
  if (!(fraction > 0.0 && fraction < 1.0) || variants.empty()) return variants;
  const char* seed_text = std::getenv("RUDNN_VARIANT_SEED");
  const unsigned long long seed = seed_text ? std::strtoull(seed_text, nullptr, 10) : std::random_device{}();
  std::mt19937_64 random(seed);
  std::bernoulli_distribution keep(fraction);
  std::vector<Variant> chosen;
  for (const Variant& v : variants)
    if (keep(random)) chosen.push_back(v);
  if (chosen.empty())
    chosen.push_back(variants[std::uniform_int_distribution<std::size_t>(0, variants.size() - 1)(random)]);
  std::printf("%s: compiling %zu of %zu variants (RUDNN_VARIANT_SAMPLE=%g RUDNN_VARIANT_SEED=%llu)\n", family,
              chosen.size(), variants.size(), fraction, seed);
  return chosen;
}

inline void expect_spill_free_on_sm80_and_sm90a(const std::vector<KernelVariant>& all, const char* family) {
  const std::vector<KernelVariant> variants = sampled(all, family);
  namespace nv = rudnn::compiler::nvrtc;
  struct Row {
    std::string entry, arch, error;
    nv::PtxasReport report;
    std::string wgmma_serialized;  // ptxas's advisory that it serialized the wgmma (registers, fences)
  };
  std::vector<Row> rows(variants.size() * 2);
  auto work = [&](std::size_t first) {
    for (std::size_t i = first; i < rows.size(); i += 2) {
      const KernelVariant& v = variants[i / 2];
      const char* arch = i % 2 ? "sm_90a" : "sm_80";
      rows[i].entry = v.entry;
      rows[i].arch = arch;
      if (v.sm90a_only && i % 2 == 0) continue;
      auto k = nv::compile(v.source, v.entry, arch);
      if (!k.ok()) {
        rows[i].error = k.error().message();
        continue;
      }
      rows[i].report = k->report;
      if (const std::size_t at = k->log.find("wgmma.mma_async instructions are serialized"); at != std::string::npos)
        rows[i].wgmma_serialized = k->log.substr(at, k->log.find('\n', at) - at);
      if (const char* dir = std::getenv("RUDNN_VARIANT_CUBIN_DIR"); dir && *dir) {
        std::ofstream file(std::string(dir) + "/" + v.entry + "." + arch + ".cubin", std::ios::binary);
        file.write(k->cubin.data(), static_cast<std::streamsize>(k->cubin.size()));
        if (!file) rows[i].error = std::string("RUDNN_VARIANT_CUBIN_DIR: could not write into ") + dir;
      }
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    if (variants[i / 2].sm90a_only && i % 2 == 0) continue;
    SCOPED_TRACE(r.entry + " " + r.arch);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_TRUE(r.report.found);
    EXPECT_EQ(r.report.spill_stores_bytes, 0);
    EXPECT_EQ(r.report.spill_loads_bytes, 0);
    EXPECT_EQ(r.report.stack_bytes, 0);
    EXPECT_EQ(r.report.shared_bytes, 0);
    EXPECT_EQ(r.wgmma_serialized, "") << "ptxas serialized the kernel's wgmma";
    std::printf("%-64s %-7s registers %3d\n", r.entry.c_str(), r.arch.c_str(), r.report.registers);
  }
}

}  // namespace rudnn::testing
