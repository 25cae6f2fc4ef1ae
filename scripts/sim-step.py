#!/usr/bin/env python3
"""sim-step.py - `make sim`'s training-step mode.

One full training step (forward, backward data, weight gradients of every projection, the
optimizer) of a small GPT with static random masks, on the Verilated mesh and on the cpu
backend of the same mesh, at several sparsities. The two must be bit-identical (equal
digests of the loss and of every updated parameter: cshost trainstep). Reports, per
sparsity: device cycles per step (measured by the simulator), the speedup over the dense
step, the share of the ideal speedup 1/(1-s), and the host-link bytes per step split into
weights (nonzero streams), gradients (weight-gradient results), activations (uploads and
read-back of kernel inputs and outputs) and other (commands, tables, SYNC).

The host link is the host port of docs/architecture.md section 6: one 32-bit word per
cycle each way (LINK_WORDS_PER_CYCLE), i.e. 4 bytes x f_clk per direction (400 MB/s at
the simulated 100 MHz).

Then the resident step (device.resident: cshost trainstep --resident 1) of the same model
on the same Verilated mesh, bit-exact against the cpu backend: measured cycles next to the
cpu backend's estimate (pe timing). A mesh that cannot run it (pe_micro_mt, or SRAM too
small for the model) is reported as skipped with the config error.

Besides the simulated model it runs the cpu backend (the cycle estimate users see without
the simulator, within 2% of the mesh: tests/driver/test_estimate.c) on the reference
model (2 layers, 128 channels, 8 x 64 tokens) on the 4x4 and on the 2x2 board
configuration, so that the report carries the figures the targets are stated in.

Merges {"train_step": ...} into OUTDIR/report.json (creating it when absent) and prints
tables. Exit status 1 when a step is not bit-exact or fails.

usage: sim-step.py CSHOST OUTDIR MESH "SPARSITIES" "MODEL ARGS"
"""
import json
import os
import subprocess
import sys

LINK_WORDS_PER_CYCLE = 1
SIM_CLOCK_HZ = 100e6


