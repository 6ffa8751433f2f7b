#!/usr/bin/env python3
"""Draws the benchmark figures of docs/performance.md from the JSON files the
benchmarks write:

  tops-bench --json F           (tool "tops-bench"; --suite cpu|cuda|all)
  compare_torch.py --json F     (tool "compare_torch"; tops vs PyTorch on the GPU)
  tops-gemm-bench --json F      (tool "tops-gemm-bench"; CPU GEMM vs OpenBLAS)
  scripts/gpu-check.sh OUT      (OUT/gpu-check.json holds tops-bench and compare_torch)

Each input is recognized by its content; every figure whose data is present
is drawn (SVG by default, --format png for bitmaps) into --out:

  <prefix>-attention.svg       attention TFLOP/s vs sequence length: tops and
                               PyTorch's SDPA backends (FlashAttention-2, cuDNN,
                               memory-efficient), one panel per head dim x causal
  <prefix>-memory-bound.svg    memory-bound ops as % of the copy ceiling measured
                               in the same run (GPU: tops and PyTorch; CPU: tops
                               and oneDNN at each thread count)
  <prefix>-gemm.svg            GPU GEMM TFLOP/s, tops vs torch.matmul (cuBLAS)
  <prefix>-conv2d.svg          GPU conv2d TFLOP/s, tops vs F.conv2d (cuDNN)
  cpu-attention.svg            CPU attention GFLOP/s vs sequence length (tops-bench CPU data)
  <prefix>-gemm-openblas.svg   CPU GEMM GFLOP/s vs size: tops, OpenBLAS, FMA peak

The prefix is "gpu" for GPU data and "cpu" for CPU data unless --prefix is
given. Nothing is averaged or smoothed: each point is the median the JSON
holds.

usage: plot.py FILE.json [FILE.json ...] [--out docs/figures] [--format svg[,png]] [--prefix NAME]
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"tops": "#d62728", "sdpa-flash2": "#1f77b4", "sdpa-cudnn": "#2ca02c", "sdpa-efficient": "#9467bd",
          "torch": "#1f77b4", "oneDNN": "#1f77b4", "OpenBLAS": "#1f77b4", "peak": "#7f7f7f"}
MARKERS = {"tops": "o", "sdpa-flash2": "s", "sdpa-cudnn": "^", "sdpa-efficient": "v"}


# ------------------------------------------------------------------ inputs
def classify(doc):
    """Returns a list of (kind, document): kind in tops-bench, compare_torch, gemm-bench."""
    if "steps" in doc:  # gpu-check.json
        out = []
        if doc.get("tops-bench"):
            out.append(("tops-bench", doc["tops-bench"]))
        if doc.get("compare_torch"):
            out.append(("compare_torch", doc["compare_torch"]))
        return out
    tool = doc.get("tool")
    if tool == "tops-bench":
        return [("tops-bench", doc)]
    if tool == "tops-gemm-bench":
        return [("gemm-bench", doc)]
    if tool == "compare_torch" or ("copy_gbs" in doc and "results" in doc):
        return [("compare_torch", doc)]
    raise ValueError("not a tops benchmark JSON (no tool key, no gpu-check steps)")


def shape_str(shape):
    return "x".join(str(s) for s in shape)


def save(fig, out, name, formats):
    os.makedirs(out, exist_ok=True)
    for fmt in formats:
        path = os.path.join(out, "%s.%s" % (name, fmt))
        meta = {"Date": None} if fmt == "svg" else {}
        fig.savefig(path, format=fmt, dpi=150, bbox_inches="tight", metadata=meta)
        print("wrote", path)
    plt.close(fig)


# ------------------------------------------------------------------ GPU: attention vs PyTorch
def plot_attention_gpu(ct, out, prefix, formats):
    rows = [r for r in ct["results"] if r.get("family") == "attention" and "seq" in r]
    if not rows:
        return False
    dtypes = sorted({r["dtype"] for r in rows}, reverse=True)  # float16 first
    cols = sorted({(r["head_dim"], r["causal"]) for r in rows})
    fig, axes = plt.subplots(len(dtypes), len(cols), figsize=(4.2 * len(cols), 3.4 * len(dtypes)), squeeze=False,
                             sharey=True, constrained_layout=True)
    panels = [(i, j, dt, d, causal) for i, dt in enumerate(dtypes) for j, (d, causal) in enumerate(cols)]
    for i, j, dt, d, causal in panels:
        ax = axes[i][j]
        sel = sorted((r for r in rows if (r["dtype"], r["head_dim"], r["causal"]) == (dt, d, causal)),
                     key=lambda r: r["seq"])
        if not sel:
            ax.set_visible(False)
            continue
        seqs = [r["seq"] for r in sel]
        ax.plot(seqs, [r["tops_tflops"] for r in sel], marker="o", color=COLORS["tops"], label="tops", lw=2)
        names = [n for n in sel[0]["baseline_tflops"]]
        for n in names:
            pts = [(r["seq"], r["baseline_tflops"].get(n)) for r in sel if r["baseline_tflops"].get(n)]
            if pts:
                ax.plot(*zip(*pts), marker=MARKERS.get(n, "x"), color=COLORS.get(n), label=n, lw=1.2)
        ax.set_xscale("log", base=2)
        ax.set_xticks(seqs)
        ax.set_xticklabels([("%dk" % (s // 1024)) if s >= 1024 else str(s) for s in seqs])
        ax.set_title("%s, head dim %d%s" % (dt, d, ", causal" if causal else ""), fontsize=10)
        if i == len(dtypes) - 1:
            ax.set_xlabel("sequence length (batch x seq = %d tokens)" % (sel[0]["batch"] * sel[0]["seq"]))
        ax.grid(alpha=0.3)
    for row in axes:
        row[0].set_ylabel("TFLOP/s (4 B H S^2 D, /2 causal)")
    axes[0][0].set_ylim(bottom=0)
    axes[0][0].legend(fontsize=8, loc="upper left")
    fig.suptitle("Attention forward on %s (torch %s)" % (ct.get("device", "GPU"), ct.get("torch", "?")), fontsize=11)
    save(fig, out, prefix + "-attention", formats)
    return True


# ------------------------------------------------------------------ memory-bound as % of copy
def barh_groups(ax, labels, series, xlabel, ref_line=True):
    """Horizontal grouped bars: series = [(name, values, color)], one group per label."""
    n = len(series)
    h = 0.8 / n
    for k, (name, vals, color) in enumerate(series):
        ys = [i + (k - (n - 1) / 2) * h for i in range(len(labels))]
        xs = [v if v is not None else 0 for v in vals]
        ax.barh(ys, xs, height=h, color=color, label=name)
        for y, v in zip(ys, vals):
            ax.text((v or 0) + 1, y, "%.0f" % v if v is not None else "n/a", va="center", fontsize=6)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    if ref_line:  # 100% of the ceiling
        ax.axvline(100, color="k", lw=0.8, ls="--")
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))


def plot_memory_gpu(ct, out, prefix, formats):
    rows = [r for r in ct["results"] if r.get("kind", "memory") == "memory" and "tops_pct_copy" in r]
    if not rows:
        return False
    labels = [r["case"] for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(rows) + 1.5))
    barh_groups(ax, labels, [("tops", [r["tops_pct_copy"] for r in rows], COLORS["tops"]),
                             ("PyTorch eager", [r.get("torch_pct_copy") for r in rows], COLORS["torch"])],
                "%% of the device-to-device copy bandwidth (%.0f GB/s, same run)" % ct["copy_gbs"])
    ax.set_title("Memory-bound ops on %s: bytes moved per second as %% of copy" % ct.get("device", "GPU"),
                 fontsize=10)
    save(fig, out, prefix + "-memory-bound", formats)
    return True


def ceiling_gbs(tb, backend, threads):
    for c in tb.get("ceilings", []):
        if c.get("backend", tb.get("backend")) == backend and c["threads"] == threads and c["primary"]:
            return c["gbs"]
    return None


def plot_memory_tops_bench(tb, backend, out, prefix, formats):
    """One panel per thread count: tops (and oneDNN where it has the op) as % of that count's copy ceiling."""
    rows = [r for r in tb["results"] if r.get("backend", tb.get("backend")) == backend
            and r.get("kind", "memory") == "memory" and r["tops"].get("ok")]
    if not rows:
        return False

    def key(r):  # the axes / permutation tell apart cases of one op and shape
        opt = r.get("options", "").split()
        extra = " " + opt[0] if opt and opt[0].startswith(("axes=", "perm=")) else ""
        return "%s %s %s%s" % (r["op"], r["dtype"], shape_str(r["shape"]), extra)
    cases = list(dict.fromkeys(key(r) for r in rows))
    threads = sorted({r["threads"] for r in rows})
    fig, axes = plt.subplots(1, len(threads), figsize=(5.2 * len(threads), 0.45 * len(cases) + 1.6),
                             squeeze=False, sharey=True)
    for ax, t in zip(axes[0], threads):
        ceil = ceiling_gbs(tb, backend, t)
        by_case = {key(r): r for r in rows if r["threads"] == t}
        tops = [100 * by_case[c]["tops"]["gbs"] / ceil if c in by_case and ceil else None for c in cases]
        base = [100 * by_case[c]["onednn"]["gbs"] / ceil if c in by_case and ceil and by_case[c]["onednn"].get("ok")
                else None for c in cases]
        series = [("tops", tops, COLORS["tops"])]
        if any(v is not None for v in base):
            series.append(("oneDNN", base, COLORS["oneDNN"]))
        barh_groups(ax, cases, series, "% of copy (read + written bytes)")
        share = [by_case[c]["tops"].get("cpu_share") for c in cases if c in by_case]
        share = [v for v in share if isinstance(v, (int, float)) and v == v]
        title = "%d thread%s: copy %.1f GB/s" % (t, "s" if t > 1 else "", ceil or 0) if backend == "cpu" \
            else "copy %.0f GB/s" % (ceil or 0)
        if share:
            title += ", cpu share %.0f-%.0f%%" % (100 * min(share), 100 * max(share))
        ax.set_title(title, fontsize=9)
        if ax is not axes[0][-1]:
            ax.get_legend().remove()
    m = tb["machine"]
    where = m["device"]
    if backend == "cpu":
        load = m["load_average_at_start"].split()[0]
        where = "%s, %d cpus, load average %s at start" % (m["cpu_model"], m["logical_cpus"], load)
    fig.suptitle("Memory-bound ops, %s backend (%s)" % (backend, where), fontsize=10)
    save(fig, out, prefix + "-memory-bound", formats)
    return True


