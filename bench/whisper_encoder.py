#!/usr/bin/env python3
"""One 30-s window through the Whisper encoder: rayo beside faster-whisper.

For model sizes whose whole transcriptions cannot be compared (a random-weight
folder from `rayo synth --whisper large-v3` decodes noise), the encoder alone:
per round, `rayo bench`'s encoder milliseconds (a process of its own, load not
counted) and faster-whisper's `WhisperModel.encode` of the same window's
log-mel (model loaded once), interleaved, so that both see the same moments of
a shared machine. Prints the medians and the median of the per-round ratios.

  rayo synth --whisper large-v3 -o /tmp/large-v3
  cp .cache/models/whisper-tiny.en/tokenizer.json /tmp/large-v3/  # faster-whisper wants one
  bench/whisper_encoder.py -m /tmp/large-v3 --compute-type int8 --rounds 3

faster-whisper reads any tokenizer.json for this (the encoder does not use
it); without faster-whisper installed, rayo's figures alone.

Environment: RAYO (the rayo binary, default build/rayo).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time


def rayo_encoder_ms(args):
    cmd = [os.environ.get("RAYO", "build/rayo"), "bench", "-m", args.model, "-t", str(args.threads),
           "--compute-type", args.compute_type, "-r", "1", "-n", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"rayo failed: {r.stderr.strip()}")
    m = re.search(r"encoder / 30 s window\s*\|\s*([0-9.]+)", r.stdout)
    if not m:
        sys.exit(f"no encoder figure in rayo bench's output:\n{r.stdout}")
    return float(m.group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-m", "--model", required=True, help="CTranslate2 Whisper folder")
    p.add_argument("-t", "--threads", type=int, default=2)
    p.add_argument("--compute-type", default="int8", help="int8 or default (faster-whisper: int8 or float32)")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()

    try:
        import numpy as np
        from faster_whisper import WhisperModel
        from faster_whisper.feature_extractor import FeatureExtractor
        fw_type = "int8" if args.compute_type == "int8" else "float32"
        fw = WhisperModel(args.model, device="cpu", compute_type=fw_type, cpu_threads=args.threads)
        # A window of speech-like noise: the encoder's time does not depend on the sound.
        audio = np.random.default_rng(0).normal(0, 0.1, 16000 * 30).astype(np.float32)
        features = FeatureExtractor(feature_size=fw.model.n_mels)(audio)[:, :3000]
        fw.encode(features)  # warm-up
    except ImportError:
        fw = None
        print("faster-whisper is not installed: rayo alone", file=sys.stderr)

    rayo_ms, fw_ms, ratios = [], [], []
    for _ in range(args.rounds):
        rayo_ms.append(rayo_encoder_ms(args))
        if fw:
            t0 = time.perf_counter()
            fw.encode(features)
            fw_ms.append(1000 * (time.perf_counter() - t0))
            ratios.append(fw_ms[-1] / rayo_ms[-1])

    print(f"model: {args.model}, {args.threads} threads, {args.compute_type}, {args.rounds} rounds (medians)\n")
    print("| engine | encoder ms / 30-s window |")
    print("|---|---:|")
    print(f"| rayo | {statistics.median(rayo_ms):.0f} |")
    if fw:
        print(f"| faster-whisper | {statistics.median(fw_ms):.0f} |")
        print(f"\nrayo speed-up (faster-whisper ms / rayo ms, median of rounds): {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
