#!/usr/bin/env python3
"""scripts/sass-mix's reading of nvdisasm output, on hand-written SASS (no nvdisasm needed): the
instruction classes, the loops (backward branches), and the hot loop — the most MMAs, and among
loops with as many the shortest, whatever their FFMAs (a longer loop around the K loop with the
epilogue's float math must not win)."""
import sys

from script_check import check, finish, load_script

sass_mix = load_script(sys.argv[1], "sass_mix")


def line(address, text):
    return f"        /*{address:04x}*/                   {text} ;"


# An outer loop (tile) around an inner K loop: the inner one holds both MMAs, the outer adds the
# epilogue's FFMAs and stores.
SASS = "\n".join([
    line(0x00, "S2R R0, SR_TID.X"),
    ".L_x_1:",
    line(0x10, "IMAD R2, R0, 0x2, RZ"),
    ".L_x_2:",
    line(0x20, "LDSM.16.M88.4 R4, [R2]"),
    line(0x30, "HMMA.16816.F32.BF16 R8, R4, R6, R8"),
    line(0x40, "HMMA.16816.F32.BF16 R12, R4, R6, R12"),
    line(0x50, "LDGSTS.E.BYPASS.128 [R3], desc[UR4][R16.64], P0"),
    line(0x60, "@P0 BRA `(.L_x_2)"),
    line(0x70, "FFMA R1, R8, R9, R1"),
    line(0x80, "FFMA R1, R12, R13, R1"),
    line(0x90, "FFMA R1, R14, R15, R1"),
    line(0xa0, "STG.E desc[UR4][R20.64], R1"),
    line(0xb0, "BAR.SYNC.DEFER_BLOCKING 0x0"),
    line(0xc0, "@!P1 BRA `(.L_x_1)"),
    line(0xd0, "BRA `(.L_x_3)"),  # a forward branch: no loop
    ".L_x_3:",
    line(0xe0, "EXIT"),
])

code, labels = sass_mix.parse(SASS)
check("instructions parsed", len(code), 15)
check("labels", labels, {".L_x_1": 0x10, ".L_x_2": 0x20, ".L_x_3": 0xe0})
check("loops", sass_mix.loops(code, labels), [(1, 12), (2, 6)])
best = sass_mix.hot_loop(code, labels)
check("hot loop range", (best[1], best[2]), (2, 6))
mix = best[3]
check("hot loop mma", mix["mma"], 2)
check("hot loop ldsm", mix["ldsm"], 1)
check("hot loop cp.async", mix["cp.async"], 1)
check("hot loop branch", mix["branch"], 1)
check("hot loop fma", mix["fma"], 0)
outer = sass_mix.mix(code, 1, 12)
check("outer fma", outer["fma"], 3)
check("outer stg", outer["stg"], 1)
check("outer barrier", outer["barrier"], 1)
check("outer int", outer["int"], 1)
for opcode, cls in [("HGMMA.64x128x16.F32.BF16", "mma"), ("LDS.U.128", "lds"), ("STS.128", "sts"),
                    ("LDG.E.128", "ldg"), ("ISETP.GE.AND", "int"), ("SHF.R.S64", "int"), ("MUFU.EX2", "other"),
                    ("DEPBAR.LE", "cp.async"), ("CS2R", "move"), ("FSEL", "other"), ("HFMA2.MMA", "move"),
                    ("HFMA2", "fma"), ("ULDC.64", "move"), ("LDC", "move")]:
    check(f"class of {opcode}", sass_mix.classify(opcode), cls)

# Plain cores: no MMA anywhere, the loop with the most FFMAs.
PLAIN = "\n".join([
    ".L_x_0:",
    line(0x00, "LDS R4, [R2]"),
    line(0x10, "FFMA R8, R4, R5, R8"),
    line(0x20, "FFMA R9, R4, R6, R9"),
    line(0x30, "@P0 BRA `(.L_x_0)"),
    line(0x40, "EXIT"),
])
code, labels = sass_mix.parse(PLAIN)
best = sass_mix.hot_loop(code, labels)
check("plain hot loop", (best[1], best[2], best[3]["fma"], best[3]["lds"]), (0, 3, 2, 1))
check("no loop, no hot loop", sass_mix.hot_loop(*sass_mix.parse(line(0, "EXIT"))), None)

finish("sass-mix")
