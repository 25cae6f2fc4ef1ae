#!/usr/bin/env python3
"""torch_gpt2.py - reads a `cshost export --format safetensors` file in PyTorch, as a user
would, and generates greedily from a prompt with GPT-2's forward pass written against the
Hugging Face names and layouts (Conv1D: x @ W + b; tied LM head). tests/interop/
safetensors_torch.sh compares its text with `cshost sample --temperature 0`.
Needs only torch (the safetensors header is JSON; the tensors are raw little-endian).

usage: torch_gpt2.py FILE.safetensors PROMPT TOKENS   (byte-level models)
"""
import json
import math
import struct
import sys

import torch


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    sd = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        dt = {"F32": torch.float32, "U8": torch.uint8}[e["dtype"]]
        sd[name] = torch.frombuffer(bytearray(data[b:end]), dtype=dt).reshape(e["shape"])
    return sd, meta


def forward(sd, meta, idx):
    L, H = int(meta["n_layer"]), int(meta["n_head"])
    T = idx.shape[0]
    g = lambda k: sd["transformer." + k]
    x = g("wte.weight")[idx] + g("wpe.weight")[:T]
    ln = lambda x, p: torch.nn.functional.layer_norm(x, x.shape[-1:], g(p + ".weight"),
                                                     g(p + ".bias"), 1e-5)
    C = x.shape[-1]
    for i in range(L):
        p = "h.%d." % i
        q, k, v = (ln(x, p + "ln_1") @ g(p + "attn.c_attn.weight") +
                   g(p + "attn.c_attn.bias")).split(C, dim=-1)
        q, k, v = (t.view(T, H, C // H).transpose(0, 1) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // H)
        att = att.masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf")).softmax(-1)
        y = (att @ v).transpose(0, 1).reshape(T, C)
        x = x + y @ g(p + "attn.c_proj.weight") + g(p + "attn.c_proj.bias")
        h = ln(x, p + "ln_2") @ g(p + "mlp.c_fc.weight") + g(p + "mlp.c_fc.bias")
        h = torch.nn.functional.gelu(h, approximate="tanh")
        x = x + h @ g(p + "mlp.c_proj.weight") + g(p + "mlp.c_proj.bias")
    return ln(x, "ln_f") @ g("wte.weight").T


def main():
    sd, meta = load(sys.argv[1])
    ctx = list(sys.argv[2].encode())
    n, T = int(sys.argv[3]), int(meta["n_positions"])
    out = []
    with torch.no_grad():
        for _ in range(n):
            logits = forward(sd, meta, torch.tensor(ctx[-T:]))
            ctx.append(int(logits[-1].argmax()))
            out.append(ctx[-1])
    sys.stdout.buffer.write(bytes(out))


if __name__ == "__main__":
    main()
