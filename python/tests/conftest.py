"""Shared fixtures of the Python package's tests: where the test models are.

Models come from $RAYO_SHARED (default ../shared beside the source tree) and,
for the real chat model, from the set-up's model cache ($RAYO_MODEL_CACHE or
.cache/models/); a test that needs an absent model skips and says which.
"""

import json
import os
from pathlib import Path

import pytest

SOURCE_ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("RAYO_SHARED", SOURCE_ROOT.parent / "shared"))
MODEL_CACHE = Path(os.environ.get("RAYO_MODEL_CACHE", SOURCE_ROOT / ".cache" / "models"))
SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"


def shared_file(relative: str) -> Path:
    path = SHARED / relative
    if not path.is_file():
        pytest.skip(f"shared test data absent: {path} (set RAYO_SHARED)")
    return path


def shared_model(name: str) -> str:
    return str(shared_file(f"models/{name}"))


def reference(name: str) -> dict:
    """llama.cpp's reference outputs for a shared model (reference/NAME.json)."""
    with open(shared_file(f"reference/{name}.json")) as f:
        return json.load(f)


def smollm2_model() -> str:
    path = MODEL_CACHE / SMOLLM2
    if not path.is_file():
        pytest.skip(f"the real chat model is absent: {path} (scripts/fetch-models.sh fetches it)")
    return str(path)


@pytest.fixture(scope="module")
def stories():
    """stories260K with two threads, shared by the tests of a module."""
    import rayo

    with rayo.Llama(shared_model("stories260K.gguf"), n_ctx=256, n_threads=2, device="cpu", seed=7) as llm:
        yield llm
