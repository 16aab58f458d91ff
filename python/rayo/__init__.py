"""rayo: run GGUF language models from Python with llama-cpp-python's high-level API.

    import rayo
    llm = rayo.Llama("model.gguf", n_ctx=2048)
    print(llm("The capital of France is", max_tokens=16)["choices"][0]["text"])

``rayo.Llama`` binds rayo's C++ library (include/rayo/llm.h); see its docstrings.
"""

from ._core import __version__
from .llama import LLAMA_DEFAULT_SEED, Llama

__all__ = ["Llama", "LLAMA_DEFAULT_SEED", "__version__"]
