#!/usr/bin/env python3
"""scripts/mutate.py - mutation testing of the RTL checks (`make mutate`).

Applies each mutation of verif/mutate/mutations.txt to a scratch copy of the tree
(build/mutate/tree; the working tree is never patched), rebuilds the RTL benches of
`make test` there and runs them: the checks the mutation names first, stopping at the first
failure (the mutant is killed), then, if it survives, every other RTL entry of `make test`
and `make formal` (those built without the mutated file are skipped: they cannot see
it). A mutant that does not build is reported as such, never as killed. A
check that fails on a mutant counts only if it passes on the unmutated copy (checked once
per check, cached in build/mutate/baseline.json for the same sources).

It measures the checks; it does not change them. Writes build/mutate/report.md and
report.json after every mutant, so a partial sweep still leaves a report.

Options (environment):
  MUTATE_SEED=n      order of the mutants within a cost class (default 1)
  MUTATE_ONLY=a,b    only these mutation ids
  MUTATE_JOBS=1      mutants run one at a time (the only setting: 2-core machines)
  MUTATE_BUDGET=s    stop starting new mutants after s seconds (default 0: no limit)
  MUTATE_TIMEOUT=s   per check run (default 900, as `make test`); a timeout is a failure
  MUTATE_REST=0      do not run the other entries and `make formal` for a survivor of its own
                     checks (reported as "survived own checks")
  MUTATE_FORMAL=0    skip `make formal` in the rest
  MUTATE_RESUME=1    keep the verdicts of build/mutate/report.json when the sources are the
                     same (a sweep continued after MUTATE_BUDGET stopped it)
"""
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
MUTS = os.path.join(ROOT, "verif/mutate/mutations.txt")
OUT = os.path.join(ROOT, "build/mutate")
TREE = os.path.join(OUT, "tree")
LOGS = os.path.join(OUT, "logs")
RTL_PREFIXES = ("build/verif/", "build/ucode/", "verif/")
FORMAL = "make formal"


def die(msg):
    print("mutate: " + msg, file=sys.stderr)
    sys.exit(2)


def parse(path):
    muts, cur = [], None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("@ "):
                head, _, desc = line[2:].partition("|")
                m = {"line": n, "desc": desc.strip(), "orig": [], "repl": []}
                for field in head.split():
                    k, _, v = field.partition("=")
                    m[k] = v
                for k in ("id", "file", "checks", "cost"):
                    if not m.get(k):
                        die(f"{path}:{n}: missing field {k}")
                m["checks"] = m["checks"].split(",")
                m["cost"] = int(m["cost"])
                muts.append(m)
                cur = m
            elif line.startswith("- ") or line == "-":
                if cur is None:
                    die(f"{path}:{n}: snippet before a header")
                cur["orig"].append(line[2:])
            elif line.startswith("+ ") or line == "+":
                if cur is None:
                    die(f"{path}:{n}: replacement before a header")
                cur["repl"].append(line[2:])
            elif line.strip() and not line.startswith("#"):
                die(f"{path}:{n}: unexpected line: {line}")
    ids = set()
    for m in muts:
        if m["id"] in ids:
            die(f"{path}:{m['line']}: duplicate id {m['id']}")
        ids.add(m["id"])
        m["orig"] = "\n".join(m["orig"])
        m["repl"] = "\n".join(m["repl"])
        if not m["orig"] or m["orig"] == m["repl"]:
            die(f"{path}:{m['line']}: {m['id']}: empty or unchanged snippet")
        src = os.path.join(ROOT, m["file"])
        if not os.path.exists(src):
            die(f"{path}:{m['line']}: {m['id']}: no file {m['file']}")
        count = open(src).read().count(m["orig"])
        if count != 1:
            die(f"{path}:{m['line']}: {m['id']}: the snippet occurs {count} times in {m['file']} (must be once)")
    return muts


