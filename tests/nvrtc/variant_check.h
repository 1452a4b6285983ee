#pragma once
// Compiles lowered kernel variants with NVRTC for sm_80 and sm_90a (two compiler threads: the CI
// machine has two cores) and checks each ptxas report: no spills, no stack frame, no static shared
// memory (templates take all shared memory dynamically). Prints the registers of each.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "backends/nvrtc/nvrtc_backend.h"

namespace rudnn::testing {

struct KernelVariant {
  std::string entry, source;
};

inline void expect_spill_free_on_sm80_and_sm90a(const std::vector<KernelVariant>& variants) {
  namespace nv = rudnn::compiler::nvrtc;
  struct Row {
    std::string entry, arch, error;
    nv::PtxasReport report;
  };
  std::vector<Row> rows(variants.size() * 2);
  auto work = [&](std::size_t first) {
    for (std::size_t i = first; i < rows.size(); i += 2) {
      const KernelVariant& v = variants[i / 2];
      const char* arch = i % 2 ? "sm_90a" : "sm_80";
      rows[i].entry = v.entry;
      rows[i].arch = arch;
      auto k = nv::compile(v.source, v.entry, arch);
      if (!k.ok())
        rows[i].error = k.error().message();
      else
        rows[i].report = k->report;
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  for (const Row& r : rows) {
    SCOPED_TRACE(r.entry + " " + r.arch);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_TRUE(r.report.found);
    EXPECT_EQ(r.report.spill_stores_bytes, 0);
    EXPECT_EQ(r.report.spill_loads_bytes, 0);
    EXPECT_EQ(r.report.stack_bytes, 0);
    EXPECT_EQ(r.report.shared_bytes, 0);
    std::printf("%-64s %-7s registers %3d\n", r.entry.c_str(), r.arch.c_str(), r.report.registers);
  }
}

}  // namespace rudnn::testing
