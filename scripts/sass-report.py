#!/usr/bin/env python3
"""Machine-code report of the CUDA matmul kernels, per kernel variant.

    scripts/sass-report.py [--rayo build/rayo] [--preset llama3-8b]
                           [--types q4_k_m,q4_0,...] [--arch sm_90] [--parallel N]
                           [--gemm-tile f16|int8]

For each weight type it writes a one-layer model with the preset's widths
(`rayo synth --layers 1`), compiles every kernel variant its decode and prompt
graphs need (`rayo kernels --precompile`, into a fresh kernel cache; with
--parallel N also `rayo serve --parallel N`'s batched steps), and
disassembles each matmul variant's CUBIN with the toolkit's nvdisasm. It
prints, per variant: registers and spill bytes (ptxas), and for its hot loop
(the innermost loop with the most MMA, else DP4A instructions) the
instructions per pass, the weight bytes a thread loads per pass (streaming loads and cp.async),
instructions per weight byte, the share of DP4A and MMA instructions, and
how many weight loads are issued after the pass's first DP4A/MMA (0: every
load of the pass is in flight before the arithmetic starts; a software-pipelined
loop issues the next pass's loads among this pass's arithmetic, so there the
column shows where the last one is issued, as a share of the pass).

--gemm-tile puts the prompt GEMMs of every format on one tile
(RAYO_GEMM_TILE); the shape column shows GEMM_EXACT=1 (exact) or 2 (int8)
where a GEMM is not on the f16 tile. A GEMM's hot loop is its K loop, whose
inner loops (the stage's copies and decoding, a few iterations each) count
once.

nvdisasm comes with the CUDA toolkit ($CUDA_HOME/bin) or the pip wheel
nvidia-cuda-nvdisasm; --nvdisasm names it otherwise. No GPU is needed.
"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

MATMUL_FILES = ("gemv.cu", "gemv_swiglu.cu", "qkv_rope_store.cu", "gemm.cu", "gemm_swiglu.cu",
                "gemm_qkv_rope_store.cu")
MMA = re.compile(r"^(HMMA|IMMA|HGMMA|IGMMA)")
DOT = re.compile(r"^IDP")


def find_nvdisasm(given):
    if given:
        return given
    for d in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if d and os.access(os.path.join(d, "bin", "nvdisasm"), os.X_OK):
            return os.path.join(d, "bin", "nvdisasm")
    found = shutil.which("nvdisasm")
    if found:
        return found
    try:  # pip install nvidia-cuda-nvdisasm
        import nvidia  # noqa: F401
        for root in nvidia.__path__:
            for dirpath, _, files in os.walk(root):
                if "nvdisasm" in files:
                    return os.path.join(dirpath, "nvdisasm")
    except ImportError:
        pass
    sys.exit("sass-report.py: nvdisasm not found: install the CUDA toolkit or `pip install nvidia-cuda-nvdisasm`, "
             "or pass --nvdisasm")


def read_cache_file(path):
    """(key, ptxas log, cubin) of a kernel cache file (kernel_cache.cpp's format)."""
    data = open(path, "rb").read()
    if not data.startswith(b"RAYOKC1"):
        return None
    at = 8
    fields = []
    for _ in range(3):
        (n,) = struct.unpack_from("<Q", data, at)
        at += 8
        fields.append(data[at:at + n])
        at += n
    return fields[0].decode(), fields[1].decode(errors="replace"), fields[2]


def parse_sass(text):
    """[(address, label or None, opcode, full text)] of the instructions, labels attached to the next one."""
    out, label = [], None
    for line in text.splitlines():
        m = re.match(r"^(\.L_x_\d+):", line)
        if m:
            label = m.group(1)
            continue
        m = re.match(r"^\s+/\*([0-9a-f]+)\*/\s+(.*?);", line)
        if not m:
            continue
        body = re.sub(r"^@!?U?P\w+\s+", "", m.group(2).strip())
        op = body.split()[0] if body else ""
        out.append((int(m.group(1), 16), label, op, body))
        label = None
    return out


def load_bytes(op):
    """Bytes one thread moves with a global load or cp.async (LDG, LDGSTS), 0 for other instructions."""
    if not (op.startswith("LDG") or op.startswith("LDGSTS")):
        return 0
    for width, n in ((".128", 16), (".64", 8), (".U16", 2), (".S16", 2), (".U8", 1), (".S8", 1)):
        if width in op:
            return n
    return 4


def is_weight_load(op):
    # Weights stream with ld.global.nc.L1::no_allocate (.NA) in the GEMVs and
    # cp.async (LDGSTS) in the GEMMs; activations are plain or __ldg loads.
    return (op.startswith("LDG") and ".NA" in op) or op.startswith("LDGSTS")


def hot_loop(instrs):
    """The instructions of the innermost loop with the most MMA, or failing any MMA the most DP4A (None if
    neither): a GEMM's tokens may be staged with DP4A (activation sums) in a loop of its own."""
    labels = {lab: i for i, (_, lab, _, _) in enumerate(instrs) if lab}
    loops = []
    for i, (_, _, op, body) in enumerate(instrs):
        if op.startswith("BRA"):
            m = re.search(r"`\((\.L_x_\d+)\)", body)
            if m and m.group(1) in labels and labels[m.group(1)] <= i:
                loops.append((labels[m.group(1)], i))
    best = None
    for start, end in loops:
        if any(s > start and e < end for s, e in loops if (s, e) != (start, end) and
               sum(1 for k in range(s, e + 1) if DOT.match(instrs[k][2]) or MMA.match(instrs[k][2]))):
            continue  # an outer loop: its inner loop holds the work
        mmas = sum(1 for k in range(start, end + 1) if MMA.match(instrs[k][2]))
        dots = sum(1 for k in range(start, end + 1) if DOT.match(instrs[k][2]))
        if (mmas or dots) and (best is None or (mmas, dots) > best[0]):
            best = ((mmas, dots), start, end)
    return None if best is None else instrs[best[1]:best[2] + 1]


def describe(key):
    parts = key.split(" | ")[0].split()
    keep = [p for p in parts[1:] if p.split("=")[0] in ("WTYPE", "WTYPE2", "QTYPE", "KTYPE", "VTYPE", "COLS", "ROWS", "TT",
                                                        "GEMM_EXACT")]
    return parts[0], " ".join(keep)


def report(rayo, preset, wtype, arch, nvdisasm, work, parallel, gemm_tile):
    model = os.path.join(work, f"{preset}-{wtype}.gguf")
    subprocess.run([rayo, "synth", "--preset", preset, "--type", wtype, "--layers", "1", "--vocab", "4096", "-o", model],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cache = os.path.join(work, f"cache-{wtype}")
    subprocess.run([rayo, "kernels", "--precompile", "--arch", arch, "-m", model] +
                   (["--parallel", str(parallel)] if parallel else []), check=True,
                   env=dict(os.environ, XDG_CACHE_HOME=cache, **({"RAYO_GEMM_TILE": gemm_tile} if gemm_tile else {})),
                   stdout=subprocess.DEVNULL)
    os.remove(model)
    kdir = os.path.join(cache, "rayo", "kernels")
    rows = []
    for name in sorted(os.listdir(kdir)):
        entry = read_cache_file(os.path.join(kdir, name))
        if not entry:
            continue
        key, log, cubin = entry
        file, shape = describe(key)
        if file not in MATMUL_FILES:
            continue
        regs = re.search(r"Used (\d+) registers", log)
        spill = sum(int(x) for x in re.findall(r"(\d+) bytes spill (?:stores|loads)", log))
        path = os.path.join(work, name + ".cubin")
        open(path, "wb").write(cubin)
        sass = subprocess.run([nvdisasm, "-c", path], check=True, capture_output=True, text=True).stdout
        loop = hot_loop(parse_sass(sass))
        if loop is None:
            rows.append((file, shape, regs.group(1) if regs else "?", spill, "-", "-", "-", "-", "-"))
            continue
        ops = [op for _, _, op, _ in loop]
        n = len(ops)
        wbytes = sum(load_bytes(op) for op in ops if is_weight_load(op))
        dots = sum(1 for op in ops if DOT.match(op))
        mmas = sum(1 for op in ops if MMA.match(op))
        first_work = next(i for i, op in enumerate(ops) if DOT.match(op) or MMA.match(op))
        late = sum(1 for op in ops[first_work:] if is_weight_load(op))
        last = max(i for i, op in enumerate(ops) if is_weight_load(op)) if wbytes else 0
        rows.append((file, shape, regs.group(1) if regs else "?", spill, n, wbytes,
                     f"{n / wbytes:.2f}" if wbytes else "-", f"{100 * (dots + mmas) / n:.0f}% ({dots} DP4A, {mmas} MMA)",
                     "all before" if late == 0 else f"{late} after (last at {100 * last // n}%)"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rayo", default="build/rayo")
    ap.add_argument("--preset", default="llama3-8b")
    ap.add_argument("--types", default="q4_k_m,q4_0,q8_0,q6_k")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--nvdisasm", default="")
    ap.add_argument("--parallel", type=int, default=0, help="also rayo serve --parallel N's step graphs")
    ap.add_argument("--gemm-tile", choices=("f16", "int8"), default="",
                    help="every format's prompt GEMMs on this tile (default: the formats' own choice)")
    a = ap.parse_args()
    nvdisasm = find_nvdisasm(a.nvdisasm)
    print(f"# {a.preset} kernels for {a.arch} (hot loop: the innermost loop with the most MMA, else DP4A; "
          "bytes and instructions per thread and pass)\n")
    print("| type | kernel | shape | regs | spill B | instr/pass | weight B/pass | instr/weight B | DP4A+MMA share "
          "| weight loads after the first DP4A/MMA |")
    print("|---|---|---|---:|---:|---:|---:|---:|---|---|")
    with tempfile.TemporaryDirectory() as work:
        for wtype in a.types.split(","):
            for r in report(a.rayo, a.preset, wtype, a.arch, nvdisasm, work, a.parallel, a.gemm_tile):
                print("| " + " | ".join(str(x) for x in (wtype,) + r) + " |")


if __name__ == "__main__":
    main()