# ------------------------------------------------------------------ GEMM
def plot_compute_gpu(ct, family, out, prefix, formats):
    """Horizontal bars of TFLOP/s per case: tops and every PyTorch baseline the family ran (gemm, conv2d)."""
    rows = [r for r in ct["results"] if r.get("family") == family and r.get("tops_tflops")]
    if not rows:
        return False
    names = list(dict.fromkeys(n for r in rows for n in r.get("baseline_tflops", {})))
    palette = ["#1f77b4", "#aec7e8", "#2ca02c", "#9467bd"]
    series = [("tops", [r["tops_tflops"] for r in rows], COLORS["tops"])]
    series += [(n, [r["baseline_tflops"].get(n) for r in rows], palette[k % len(palette)]) for k, n in enumerate(names)]
    labels = [r["case"].replace(family + " ", "", 1) for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.22 * len(rows) * len(series) + 1.5))
    barh_groups(ax, labels, series, "TFLOP/s (%s)" % ("2 M N K" if family == "gemm" else "2 N K P Q C R S"),
                ref_line=False)
    ax.set_title("%s on %s: tops vs PyTorch (torch %s)" % (family, ct.get("device", "GPU"), ct.get("torch", "?")),
                 fontsize=10)
    save(fig, out, "%s-%s" % (prefix, family), formats)
    return True


