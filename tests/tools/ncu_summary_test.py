#!/usr/bin/env python3
"""scripts/ncu-summary on a hand-written raw CSV page (no GPU, no ncu needed): the page found after
ncu's own messages, the units row, unit conversion of the duration, absent metrics as "–", the
three largest stall reasons (not the "_not_issued" variants) in either naming, and a file with no
launch or none at all."""
import os
import sys
import tempfile

from script_check import check, finish, load_script

ncu_summary = load_script(sys.argv[1], "ncu_summary")

STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
header = ["ID", "Kernel Name", "Grid Size", "Block Size", "gpu__time_duration.sum",
          "sm__throughput.avg.pct_of_peak_sustained_elapsed", "launch__registers_per_thread",
          STALL.format("barrier"), STALL.format("long_scoreboard"), STALL.format("math_pipe_throttle"),
          STALL.format("wait"), STALL.format("barrier_not_issued")]
units = ["", "", "", "", "msecond", "%", "register/thread", "inst", "inst", "inst", "inst", "inst"]
rows = [
    ["0", "rudnn_gated_delta_chunked_bf16_c64", "(512, 1, 1)", "(256, 1, 1)", "12.5", "31.25", "128",
     "9.5", "3.25", "0.5", "1.75", "20"],
    ["1", "rudnn_conv_fprop_igemm_bf16", "(784, 1, 1)", "(256, 1, 1)", "0.25", "71.5", "168",
     "0.5", "1,250.5", "2", "0.25", "0"],
]
quote = lambda r: ",".join(f'"{x}"' for x in r)
page = "\n".join(["==PROF== Connected to process 4242", "some output of the program",
                  quote(header), quote(units)] + [quote(r) for r in rows]) + "\n"

got = ncu_summary.launches(page)
check("launch count", len(got), 2)
check("kernel", got[0]["Kernel Name"][0], "rudnn_gated_delta_chunked_bf16_c64")
check("unit", got[0]["gpu__time_duration.sum"][1], "msecond")

out = ncu_summary.table(got).splitlines()
check("rows", len(out), 4)
first = [c.strip() for c in out[2].strip("|").split("|")]
check("first kernel", first[0], "rudnn_gated_delta_chunked_bf16_c64")
check("grid × block", first[1], "(512, 1, 1) × (256, 1, 1)")
check("duration in µs (from ms)", first[2], "12500.0")
check("SM %", first[3], "31.2")
check("absent metric", first[4], "–")
check("registers", first[7], "128")
check("stalls, largest first, no _not_issued", first[9], "barrier 9.5, long_scoreboard 3.2, wait 1.8")
second = [c.strip() for c in out[3].strip("|").split("|")]
check("thousands separator", second[9].split(",")[0], "long_scoreboard 1250.5")

with tempfile.TemporaryDirectory() as tmp:
    empty = os.path.join(tmp, "empty.csv")
    with open(empty, "w") as f:
        f.write("==ERROR== No kernels were profiled.\n")
    check("no launch: exit status", ncu_summary.main([empty]), 1)
    check("missing file: exit status", ncu_summary.main([os.path.join(tmp, "absent.csv")]), 1)

# The newer naming: average warp latency per stall reason.
latency = ["ID", "Kernel Name", "smsp__average_warp_latency_issue_stalled_barrier.ratio",
           "smsp__average_warp_latency_issue_stalled_mio_throttle.ratio"]
page2 = "\n".join([quote(latency), quote(["", "", "cycle", "cycle"]), quote(["0", "k", "4.5", "7.25"])])
check("latency stall family", ncu_summary.stalls(ncu_summary.launches(page2)[0]), "mio_throttle 7.2, barrier 4.5")

finish("ncu-summary")
