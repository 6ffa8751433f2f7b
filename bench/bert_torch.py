#!/usr/bin/env python3
"""PyTorch reference of examples/bert_encoder: the same BERT encoder stack
(post-LayerNorm, GELU erf) with the same deterministic weights, inputs and
lengths, run on the padded batch (keys masked by length) in PyTorch eager and
under torch.compile; checks agreement with the tops output and prints times.

The weights come from the counter-based generator of examples/bert_model.hpp
(splitmix64 finalizer of (seed, stream, index), 24 random bits per value),
implemented here with numpy, so no weight file is exchanged. The lengths the
generator gives are compared with those tops recorded, which catches a
generator mismatch before any number is compared.

usage:
  bert_torch.py --tops-json run.json --tops-output run.f32 [--json out.json]
  bert_torch.py --layers 12 --batch 32 --seq 128 --dtype f16   (no tops comparison)
Times are medians of --iters runs timed with CUDA events (wall clock on the CPU).
"""
import argparse
import json
import math
import statistics
import sys
import time

import numpy as np

# ------------------------------------------------------------------ generator (bert_model.hpp)
STREAM_LENGTHS = 1
STREAM_INPUT = 2
WEIGHT_SCALE = np.float32(0.04)
DOWN_SCALE = np.float32(0.02)
BIAS_SCALE = np.float32(0.1)
M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def mix64(z):
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def uniform(seed, stream, n, start=0):
    """n values uniform in [-1, 1) (float32, 24 random bits), indices start..start+n-1."""
    i = np.arange(start, start + n, dtype=np.uint64)
    key = (np.uint64(seed) << np.uint64(48)) ^ (np.uint64(stream) << np.uint64(32)) ^ i
    h = mix64(key) >> np.uint64(40)
    return (h.astype(np.float64) / float(1 << 23) - 1.0).astype(np.float32)


def layer_stream(layer, k):
    return 16 + 16 * layer + k


def make_lengths(cfg):
    span = cfg["seqlen"] - cfg["min_len"] + 1
    u01 = (uniform(cfg["seed"], STREAM_LENGTHS, cfg["batch"]).astype(np.float64) + 1.0) * 0.5
    lengths = cfg["min_len"] + np.floor(u01 * float(span)).astype(np.int64)
    return np.minimum(lengths, cfg["seqlen"])


# (name, shape, kind): kind 0 matrix, 1 down matrix, 2 bias / shift, 3 LayerNorm scale.
def layer_spec(H, F):
    return [("wqkv", (3 * H, H), 0), ("bqkv", (3 * H,), 2), ("wo", (H, H), 0), ("bo", (H,), 2),
            ("ln1_g", (H,), 3), ("ln1_b", (H,), 2), ("w1", (F, H), 0), ("b1", (F,), 2),
            ("w2", (H, F), 1), ("b2", (H,), 2), ("ln2_g", (H,), 3), ("ln2_b", (H,), 2)]


def make_layer(cfg, layer):
    out = {}
    for k, (name, shape, kind) in enumerate(layer_spec(cfg["hidden"], cfg["ffn"])):
        u = uniform(cfg["seed"], layer_stream(layer, k), int(np.prod(shape)))
        if kind == 0:
            v = u * WEIGHT_SCALE
        elif kind == 1:
            v = u * DOWN_SCALE
        elif kind == 2:
            v = u * BIAS_SCALE
        else:
            v = np.float32(1.0) + u * BIAS_SCALE
        out[name] = v.reshape(shape)
    return out


def make_input(cfg):
    n = cfg["batch"] * cfg["seqlen"] * cfg["hidden"]
    return uniform(cfg["seed"], STREAM_INPUT, n).reshape(cfg["batch"], cfg["seqlen"], cfg["hidden"])


# ------------------------------------------------------------------ model
def encoder_fn(torch, F, cfg):
    H, N = cfg["hidden"], cfg["heads"]
    D = H // N
    eps = cfg["ln_eps"]

    def run(x, keep, layers):
        B, S, _ = x.shape
        for w in layers:
            qkv = F.linear(x, w["wqkv"], w["bqkv"])
            q, k, v = (t.view(B, S, N, D).transpose(1, 2) for t in qkv.split(H, dim=-1))
            ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
            ctx = ctx.transpose(1, 2).reshape(B, S, H)
            h1 = F.layer_norm(F.linear(ctx, w["wo"], w["bo"]) + x, (H,), w["ln1_g"], w["ln1_b"], eps)
            f = F.gelu(F.linear(h1, w["w1"], w["b1"]))
            x = F.layer_norm(F.linear(f, w["w2"], w["b2"]) + h1, (H,), w["ln2_g"], w["ln2_b"], eps)
        return x

    return run