def plot_gemm_openblas(gb, out, prefix, formats):
    rows = gb["results"]
    if not rows:
        return False
    threads = sorted({r["threads"] for r in rows})
    fig, axes = plt.subplots(1, len(threads), figsize=(4.5 * len(threads), 3.8), squeeze=False)
    for ax, t in zip(axes[0], threads):
        sel = sorted((r for r in rows if r["threads"] == t), key=lambda r: r["n"])
        ns = [r["n"] for r in sel]
        ax.plot(ns, [r["tops_gflops"] for r in sel], marker="o", color=COLORS["tops"], lw=2, label="tops (median)")
        ax.plot(ns, [r["openblas_gflops"] for r in sel], marker="s", color=COLORS["OpenBLAS"], lw=1.5,
                label="OpenBLAS (median)")
        ax.fill_between(ns, [r["tops_gflops"] for r in sel], [r["tops_best_gflops"] for r in sel],
                        color=COLORS["tops"], alpha=0.12, label="tops median..best")
        ax.plot(ns, [r["peak_gflops"] for r in sel], ls="--", color=COLORS["peak"], label="FMA peak (measured)")
        for r in sel:
            ax.annotate("%.2fx" % r["ratio"], (r["n"], r["tops_gflops"]), textcoords="offset points",
                        xytext=(0, -12), ha="center", fontsize=7)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns)
        ax.set_xticklabels([str(n) for n in ns])
        ax.set_ylim(bottom=0)
        ax.set_xlabel("M = N = K (f32, row-major NN)")
        ax.set_title("%d thread%s" % (t, "s" if t > 1 else ""), fontsize=10)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("GFLOP/s")
    axes[0][0].legend(fontsize=7, loc="lower right")
    blas = " ".join(gb.get("openblas", "OpenBLAS").split()[:2])
    fig.suptitle("CPU GEMM: tops vs %s (load average at start %s)" %
                 (blas, gb.get("load_average_at_start", "?").split()[0]), fontsize=10)
    save(fig, out, prefix + "-gemm-openblas", formats)
    return True