def sync_tree():
    """Copy the tracked files of the working tree into the scratch tree, touching only those
    that differ (the scratch tree's build/ stays valid between runs)."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    h = hashlib.sha256()
    for rel in sorted(f for f in files if f):
        src, dst = os.path.join(ROOT, rel), os.path.join(TREE, rel)
        if not os.path.isfile(src):
            continue
        data = open(src, "rb").read()
        # what a verdict depends on: the design, the checks and their build (not this script)
        if rel.startswith(("rtl/", "verif/", "host/", "scripts/run-tests.sh", "Makefile")):
            h.update(rel.encode() + b"\0" + data)
        if os.path.exists(dst) and open(dst, "rb").read() == data:
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst)
    return h.hexdigest()[:16]


def make(args, log):
    with open(log, "w") as f:
        r = subprocess.run(["make", "--no-print-directory", "-C", TREE, "BUILD=build", "JOBS=2"]
                           + args, stdout=f, stderr=subprocess.STDOUT,
                           env={k: v for k, v in os.environ.items()
                                if not k.startswith(("MAKE", "MFLAGS", "BUILD"))})
    return r.returncode == 0


def rtl_entries():
    r = subprocess.run(["make", "-s", "--no-print-directory", "-C", TREE, "BUILD=build",
                        "mutate-entries"], capture_output=True, text=True)
    if r.returncode != 0:
        die("make mutate-entries failed in the scratch tree:\n" + r.stdout + r.stderr)
    ents = [e for e in r.stdout.split() if e.startswith(RTL_PREFIXES)]
    if not ents:
        die("no RTL entries in TEST_ENTRIES")
    return ents


def name_of(entry):
    return os.path.basename(entry.split("@", 1)[0])


class Runner:
    def __init__(self, timeout):
        self.timeout = timeout

    def build(self, entry, log):
        prog = entry.split("@", 1)[0]
        if entry == FORMAL or not prog.startswith("build/"):
            return True
        return make([prog], log)

    def reads(self, entry, rel):
        """False only when the check provably does not read the RTL file rel: its program is
        built and `make -q` finds it up to date even with rel considered new (-W), or it is
        the formal script and rel is none of its sources. Unknown (not built yet): True."""
        if entry == FORMAL:
            return os.path.basename(rel) in open(os.path.join(TREE, "verif/formal/mesh_formal.sh")).read()
        prog = entry.split("@", 1)[0]
        if not prog.startswith("build/"):
            return True
        q = ["make", "-q", "--no-print-directory", "-C", TREE, "BUILD=build"]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS", "BUILD"))}
        if subprocess.run(q + [prog], env=env, capture_output=True).returncode != 0:
            return True
        return subprocess.run(q + ["-W", rel, prog], env=env, capture_output=True).returncode != 0

    def run(self, entry, log):
        """True iff the check passes (run-tests.sh semantics: exit status, RESULT lines,
        cmocka counts; a timeout fails)."""
        t0 = time.time()
        if entry == FORMAL:
            ok = make(["formal"], log)
        else:
            with open(log, "w") as f:
                r = subprocess.run(["./scripts/run-tests.sh", os.path.join(LOGS, "run"), entry],
                                   cwd=TREE, stdout=f, stderr=subprocess.STDOUT,
                                   env=dict(os.environ, TEST_TIMEOUT=str(self.timeout)))
            ok = r.returncode == 0
        return ok, time.time() - t0


def write_report(results, meta):
    done = [r for r in results if r["verdict"] in ("killed", "survived", "survived own checks",
                                                    "did not build")]
    killed = [r for r in done if r["verdict"] == "killed"]
    surv = [r for r in done if r["verdict"].startswith("survived")]
    dnb = [r for r in done if r["verdict"] == "did not build"]
    judged = len(killed) + len(surv)
    rate = 100.0 * len(killed) / judged if judged else 0.0
    summary = {"mutations": meta["total"], "run": len(done), "killed": len(killed),
               "survived": len(surv), "did_not_build": len(dnb),
               "kill_rate_percent": round(rate, 1), "seed": meta["seed"],
               "tree_hash": meta["hash"], "seconds": round(time.time() - meta["t0"]),
               "not_run": [r["id"] for r in results if r["verdict"] == "not run"]}
    with open(os.path.join(OUT, "report.json"), "w") as f:
        json.dump({"summary": summary, "mutants": results}, f, indent=1)
    lines = ["# Mutation testing report", "",
             f"Seed {meta['seed']}, sources {meta['hash']}. {summary['mutations']} mutations, "
             f"{summary['run']} run: {len(killed)} killed, {len(surv)} survived, "
             f"{len(dnb)} did not build. Kill rate {rate:.1f} % (killed / (killed + survived)).",
             "", "| id | file | verdict | check | time |", "|---|---|---|---|---|"]
    for r in results:
        if r["verdict"] == "not run":
            continue
        lines.append(f"| {r['id']} | {r['file']} | {r['verdict']} | {r.get('by', '')} | "
                     f"{r.get('seconds', 0):.0f} s |")
    if surv:
        lines += ["", "## Survivors", ""]
        for r in surv:
            lines.append(f"- `{r['id']}` ({r['file']}): {r['desc']}; passed "
                         f"{', '.join(r['passed'])}")
    if summary["not_run"]:
        lines += ["", "Not run (budget or selection): " + ", ".join(summary["not_run"])]
    with open(os.path.join(OUT, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return summary


def main():
    seed = int(os.environ.get("MUTATE_SEED", "1"))
    only = [s for s in os.environ.get("MUTATE_ONLY", "").split(",") if s]
    if os.environ.get("MUTATE_JOBS", "1") != "1":
        die("MUTATE_JOBS: only 1 is supported (one scratch tree; builds use -j2)")
    budget = float(os.environ.get("MUTATE_BUDGET", "0"))
    timeout = int(os.environ.get("MUTATE_TIMEOUT", "900"))
    rest = os.environ.get("MUTATE_REST", "1") != "0"
    formal = os.environ.get("MUTATE_FORMAL", "1") != "0"

    muts = parse(MUTS)
    if only:
        unknown = set(only) - {m["id"] for m in muts}
        if unknown:
            die("MUTATE_ONLY: unknown ids " + ", ".join(sorted(unknown)))
    sel = [m for m in muts if not only or m["id"] in only]
    rng = random.Random(seed)
    rng.shuffle(sel)
    sel.sort(key=lambda m: m["cost"])  # stable: seeded order within a cost class

    os.makedirs(LOGS, exist_ok=True)
    t0 = time.time()
    thash = sync_tree()
    entries = rtl_entries()
    by_name = {}
    for e in entries:
        by_name.setdefault(name_of(e), []).append(e)
    for m in muts:
        for c in m["checks"]:
            if c not in by_name:
                die(f"mutations.txt:{m['line']}: {m['id']}: no RTL entry of make test named {c}")
    base_path = os.path.join(OUT, "baseline.json")
    baseline = {}
    if os.path.exists(base_path):
        b = json.load(open(base_path))
        if b.get("hash") == thash:
            baseline = b["checks"]
    runner = Runner(timeout)

    def baseline_ok(entry):
        if entry not in baseline:
            log = os.path.join(LOGS, "baseline-" + name_of(entry) + ".log")
            ok = runner.build(entry, log) and runner.run(entry, log)[0]
            baseline[entry] = ok
            json.dump({"hash": thash, "checks": baseline}, open(base_path, "w"), indent=1)
            print(f"  baseline {name_of(entry)}: {'pass' if ok else 'FAIL (not used)'}", flush=True)
        return baseline[entry]

    meta = {"total": len(muts), "seed": seed, "hash": thash, "t0": t0}
    results = [{"id": m["id"], "file": m["file"], "desc": m["desc"], "verdict": "not run"}
               for m in sel]
    rep_path = os.path.join(OUT, "report.json")
    if os.environ.get("MUTATE_RESUME", "0") != "0" and os.path.exists(rep_path):
        old = json.load(open(rep_path))
        if old["summary"].get("tree_hash") == thash:
            prev = {r["id"]: r for r in old["mutants"] if r["verdict"] != "not run"}
            for r in results:
                if r["id"] in prev and not (rest and prev[r["id"]]["verdict"] == "survived own checks"):
                    r.update(prev[r["id"]], resumed=True)
            print(f"mutate: resuming, {sum(1 for r in results if r.get('resumed'))} verdicts "
                  f"kept from {rep_path}")
    write_report(results, meta)
    for idx, m in enumerate(sel):
        res = results[idx]
        if res.get("resumed"):
            continue
        if budget and time.time() - t0 > budget:
            print(f"mutate: budget of {budget:.0f} s reached; {len(sel) - idx} mutants not run")
            break
        tm = time.time()
        path = os.path.join(TREE, m["file"])
        pristine = open(path).read()
        mutated = pristine.replace(m["orig"], m["repl"], 1)
        own = [e for c in m["checks"] for e in by_name[c]]
        order = own + ([e for e in entries if e not in own and name_of(e) != "mesh_formal.sh"]
                       + ([FORMAL] if formal else []) if rest else [])
        print(f"[{idx + 1}/{len(sel)}] {m['id']} ({m['file']}): {m['desc']}", flush=True)
        verdict, by, passed = None, "", []
        try:
            for i, entry in enumerate(order):
                if i == len(own) and not rest:
                    break
                nm = name_of(entry) if entry != FORMAL else "formal"
                if i >= len(own) and not runner.reads(entry, m["file"]):
                    continue  # built without the mutated file: it cannot see the mutant
                log = os.path.join(LOGS, f"{m['id']}.{nm}.log")
                open(path, "w").write(mutated)
                if not runner.build(entry, log):
                    verdict, by = "did not build", nm
                    break
                ok, secs = runner.run(entry, log)
                if ok:
                    passed.append(nm)
                    continue
                open(path, "w").write(pristine)
                if baseline_ok(entry):
                    verdict, by = "killed", nm
                    break
                print(f"  {nm} fails unmutated too: not counted", flush=True)
            if verdict is None:
                verdict = "survived" if rest else "survived own checks"
        finally:
            open(path, "w").write(pristine)
        res.update(verdict=verdict, by=by, passed=passed, seconds=time.time() - tm)
        print(f"  -> {verdict}{' by ' + by if by else ''} ({res['seconds']:.0f} s)", flush=True)
        write_report(results, meta)
    s = write_report(results, meta)
    print(f"mutate: {s['run']} of {s['mutations']} run: {s['killed']} killed, {s['survived']} "
          f"survived, {s['did_not_build']} did not build; kill rate {s['kill_rate_percent']} % "
          f"({OUT}/report.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
