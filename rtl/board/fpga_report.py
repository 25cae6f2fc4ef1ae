#!/usr/bin/env python3
"""fpga_report.py - resource and timing report of the FPGA flow (verif/board.mk).

  ice40    yosys netlist JSON + nextpnr --report JSON -> report.json; exit 1 when the
           achieved frequency is below the target (make bitstream fails).
  estimate yosys synth_ecp5 / synth_xilinx netlist JSONs -> estimate.json (no place and
           route exists for those families here: cell counts only).
  show     print a report.json.
"""
import argparse
import json
import os
import re
import sys

# UP5K totals (Lattice FPGA-DS-02008): used when nextpnr does not report a resource.
UP5K = {"luts": 5280, "ffs": 5280, "brams": 30, "sprams": 4, "dsps": 8}


def cell_counts(path, top):
    with open(path) as f:
        mods = json.load(f)["modules"]
    counts = {}

    def walk(name, mult):
        for cell in mods[name]["cells"].values():
            t = cell["type"]
            sub = mods.get(t)
            if sub and sub.get("cells") and "blackbox" not in sub.get("attributes", {}):
                # a kept submodule (library cells appear as empty blackboxes)
                walk(t, mult)
            else:
                counts[t] = counts.get(t, 0) + mult

    if top not in mods:
        top = next(n for n, m in mods.items() if m.get("attributes", {}).get("top"))
    walk(top, 1)
    return counts


def sum_re(counts, pattern):
    return sum(n for t, n in counts.items() if re.fullmatch(pattern, t))


def ice40(args):
    cells = cell_counts(args.yosys_json, "board_top")
    error = None
    try:
        with open(args.pnr_report) as f:
            pnr = json.load(f)
    except OSError:
        # nextpnr stopped before writing its report: did not fit, or did not place
        pnr = {}
        error = "nextpnr failed"
        try:
            with open(args.pnr_log) as f:
                lines = f.readlines()
            errs = [l.strip() for l in lines if l.startswith("ERROR")]
            if errs:
                error = errs[-1]
            # "Info:  ICESTORM_LC: 12193/ 5280  230%": what the packed design needs, printed
            # before placement (so also when it does not fit)
            util = {}
            for l in lines:
                m = re.match(r"Info:\s+(ICESTORM_\w+):\s+(\d+)/\s*(\d+)", l)
                if m:
                    util[m.group(1)] = {"used": int(m.group(2)), "available": int(m.group(3))}
            if util:
                pnr["utilization"] = util
                lc = util.get("ICESTORM_LC")
                if lc and lc["used"] > lc["available"]:
                    error = (f"does not fit: {lc['used']} logic cells needed, "
                             f"{lc['available']} on the device ({error})")
        except OSError:
            pass
    util = pnr.get("utilization", {})

    def used_avail(key, fallback_used, total):
        u = util.get(key, {})
        return {"used": u.get("used", fallback_used), "available": u.get("available", total)}

    fmax = pnr.get("fmax", {})
    # the design clock is the PLL output; take the slowest constrained clock
    achieved = min((v["achieved"] for v in fmax.values()), default=0.0)
    rep = {
        "board": "icebreaker (iCE40UP5K-SG48)",
        "host_port": args.port,
        "pes": args.pes,
        "luts": {"used": sum_re(cells, r"SB_LUT4"), "available": UP5K["luts"]},
        "ffs": {"used": sum_re(cells, r"SB_DFF\w*"), "available": UP5K["ffs"]},
        "logic_cells": used_avail("ICESTORM_LC", None, UP5K["luts"]),
        "carries": sum_re(cells, r"SB_CARRY"),
        "brams": used_avail("ICESTORM_RAM", sum_re(cells, r"SB_RAM40_4K\w*"), UP5K["brams"]),
        "sprams": used_avail("ICESTORM_SPRAM", sum_re(cells, r"SB_SPRAM256KA"), UP5K["sprams"]),
        "dsps": used_avail("ICESTORM_DSP", sum_re(cells, r"SB_MAC16"), UP5K["dsps"]),
        "target_mhz": args.target_mhz,
        "achieved_mhz": round(achieved, 2),
        "clocks": {k: {"achieved_mhz": round(v["achieved"], 2),
                       "target_mhz": round(v.get("constraint", 0), 2)} for k, v in fmax.items()},
        "timing_met": error is None and achieved >= args.target_mhz,
        "placed": error is None,
    }
    if error:
        rep["error"] = error
    if args.seed is not None:
        rep["seed"] = args.seed
        # the seeds tried before this one: "seed:outcome" items (outcome: MHz or "no-place")
        rep["earlier_seeds"] = [{"seed": int(k), "result": v} for k, v in
                                (item.split(":", 1) for item in args.earlier.split())]
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(rep, f, indent=2)
        f.write("\n")
    os.replace(tmp, args.out)
    if error:
        show_report(rep)
        print(f"bitstream: place and route failed: {error}", file=sys.stderr)
        return 1
    if not rep["timing_met"]:
        show_report(rep)
        print(f"bitstream: timing NOT met: {achieved:.2f} MHz < {args.target_mhz} MHz target",
              file=sys.stderr)
        return 1
    return 0