def time_fn(torch, fn, iters, warmup, cuda):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        if cuda:
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def errors(out, ref, lengths, S, H):
    """max abs and relative Frobenius error over the valid tokens ([B, S, H] float64 arrays)."""
    valid = (np.arange(S)[None, :] < np.asarray(lengths)[:, None])
    o, r = out[valid], ref[valid]
    if not np.all(np.isfinite(o)):
        return {"max_abs_err": math.inf, "rel_fro_err": math.inf, "non_finite": int(np.sum(~np.isfinite(o)))}
    d = o - r
    return {"max_abs_err": float(np.max(np.abs(d))) if d.size else 0.0,
            "rel_fro_err": float(np.linalg.norm(d) / max(np.linalg.norm(r), 1e-30)), "non_finite": 0}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tops-json", help="JSON written by bert_encoder --json (configuration, lengths, times)")
    ap.add_argument("--tops-output", help="raw f32 [B, S, H] written by bert_encoder --save-output")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--min-len", type=int, default=None)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--ffn", type=int, default=3072)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dtype", default="f16", choices=["f32", "f16", "bf16"])
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--compile-mode", default="default", help="torch.compile mode (default, max-autotune, ...)")
    ap.add_argument("--tolerance", type=float, default=None,
                    help="relative Frobenius error allowed between tops and PyTorch eager "
                         "(default: 1e-2 f16, 3e-2 bf16, 1e-4 f32, as the example's own check)")
    ap.add_argument("--json", help="write results here")
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F

    tops = None
    if args.tops_json:
        with open(args.tops_json) as f:
            tops = json.load(f)
        cfg = {k: tops[k] for k in ("layers", "hidden", "heads", "ffn", "batch", "seqlen", "min_len", "seed", "ln_eps")}
        dtype_name = tops["dtype"]
    else:
        cfg = {"layers": args.layers, "hidden": args.hidden, "heads": args.heads, "ffn": args.ffn, "batch": args.batch,
               "seqlen": args.seq, "min_len": args.min_len if args.min_len is not None else max(1, args.seq // 2),
               "seed": args.seed, "ln_eps": 1e-12}
        dtype_name = args.dtype
    dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype_name]
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    cuda = device == "cuda"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    B, S, H = cfg["batch"], cfg["seqlen"], cfg["hidden"]
    result = {"config": cfg, "dtype": dtype_name, "device": torch.cuda.get_device_name() if cuda else "cpu",
              "torch": torch.__version__}
    print(f"PyTorch {torch.__version__} on {result['device']}: BERT encoder {cfg['layers']} layers, "
          f"hidden {H}, {cfg['heads']} heads, FFN {cfg['ffn']}, {dtype_name}, batch {B} x seq {S} (padded)", flush=True)

    lengths = make_lengths(cfg)
    if tops is not None and list(map(int, lengths)) != list(tops["lengths"]):
        sys.exit("bert_torch.py: the generator's lengths differ from those tops recorded: generators out of step")
    tokens = int(lengths.sum())
    x_np = make_input(cfg)
    t0 = time.perf_counter()
    layers_np = [make_layer(cfg, l) for l in range(cfg["layers"])]
    print(f"weights generated in {time.perf_counter() - t0:.1f} s; {tokens} of {B * S} tokens valid", flush=True)

    def to_dev(a, dt):
        # Round through the run dtype first (what tops stores), then to dt.
        return torch.from_numpy(np.ascontiguousarray(a)).to(device).to(dtype).to(dt)

    keep = (torch.arange(S, device=device)[None, :] < torch.from_numpy(lengths).to(device)[:, None])
    keep = keep[:, None, None, :]  # [B, 1, 1, S]: True = attend
    run = encoder_fn(torch, F, cfg)
    layers = [{k: to_dev(v, dtype) for k, v in w.items()} for w in layers_np]
    x = to_dev(x_np, dtype)

    with torch.no_grad():
        eager_out = run(x, keep, layers)
        eager_ms = time_fn(torch, lambda: run(x, keep, layers), args.iters, args.warmup, cuda)
        result["eager_ms"] = eager_ms
        print(f"eager:         {eager_ms:9.3f} ms per run (median of {args.iters})", flush=True)

        compiled_ms = None
        if not args.no_compile:
            try:
                t0 = time.perf_counter()
                crun = torch.compile(run, mode=None if args.compile_mode == "default" else args.compile_mode)
                crun(x, keep, layers)
                if cuda:
                    torch.cuda.synchronize()
                result["compile_s"] = time.perf_counter() - t0
                compiled_ms = time_fn(torch, lambda: crun(x, keep, layers), args.iters, args.warmup, cuda)
                result["compile_ms"] = compiled_ms
                print(f"torch.compile: {compiled_ms:9.3f} ms per run (median of {args.iters}; "
                      f"compiled in {result['compile_s']:.0f} s)", flush=True)
            except Exception as e:  # offline or unsupported: reported, not fatal
                result["compile_error"] = f"{type(e).__name__}: {e}"[:500]
                print(f"torch.compile unavailable: {result['compile_error']}", flush=True)

        # fp32 reference from the same dtype-rounded values (no TF32).
        ref = run(x.float(), keep, [{k: v.float() for k, v in w.items()} for w in layers])
    ref_np = ref.double().cpu().numpy()
    eager_np = eager_out.double().cpu().numpy()
    result["eager_vs_f32"] = errors(eager_np, ref_np, lengths, S, H)
    print(f"eager vs fp32: max abs err {result['eager_vs_f32']['max_abs_err']:.3g}, "
          f"rel Frobenius err {result['eager_vs_f32']['rel_fro_err']:.3g}")

    ok = True
    if tops is not None:
        tol = args.tolerance if args.tolerance is not None else {"f16": 1e-2, "bf16": 3e-2, "f32": 1e-4}[dtype_name]
        if args.tops_output:
            out = np.fromfile(args.tops_output, dtype=np.float32).astype(np.float64).reshape(B, S, H)
            pad_rows = ~(np.arange(S)[None, :] < lengths[:, None])
            result["tops_padding_nonzero"] = int(np.count_nonzero(out[pad_rows]))
            result["tops_vs_eager"] = errors(out, eager_np, lengths, S, H)
            result["tops_vs_f32"] = errors(out, ref_np, lengths, S, H)
            agree = result["tops_vs_eager"]["rel_fro_err"] <= tol and result["tops_padding_nonzero"] == 0
            result["agree"] = bool(agree)
            result["tolerance"] = tol
            ok = agree
            print(f"tops vs eager: max abs err {result['tops_vs_eager']['max_abs_err']:.3g}, rel Frobenius err "
                  f"{result['tops_vs_eager']['rel_fro_err']:.3g} (tolerance {tol:g}): {'AGREE' if agree else 'DISAGREE'}")
            print(f"tops vs fp32:  max abs err {result['tops_vs_f32']['max_abs_err']:.3g}, "
                  f"rel Frobenius err {result['tops_vs_f32']['rel_fro_err']:.3g}")
        for key in ("total_ms", "graph_ms"):
            if key in tops:
                result["tops_" + key] = tops[key]
        tops_best = min(v for v in (tops.get("total_ms"), tops.get("graph_ms")) if v is not None)
        print(f"tops:          {tops['total_ms']:9.3f} ms per run" +
              (f", graph {tops['graph_ms']:.3f} ms" if "graph_ms" in tops else ""))
        result["speedup_vs_eager"] = eager_ms / tops["total_ms"]
        print(f"speedup vs eager: {result['speedup_vs_eager']:.2f}x (stream)" +
              (f", {eager_ms / tops['graph_ms']:.2f}x (graph)" if "graph_ms" in tops else ""))
        if compiled_ms:
            result["speedup_vs_compile"] = compiled_ms / tops["total_ms"]
            print(f"speedup vs torch.compile: {result['speedup_vs_compile']:.2f}x (stream), "
                  f"{compiled_ms / tops_best:.2f}x (best tops)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