def step(cshost, device, sparsity, model, resident=False):
    cmd = [cshost, "trainstep", "--device", device, "--sparsity", str(sparsity)] + model.split()
    if resident:
        cmd += ["--resident", "1"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def resident_sim(cshost, device, check_device, sparsities, model):
    """The resident step on the Verilated mesh against the cpu backend of the same mesh:
    measured cycles next to the cpu estimate, digests equal. None and the reason when the
    mesh cannot run it (pe_micro_mt, or SRAM too small for the model: a config error) or
    the step failed (then not ok)."""
    out, ok = [], True
    for s in sparsities:
        try:
            r = step(cshost, device, s, model, resident=True)
        except subprocess.CalledProcessError as e:
            why = e.stderr.strip()
            # a config error is a mesh that cannot run it; anything else a failure
            config = "device.resident:" in why or "device.pe:" in why
            if not config:
                print("sim: resident step on %s failed: %s" % (device, why), file=sys.stderr)
            return None, config, why
        c = step(cshost, check_device, s, model, resident=True)
        exact = c["digest"] == r["digest"]
        ok = ok and exact
        out.append({
            "sparsity": s, "cycles": r["cycles"], "stream_cycles": r["stream_cycles"],
            "cpu_estimate_cycles": c["cycles"],
            "cpu_estimate_error": round(c["cycles"] / r["cycles"] - 1, 5),
            "speedup_vs_dense": round(out[0]["cycles"] / r["cycles"] if out else 1.0, 3),
            "link_bytes": r["link_bytes_out"] + r["link_bytes_in"],
            "weight_bytes": r["weight_bytes"], "grad_bytes": r["grad_bytes"],
            "act_bytes": r["act_bytes"], "other_bytes": r["other_bytes"],
            "loss": r["loss"], "digest": r["digest"], "bit_exact_vs_cpu": exact})
    return out, ok, None


def stable(title, rows):
    print(title)
    print("%-8s %11s %11s %8s %8s %11s %7s" % (
        "sparsity", "cycles", "cpu_est", "est_err", "speedup", "link_bytes", "exact"))
    for r in rows:
        print("%-8s %11d %11d %7.1f%% %7.2fx %11d %7s" % (
            r["sparsity"], r["cycles"], r["cpu_estimate_cycles"],
            100 * r["cpu_estimate_error"], r["speedup_vs_dense"], r["link_bytes"],
            r["bit_exact_vs_cpu"]))


def row(r, dense):
    s = r["sparsity"]
    speed = dense["cycles"] / r["cycles"]
    ideal = 1.0 / (1.0 - s)
    return {
        "sparsity": s,
        "cycles": r["cycles"],
        "stream_cycles": r["stream_cycles"],
        "speedup_vs_dense": round(speed, 3),
        "ideal_speedup": round(ideal, 3),
        "share_of_ideal": round(speed / ideal, 4),
        "link_bytes": r["link_bytes_out"] + r["link_bytes_in"],
        "link_bytes_vs_dense": round((r["link_bytes_out"] + r["link_bytes_in"]) /
                                     (dense["link_bytes_out"] + dense["link_bytes_in"]), 4),
        "link_bytes_out": r["link_bytes_out"],
        "link_bytes_in": r["link_bytes_in"],
        "weight_bytes": r["weight_bytes"],
        "grad_bytes": r["grad_bytes"],
        "act_bytes": r["act_bytes"],
        "other_bytes": r["other_bytes"],
        "nnz_streamed": r["nnz_streamed"],
        "loss": r["loss"],
        "digest": r["digest"],
    }


def table(title, rows):
    print(title)
    print("%-8s %11s %8s %7s %11s %9s %10s %10s %11s %9s" % (
        "sparsity", "cycles", "speedup", "ideal%", "link_bytes", "vs_dense", "weights",
        "grads", "activations", "other"))
    for r in rows:
        print("%-8s %11d %7.2fx %6.1f%% %11d %8.3fx %10d %10d %11d %9d" % (
            r["sparsity"], r["cycles"], r["speedup_vs_dense"], 100 * r["share_of_ideal"],
            r["link_bytes"], r["link_bytes_vs_dense"], r["weight_bytes"], r["grad_bytes"],
            r["act_bytes"], r["other_bytes"]))


def projection(runs, w):
    """The resident-activation design's projected step (docs/resident-step.md)
    for host-port width w, against today's dense step and against its own dense step."""
    key = "resident_w%d" % w
    today = runs[0]
    dense = runs[0][key]
    out = []
    for r in runs:
        p = r[key]
        s = r["sparsity"]
        b = p["weight_bytes"] + p["grad_bytes"] + p["act_bytes"] + p["other_bytes"]
        out.append({
            "sparsity": s, "cycles": p["cycles"], "kernel_cycles": p["kernel_cycles"],
            "vector_cycles": p["vector_cycles"], "link_cycles": p["link_cycles"],
            "speedup_vs_dense": round(dense["cycles"] / p["cycles"], 3),
            "speedup_vs_today_dense": round(today["cycles"] / p["cycles"], 3),
            "ideal_speedup": round(1 / (1 - s), 3),
            "share_of_ideal": round(dense["cycles"] / p["cycles"] * (1 - s), 4),
            "link_bytes": b,
            "link_bytes_vs_today_dense": round(b / (today["link_bytes_out"] +
                                                    today["link_bytes_in"]), 4),
            "weight_bytes": p["weight_bytes"], "grad_bytes": p["grad_bytes"],
            "act_bytes": p["act_bytes"], "other_bytes": p["other_bytes"]})
    return out


def ptable(title, rows):
    print(title)
    print("%-8s %11s %10s %10s %9s %8s %8s %7s %11s %9s" % (
        "sparsity", "cycles", "kernels", "vector", "link", "speedup", "vs_today", "ideal%",
        "link_bytes", "vs_today"))
    for r in rows:
        print("%-8s %11d %10d %10d %9d %7.2fx %7.2fx %6.1f%% %11d %8.3fx" % (
            r["sparsity"], r["cycles"], r["kernel_cycles"], r["vector_cycles"],
            r["link_cycles"], r["speedup_vs_dense"], r["speedup_vs_today_dense"],
            100 * r["share_of_ideal"], r["link_bytes"], r["link_bytes_vs_today_dense"]))


def resident_rows(cshost, device, sparsities, model, today_dense):
    """The resident step (device.resident, host/train/train_resident.c) measured on the cpu
    backend: cycles and link bytes per step against its own dense step and today's."""
    runs = [step(cshost, device, s, model, resident=True) for s in sparsities]
    dense = runs[0]
    today_bytes = today_dense["link_bytes_out"] + today_dense["link_bytes_in"]
    out = []
    for r in runs:
        s = r["sparsity"]
        b = r["link_bytes_out"] + r["link_bytes_in"]
        out.append({
            "sparsity": s, "cycles": r["cycles"],
            "speedup_vs_dense": round(dense["cycles"] / r["cycles"], 3),
            "speedup_vs_today_dense": round(today_dense["cycles"] / r["cycles"], 3),
            "ideal_speedup": round(1 / (1 - s), 3),
            "share_of_ideal": round(dense["cycles"] / r["cycles"] * (1 - s), 4),
            "link_bytes": b, "link_bytes_vs_today_dense": round(b / today_bytes, 4),
            "weight_bytes": r["weight_bytes"], "grad_bytes": r["grad_bytes"],
            "act_bytes": r["act_bytes"], "other_bytes": r["other_bytes"],
            "loss": r["loss"], "digest": r["digest"]})
    return out


def rtable(title, rows):
    print(title)
    print("%-8s %11s %8s %8s %7s %11s %9s %10s %10s %11s %9s" % (
        "sparsity", "cycles", "speedup", "vs_today", "ideal%", "link_bytes", "vs_today",
        "weights", "grads", "activations", "other"))
    for r in rows:
        print("%-8s %11d %7.2fx %7.2fx %6.1f%% %11d %8.3fx %10d %10d %11d %9d" % (
            r["sparsity"], r["cycles"], r["speedup_vs_dense"], r["speedup_vs_today_dense"],
            100 * r["share_of_ideal"], r["link_bytes"], r["link_bytes_vs_today_dense"],
            r["weight_bytes"], r["grad_bytes"], r["act_bytes"], r["other_bytes"]))


def sweep(cshost, device, sparsities, model, check_device=None):
    runs, ok = [], True
    for s in sparsities:
        r = step(cshost, device, s, model)
        if check_device:
            c = step(cshost, check_device, s, model)
            exact = c["digest"] == r["digest"]
            r["bit_exact_vs_cpu"] = exact
            r["cpu_estimate_cycles"] = c["cycles"]
            ok = ok and exact
        runs.append(r)
    dense = runs[0]
    rows = []
    for r in runs:
        x = row(r, dense)
        if check_device:
            x["bit_exact_vs_cpu"] = r["bit_exact_vs_cpu"]
            x["cpu_estimate_cycles"] = r["cpu_estimate_cycles"]
            x["cpu_estimate_error"] = round(r["cpu_estimate_cycles"] / r["cycles"] - 1, 5)
        rows.append(x)
    return rows, ok, runs


def main():
    cshost, outdir, mesh, sparsities, model = sys.argv[1:6]
    sp = [float(s) for s in sparsities.split()]
    if sp[0] != 0:
        sp = [0.0] + sp
    res = {"link": {"words_per_cycle": LINK_WORDS_PER_CYCLE, "bytes_per_word": 4,
                    "note": "host port: 1 word/cycle each way = 400 MB/s per direction at "
                            "100 MHz; the 2x2 board's UART is far slower (docs/implementations.md)"}}
    sim_rows, ok, _ = sweep(cshost, "sim:" + mesh, sp, model, check_device="cpu:" + mesh)
    res["simulated"] = {"device": "sim:" + mesh, "model": model, "runs": sim_rows}
    table("training step, sim:%s (%s), measured; cpu digest equal: %s" % (
        mesh, model, all(r["bit_exact_vs_cpu"] for r in sim_rows)), sim_rows)
    # the resident step (device.resident) on the same Verilated mesh
    rrows, rok, why = resident_sim(cshost, "sim:" + mesh, "cpu:" + mesh, sp, model)
    ok = ok and rok
    if rrows is None:
        res["resident_simulated"] = {"device": "sim:" + mesh, "model": model,
                                     "skipped": why}
        print("resident step, sim:%s: not run: %s" % (mesh, why))
    else:
        res["resident_simulated"] = {"device": "sim:" + mesh, "model": model, "runs": rrows}
        stable("resident step (device.resident), sim:%s (%s), measured; cpu digest equal: %s"
               % (mesh, model, all(r["bit_exact_vs_cpu"] for r in rrows)), rrows)
    ref_model = "--layers 2 --embd 128 --heads 4 --batch 8 --ctx 64"
    for dev in ("cpu:4x4", "cpu:2x2,pe=micro_mt"):
        rows, _, raw = sweep(cshost, dev, sp, ref_model)
        proj = {"w%d" % w: projection(raw, w) for w in (1, 2)}
        res.setdefault("cpu_estimate", []).append({"device": dev, "model": ref_model,
                                                   "runs": rows,
                                                   "resident_projection": proj})
        table("training step, %s (%s), cpu estimate (pe timing)" % (dev, ref_model), rows)
        for w in (1, 2):
            ptable("  resident-activation design (docs/resident-step.md), projected, host port %d "
                   "word(s)/cycle" % w, proj["w%d" % w])
        if dev == "cpu:4x4":
            # the resident step itself, on the SRAM its design assumes
            rdev = "cpu:4x4,awords=65536,bwords=16384"
            rrows = resident_rows(cshost, rdev, sp, ref_model, raw[0])
            res["resident_measured"] = {"device": rdev, "model": ref_model,
                                        "today_dense_device": dev, "runs": rrows}
            rtable("  resident step (device.resident), measured on %s, cpu estimate" % rdev,
                   rrows)
    path = os.path.join(outdir, "report.json")
    rep = {}
    if os.path.exists(path):
        with open(path) as f:
            rep = json.load(f)
    rep["train_step"] = res
    with open(path + ".tmp", "w") as f:
        json.dump(rep, f, indent=1)
    os.replace(path + ".tmp", path)
    print("sim: wrote %s (train_step)" % path)
    if not ok:
        print("sim: training step NOT bit-exact between sim and cpu", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
