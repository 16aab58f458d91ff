"""rayo: run GGUF language models with llama-cpp-python's high-level API, and
Whisper speech to text with faster-whisper's.

    import rayo
    llm = rayo.Llama("model.gguf", n_ctx=2048)
    print(llm("The capital of France is", max_tokens=16)["choices"][0]["text"])

    segments, info = rayo.Whisper("whisper-tiny.en").transcribe("clip.wav")

``rayo.Llama`` and ``rayo.Whisper`` bind rayo's C++ library
(include/rayo/llm.h, include/rayo/whisper.h); see their docstrings.
"""

from ._core import __version__
from .llama import LLAMA_DEFAULT_SEED, Llama
from .whisper import Segment, TranscriptionInfo, Whisper, WhisperModel

__all__ = ["Llama", "LLAMA_DEFAULT_SEED", "Whisper", "WhisperModel", "Segment", "TranscriptionInfo", "__version__"]
