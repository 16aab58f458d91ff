#!/usr/bin/env python3
"""rayo transcribe beside faster-whisper on the same model folder and clip.

Times whole transcriptions (load excluded for faster-whisper, whose model is
built once; rayo's times include loading, which is part of what a user waits
for) in interleaved rounds, so that both see the same moments of a shared
machine, and prints the median seconds, the real-time factors and the median of
the per-round ratios. faster-whisper is optional: without it, rayo's figures
alone. Both run on the CPU with the same threads, language and decoding
options (greedy or beam search, timestamps on, faster-whisper's defaults
otherwise).

  bench/whisper.py -m .cache/models/whisper-tiny.en ../shared/whisper/audio/long.wav
  bench/whisper.py -m MODEL CLIP --beam-size 5 --compute-type int8 --rounds 5
  # rayo on a whisper.cpp file made from the folder (rayo convert --type q8_0),
  # faster-whisper on the folder:
  bench/whisper.py -m MODEL --rayo-model ggml-model-q8_0.bin CLIP --compute-type int8

Environment: RAYO (the rayo binary, default build/rayo).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def rayo_seconds(args, clip, *extra):
    cmd = [os.environ.get("RAYO", "build/rayo"), "transcribe", "-m", args.rayo_model or args.model, "-t", str(args.threads),
           "--language", "en", "--beam-size", str(args.beam_size), "--compute-type", args.compute_type, *extra, clip]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"rayo failed: {r.stderr.strip()}")
    return seconds, r.stdout.strip()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-m", "--model", required=True, help="CTranslate2 Whisper folder")
    p.add_argument("--rayo-model", help="the model rayo runs, when not the folder (a whisper.cpp ggml file)")
    p.add_argument("clip", help="audio file")
    p.add_argument("-t", "--threads", type=int, default=2)
    p.add_argument("--beam-size", type=int, default=1)
    p.add_argument("--compute-type", default="int8", help="int8 or default (faster-whisper: int8 or float32)")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()

    # A first rayo run (warm-up: the file cache) says how long the clip is.
    duration = json.loads(rayo_seconds(args, args.clip, "--output-format", "verbose_json")[1])["duration"]
    try:
        from faster_whisper import WhisperModel
        fw_type = "int8" if args.compute_type == "int8" else "float32"
        fw = WhisperModel(args.model, device="cpu", compute_type=fw_type, cpu_threads=args.threads)
        list(fw.transcribe(args.clip, language="en", beam_size=args.beam_size)[0])  # warm-up
    except ImportError:
        fw = None
        print("faster-whisper is not installed: rayo alone", file=sys.stderr)

    rayo_times, fw_times, ratios = [], [], []
    for _ in range(args.rounds):
        seconds, text = rayo_seconds(args, args.clip)
        rayo_times.append(seconds)
        if fw:
            t0 = time.perf_counter()
            segments, _ = fw.transcribe(args.clip, language="en", beam_size=args.beam_size)
            fw_text = "".join(s.text for s in segments).strip()
            fw_times.append(time.perf_counter() - t0)
            ratios.append(fw_times[-1] / seconds)

    print(f"clip: {args.clip} ({duration:.1f} s), {args.threads} threads, beam {args.beam_size}, "
          f"{args.compute_type}, {args.rounds} rounds (medians)"
          + (f"; rayo on {args.rayo_model}" if args.rayo_model else "") + "\n")
    print("| engine | seconds | real time |")
    print("|---|---:|---:|")
    r = statistics.median(rayo_times)
    print(f"| rayo (load included) | {r:.2f} | {duration / r:.1f}x |")
    if fw:
        f = statistics.median(fw_times)
        print(f"| faster-whisper (model loaded) | {f:.2f} | {duration / f:.1f}x |")
        print(f"\nrayo speed-up (faster-whisper seconds / rayo seconds, median of rounds): "
              f"{statistics.median(ratios):.2f}x")
        print(f"same text: {'yes' if text == fw_text else 'no'}")
        if text != fw_text:
            print(f"  rayo:           {text}\n  faster-whisper: {fw_text}")


if __name__ == "__main__":
    main()