def show_report(rep):
    print(f"FPGA report: {rep['board']}, host port: {rep['host_port']}, PEs: {rep['pes']}")
    for k in ("luts", "ffs", "logic_cells", "brams", "sprams", "dsps"):
        v = rep[k]
        used = "?" if v["used"] is None else v["used"]
        pct = "" if v["used"] is None or not v["available"] else \
            f"  ({100.0 * v['used'] / v['available']:.0f} %)"
        print(f"  {k:12s} {used:>6} / {v['available']}{pct}")
    if rep.get("error"):
        print(f"  not placed   {rep['error']}")
    print(f"  clock        {rep['achieved_mhz']} MHz achieved, {rep['target_mhz']} MHz target "
          f"({'met' if rep['timing_met'] else 'NOT met'})")
    if "seed" in rep:
        before = ", ".join(f"seed {e['seed']} {e['result']}" for e in rep["earlier_seeds"])
        print(f"  seed         {rep['seed']}" + (f" (before it: {before})" if before else ""))


def estimate(args):
    out = {"note": "yosys synthesis only (no place and route for these families here)",
           "host_port": args.port, "designs": {}}
    parts = {}
    for path in args.jsons:
        name = path.rsplit("/", 1)[-1].removesuffix(".json")
        fam, shape = name.split("-", 1)
        with open(path) as f:
            mods = json.load(f)["modules"]
        top = next(n for n, m in mods.items() if m.get("attributes", {}).get("top"))
        cells = cell_counts(path, top)
        if fam == "ecp5":
            rep = {"family": "ECP5", "luts": sum_re(cells, r"LUT4"),
                   "ffs": sum_re(cells, r"TRELLIS_FF"),
                   "brams": sum_re(cells, r"DP16KD|PDPW16KD"),
                   "lutrams": sum_re(cells, r"TRELLIS_DPR16X4"),
                   "dsps": sum_re(cells, r"MULT18X18D|ALU54B")}
        else:
            rep = {"family": "Xilinx 7-series", "luts": sum_re(cells, r"LUT[1-6]"),
                   "ffs": sum_re(cells, r"FD[CPRS]E?"),
                   "brams": sum_re(cells, r"RAMB18E1") + 2 * sum_re(cells, r"RAMB36E1"),
                   "lutrams": sum_re(cells, r"RAM\d+[MSX]\w*"),
                   "dsps": sum_re(cells, r"DSP48E1")}
        rep["part"] = shape
        parts[(fam, shape)] = rep
    keys = ("luts", "ffs", "brams", "lutrams", "dsps")
    for (fam, part), rep in sorted(parts.items()):
        if part == "link":
            out["designs"][f"{fam}-link"] = dict(rep, pes=0)
        elif part == "tile":
            for rows, cols in ((4, 4), (8, 8)):
                p = rows * cols
                hp = parts.get((fam, f"hostport{p}"))
                if not hp:
                    continue
                d = {k: p * rep[k] + hp[k] for k in keys}
                d.update(family=rep["family"], pes=p, shape=f"{rows}x{cols}",
                         method=f"{p} x mesh_tile + mesh_hostport (NumPes {p})",
                         tile={k: rep[k] for k in keys}, hostport={k: hp[k] for k in keys})
                out["designs"][f"{fam}-{rows}x{cols}"] = d
        elif part == "mesh2x2":
            # whole-mesh synthesis, to check the tile composition above
            tile, hp = parts.get((fam, "tile")), parts.get((fam, "hostport4"))
            d = dict(rep, pes=4, shape="2x2", method="whole mesh_top, flattened")
            if tile and hp:
                comp = {k: 4 * tile[k] + hp[k] for k in keys}
                d["composed"] = comp
                d["composed_vs_whole_luts_pct"] = round(
                    100.0 * (comp["luts"] - rep["luts"]) / max(rep["luts"], 1), 1)
            out["designs"][f"{fam}-2x2"] = d
    for name, rep in out["designs"].items():
        print(f"  {name:14s} PEs {rep['pes']:>3}  LUT {rep['luts']:>7}  FF {rep['ffs']:>7}  "
              f"BRAM(18k) {rep['brams']:>4}  LUTRAM {rep['lutrams']:>5}  DSP {rep['dsps']:>4}")
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("ice40")
    a.add_argument("--yosys-json", required=True)
    a.add_argument("--pnr-report", required=True)
    a.add_argument("--pnr-log", default="")
    a.add_argument("--target-mhz", type=float, required=True)
    a.add_argument("--pes", type=int, default=0)
    a.add_argument("--port", default="mesh")
    a.add_argument("--out", required=True)
    a.add_argument("--seed", type=int, default=None)
    a.add_argument("--earlier", default="")
    o = sub.add_parser("outcome", help="one report's result: achieved MHz or no-place")
    o.add_argument("report")
    e = sub.add_parser("estimate")
    e.add_argument("--out", required=True)
    e.add_argument("--port", default="mesh")
    e.add_argument("jsons", nargs="+")
    s = sub.add_parser("show")
    s.add_argument("report")
    args = ap.parse_args()
    if args.cmd == "ice40":
        return ice40(args)
    if args.cmd == "estimate":
        return estimate(args)
    if args.cmd == "outcome":
        with open(args.report) as f:
            rep = json.load(f)
        print(f"{rep['achieved_mhz']}MHz" if rep.get("placed") else "no-place")
        return 0
    with open(args.report) as f:
        show_report(json.load(f))
    return 0


if __name__ == "__main__":
    sys.exit(main())
