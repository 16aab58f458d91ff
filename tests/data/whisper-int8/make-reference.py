#!/usr/bin/env python3
"""Makes the reference for rayo's reading of CTranslate2 int8 Whisper folders.

From the real tiny.en folder (scripts/fetch-models.sh), CTranslate2's own
quantizer (ctranslate2.specs WhisperSpec.optimize("int8"), what
`ct2-transformers-converter --quantization int8` runs) writes an int8 folder.
Written next to this script:
  ct2-int8-variables.txt   every quantized variable of that folder and its
                           scale: name, dtype, shape, and the FNV-1a 64 hash of
                           its bytes, which the WhisperInt8Folder test compares
                           with the folder rayo's test support writes (so the
                           test runs on the bytes CTranslate2 writes)
  faster-whisper.json      faster-whisper's greedy texts of the shared clips
                           on that folder (language en, no timestamps,
                           temperature 0, no previous text, 2 CPU threads)
Rerun (faster-whisper is a yardstick here, never a dependency of rayo):
  python3 -m venv /tmp/fw && /tmp/fw/bin/pip install faster-whisper
  /tmp/fw/bin/python tests/data/whisper-int8/make-reference.py .cache/models/whisper-tiny.en ../shared/whisper/audio
"""
import json
import os
import shutil
import struct
import sys
import tempfile

import ctranslate2
import faster_whisper
import numpy as np
from ctranslate2.specs import whisper_spec

DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}
NAMES = {0: "float32", 1: "int8", 2: "int16", 3: "int32", 4: "float16"}


def read_model_bin(path):
    """model.bin's variables: name -> (dtype code, shape, bytes)."""
    data = open(path, "rb").read()
    at = 0

    def take(fmt):
        nonlocal at
        value = struct.unpack_from(fmt, data, at)
        at += struct.calcsize(fmt)
        return value[0]

    def string():
        nonlocal at
        n = take("<H")
        s = data[at : at + n - 1].decode()
        at += n
        return s

    take("<I"), string(), take("<I")
    variables = {}
    for _ in range(take("<I")):
        name = string()
        shape = [take("<I") for _ in range(take("<B"))]
        dtype = take("<B")
        n = take("<I")
        variables[name] = (dtype, shape, data[at : at + n])
        at += n
    return variables


def fnv1a64(b):
    h = 0xCBF29CE484222325
    for byte in b:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def set_variable(spec, parts, value):
    head = parts[0]
    if len(parts) == 1:
        setattr(spec, head, value)
    elif not hasattr(spec, head) and head.rsplit("_", 1)[-1].isdigit():
        base, index = head.rsplit("_", 1)
        set_variable(getattr(spec, base)[int(index)], parts[1:], value)
    else:
        set_variable(getattr(spec, head), parts[1:], value)


def int8_folder(source, out):
    variables = read_model_bin(os.path.join(source, "model.bin"))
    layers = lambda stack: sum(1 for k in variables if k.startswith(stack + "/layer_") and k.endswith("ffn/linear_0/weight"))
    heads = int(np.frombuffer(variables["encoder/num_heads"][2], dtype=np.int16)[0])
    spec = whisper_spec.WhisperSpec(layers("encoder"), heads, layers("decoder"), heads)
    for name, (dtype, shape, raw) in variables.items():
        if shape:
            set_variable(spec, name.split("/"), np.frombuffer(raw, dtype=DTYPES[dtype]).reshape(shape).copy())
    spec.decoder.projection.weight = spec.decoder.embeddings.weight
    config = json.load(open(os.path.join(source, "config.json")))
    for key in ("suppress_ids", "suppress_ids_begin", "lang_ids", "alignment_heads"):
        setattr(spec.config, key, config[key])
    tokens = open(os.path.join(source, "vocabulary.txt"), encoding="utf-8").read().split("\n")
    spec.register_vocabulary(tokens[:-1] if tokens[-1] == "" else tokens)
    spec.validate()
    spec.optimize(quantization="int8")
    spec.save(out)
    shutil.copy(os.path.join(source, "tokenizer.json"), out)  # faster-whisper's tokenizer


def main():
    source, audio = sys.argv[1], sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as out:
        int8_folder(source, out)
        written = read_model_bin(os.path.join(out, "model.bin"))
        with open(os.path.join(here, "ct2-int8-variables.txt"), "w") as f:
            f.write(f"# CTranslate2 {ctranslate2.__version__}, WhisperSpec.optimize('int8') of the real tiny.en\n")
            f.write("# name dtype shape fnv1a64-of-bytes\n")
            for name in sorted(written):
                dtype, shape, raw = written[name]
                if dtype == 1 and shape or name.endswith("_scale"):
                    f.write(f"{name} {NAMES[dtype]} {'x'.join(map(str, shape))} {fnv1a64(raw):016x}\n")
        model = faster_whisper.WhisperModel(out, device="cpu", compute_type="default", cpu_threads=2)
        texts = {}
        for clip in sorted(os.listdir(audio)):
            if clip.endswith(".wav"):
                segments, _ = model.transcribe(os.path.join(audio, clip), language="en", beam_size=1,
                                               without_timestamps=True, temperature=0,
                                               condition_on_previous_text=False, vad_filter=False)
                texts[clip[:-4]] = "".join(s.text for s in segments).strip()
    settings = {"faster_whisper": faster_whisper.__version__, "ctranslate2": ctranslate2.__version__,
                "model": "tiny.en quantized to int8 by CTranslate2", "compute_type": "default (int8 as stored)",
                "beam_size": 1, "without_timestamps": True, "temperature": 0, "condition_on_previous_text": False}
    with open(os.path.join(here, "faster-whisper.json"), "w") as f:
        json.dump({"settings": settings, "texts": texts}, f, indent=2, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
