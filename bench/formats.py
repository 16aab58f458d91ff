#!/usr/bin/env python3
"""rayo's speed on every weight format, beside llama.cpp's when it is at hand.

Makes each format at each shape with `rayo synth` (once, into --models), then
runs `rayo bench` and, when $LLAMA_BENCH names llama-bench, llama-bench on the
same file, interleaved: round after round, one run of each, so that both see
the same moment of a shared machine. Prints a markdown table of prompt (pp) and
generation (tg) tokens/s, medians over the rounds, and the medians of the
per-round ratios.

  bench/formats.py                                  # every format, two shapes
  LLAMA_BENCH=/path/llama-bench bench/formats.py --rounds 5
  bench/formats.py --types q4_0,iq4_xs --presets qwen2.5-0.5b -p 128 -n 32

Environment: RAYO (the rayo binary, default build/rayo), LLAMA_BENCH.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

TYPES = ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k_m", "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m",
         "q6_k", "iq4_nl", "iq4_xs", "f16", "bf16"]
PRESETS = ["tinyllama-1.1b", "qwen2.5-0.5b"]


def run_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    return json.loads(r.stdout)


def speeds(results):
    """(pp tokens/s, tg tokens/s) from llama-bench-shaped JSON."""
    pp = next(x["avg_ts"] for x in results if x["n_prompt"] > 0 and x["n_gen"] == 0)
    tg = next(x["avg_ts"] for x in results if x["n_gen"] > 0 and x["n_prompt"] == 0)
    return pp, tg


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--types", default=",".join(TYPES), help="comma-separated synth types")
    ap.add_argument("--presets", default=",".join(PRESETS), help="comma-separated synth presets")
    ap.add_argument("--models", default="bench-models", help="folder for the synthetic models (reused)")
    ap.add_argument("-p", type=int, default=64, help="prompt tokens (pp)")
    ap.add_argument("-n", type=int, default=16, help="generated tokens (tg)")
    ap.add_argument("-t", type=int, default=2, help="threads")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds per file")
    args = ap.parse_args()

    rayo = os.environ.get("RAYO", "build/rayo")
    llama = os.environ.get("LLAMA_BENCH")
    if not os.access(rayo, os.X_OK):
        sys.exit(f"formats.py: error: no rayo binary at {rayo} (set RAYO)")
    if llama and not os.access(llama, os.X_OK):
        sys.exit(f"formats.py: error: LLAMA_BENCH={llama} is not an executable")
    os.makedirs(args.models, exist_ok=True)
    common = ["-p", str(args.p), "-n", str(args.n), "-t", str(args.t), "-r", "1"]

    header = "| file | rayo pp | rayo tg |"
    rule = "|---|---:|---:|"
    if llama:
        header = "| file | rayo pp | llama.cpp pp | ratio | rayo tg | llama.cpp tg | ratio |"
        rule = "|---|---:|---:|---:|---:|---:|---:|"
    print(f"pp{args.p} / tg{args.n}, {args.t} threads, medians of {args.rounds} interleaved rounds\n")
    print(header)
    print(rule, flush=True)
    for preset in args.presets.split(","):
        for t in args.types.split(","):
            path = os.path.join(args.models, f"{preset}-{t}.gguf")
            if not os.path.exists(path):
                r = subprocess.run([rayo, "synth", "--preset", preset, "--type", t, "-o", path + ".part"],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"formats.py: error: rayo synth {preset} {t}: {r.stderr.strip()}")
                os.replace(path + ".part", path)
            rows = {"rayo": [], "llama": []}
            try:
                for _ in range(args.rounds):
                    rows["rayo"].append(speeds(run_json([rayo, "bench", "-m", path, "--json"] + common)))
                    if llama:
                        rows["llama"].append(speeds(run_json([llama, "-m", path, "-o", "json"] + common)))
            except RuntimeError as e:
                print(f"| {preset} {t} | {e} |", flush=True)
                continue
            med = lambda xs: statistics.median(xs)
            rpp, rtg = med([x[0] for x in rows["rayo"]]), med([x[1] for x in rows["rayo"]])
            name = f"{preset} {t}"
            if not llama:
                print(f"| {name} | {rpp:.1f} | {rtg:.2f} |", flush=True)
                continue
            lpp, ltg = med([x[0] for x in rows["llama"]]), med([x[1] for x in rows["llama"]])
            ppr = med([a[0] / b[0] for a, b in zip(rows["rayo"], rows["llama"])])
            tgr = med([a[1] / b[1] for a, b in zip(rows["rayo"], rows["llama"])])
            print(f"| {name} | {rpp:.1f} | {lpp:.1f} | **{ppr:.2f}x** | {rtg:.2f} | {ltg:.2f} | **{tgr:.2f}x** |",
                  flush=True)


if __name__ == "__main__":
    main()
