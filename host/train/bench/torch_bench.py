#!/usr/bin/env python3
"""torch_bench.py - the benchmark model of configs/bench-dense.yaml in PyTorch, for a
side-by-side number with `train_bench`: 4 layers, 256 channels, 4 heads, context 128,
batch 4, byte vocabulary, tied LM head, AdamW (weight decay on matrices), grad clip 1.0.
ms/step, median of 12 steps after 3, in three setups, each in its own process (OpenBLAS
reads its thread count at load): 1 torch thread on 1 OpenBLAS thread, 2 torch threads, and
1 torch thread on 2 OpenBLAS threads (PyTorch's fastest CPU setup on these machines).
Random bytes as data (the step time does not depend on them). Skips with a message when
torch is not installed.

usage: torch_bench.py OUT.json
       torch_bench.py --one TORCH_THREADS   (one setup; prints its JSON line)
"""
import json
import math
import os
import statistics
import sys
import time

from bench_util import cpu_name


SETUPS = [(1, 1), (2, 1), (1, 2)]  # (torch threads, OpenBLAS threads)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        return run_one(int(sys.argv[2]))
    out = sys.argv[1] if len(sys.argv) > 1 else "train_torch.json"
    try:
        import torch
    except ImportError:
        print("torch_bench: PyTorch is not installed here; skipped (pip or apt "
              "python3-torch would add it)")
        with open(out, "w") as f:
            json.dump({"skipped": "torch not installed"}, f)
        return 0
    import subprocess
    results = []
    for tt, bt in SETUPS:
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(bt), OMP_NUM_THREADS=str(tt))
        r = subprocess.run([sys.executable, __file__, "--one", str(tt)], env=env,
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"torch_bench: setup {tt}/{bt} failed: {r.stderr.strip()[-300:]}")
            return 1
        res = json.loads(r.stdout.strip().splitlines()[-1])
        res["openblas_threads"] = bt
        results.append(res)
    cpu = cpu_name()
    print(f"\nPyTorch {torch.__version__}, same model, CPU: {cpu} "
          f"(OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')})")
    print(f"{'setup':<40} {'ms/step':>10} {'min ms':>10}")
    for r in results:
        name = f"pytorch, {r['threads']} torch + {r['openblas_threads']} OpenBLAS thread(s)"
        print(f"{name:<40} {r['ms_per_step']:10.1f} {r['ms_min']:10.1f}")
    with open(out, "w") as f:
        json.dump({"torch": torch.__version__, "cpu": cpu, "cases": results}, f, indent=1)
    print(f"wrote {out}")
    return 0


def run_one(threads):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    L, C, NH, T, B, V = 4, 256, 4, 128, 4, 256

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(C)
            self.qkv = nn.Linear(C, 3 * C)
            self.proj = nn.Linear(C, C)
            self.ln_2 = nn.LayerNorm(C)
            self.fc = nn.Linear(C, 4 * C)
            self.fc_proj = nn.Linear(4 * C, C)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln_1(x)).split(C, dim=2)
            q = q.view(b, t, NH, c // NH).transpose(1, 2)
            k = k.view(b, t, NH, c // NH).transpose(1, 2)
            v = v.view(b, t, NH, c // NH).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // NH))
            mask = torch.ones(t, t, dtype=torch.bool).tril()
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
            x = x + self.proj(y)
            return x + self.fc_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, C)
            self.wpe = nn.Embedding(T, C)
            self.h = nn.ModuleList([Block() for _ in range(L)])
            self.ln_f = nn.LayerNorm(C)

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
            for blk in self.h:
                x = blk(x)
            logits = self.ln_f(x) @ self.wte.weight.t()
            return F.cross_entropy(logits.view(-1, V), targets.view(-1))

    torch.manual_seed(1234)
    torch.set_num_threads(threads)
    model = GPT()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    nodecay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": nodecay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    x = torch.randint(0, V, (B, T))
    y = torch.randint(0, V, (B, T))
    ms = []
    for i in range(15):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if i >= 3:
            ms.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({"threads": threads, "ms_per_step": statistics.median(ms),
                      "ms_min": min(ms)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