def plot_attention_cpu(tb, out, prefix, formats):
    rows = [r for r in tb["results"] if r.get("backend", tb.get("backend")) == "cpu"
            and r["op"].startswith("attention") and r["tops"].get("ok") and r.get("flops")]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for (op, t) in sorted({(r["op"], r["threads"]) for r in rows}):
        sel = sorted((r for r in rows if r["op"] == op and r["threads"] == t), key=lambda r: r["shape"][1])
        ax.plot([r["shape"][1] for r in sel], [1e3 * r["tops"]["tflops"] for r in sel], marker="o",
                ls="-" if op == "attention" else "--", label="%s, %d thr" % (op.replace("_", " "), t))
    gemm = [r for r in tb["results"] if r.get("backend", tb.get("backend")) == "cpu" and r["op"] == "gemm"
            and r["tops"].get("ok")]
    for t in sorted({r["threads"] for r in gemm}):
        best = max(1e3 * r["tops"]["tflops"] for r in gemm if r["threads"] == t)
        ax.axhline(best, color=COLORS["peak"], lw=0.8, ls=":")
        ax.text(ax.get_xlim()[0], best, " best tops GEMM, %d thr" % t, fontsize=6, va="bottom")
    seqs = sorted({r["shape"][1] for r in rows})
    ax.set_xscale("log", base=2)
    ax.set_xticks(seqs)
    ax.set_xticklabels([str(v) for v in seqs])
    ax.set_xlabel("sequence length (B = 1, H = 16, D = 64, f32)")
    ax.set_ylabel("GFLOP/s")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("CPU attention: %s" % tb["machine"]["cpu_model"], fontsize=9)
    save(fig, out, prefix + "-attention", formats)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", default=os.path.join(here, "..", "docs", "figures"))
    ap.add_argument("--format", default="svg", help="comma-separated: svg, png")
    ap.add_argument("--prefix", help="file name prefix (default: gpu / cpu by the data)")
    a = ap.parse_args()
    formats = a.format.split(",")
    plt.rcParams["svg.hashsalt"] = "tops"  # stable SVG ids: a rerun on the same data gives the same file
    drawn = 0
    for path in a.files:
        with open(path) as f:
            doc = json.load(f)
        for kind, d in classify(doc):
            if kind == "compare_torch":
                p = a.prefix or "gpu"
                drawn += plot_attention_gpu(d, a.out, p, formats)
                drawn += plot_memory_gpu(d, a.out, p, formats)
                drawn += plot_compute_gpu(d, "gemm", a.out, p, formats)
                drawn += plot_compute_gpu(d, "conv2d", a.out, p, formats)
            elif kind == "gemm-bench":
                drawn += plot_gemm_openblas(d, a.out, a.prefix or "cpu", formats)
            else:
                backends = sorted({r.get("backend", d.get("backend")) for r in d["results"]})
                for be in backends:
                    p = a.prefix or ("cpu" if be == "cpu" else "gpu-tops-bench")
                    drawn += plot_memory_tops_bench(d, be, a.out, p, formats)
                    if be == "cpu":
                        drawn += plot_attention_cpu(d, a.out, p, formats)
    if not drawn:
        print("no figure: the inputs hold no data the figures use", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
