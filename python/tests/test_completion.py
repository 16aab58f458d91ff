"""Completions: greedy tokens as `rayo run` and llama.cpp give them, streams
that concatenate to the whole answer, llama-cpp-python's result fields."""

import json
import os
import subprocess
from pathlib import Path

import pytest
import rayo

from conftest import SOURCE_ROOT, reference, shared_model

COMPLETION_KEYS = {"id", "object", "created", "model", "choices", "usage"}
CHOICE_KEYS = {"text", "index", "logprobs", "finish_reason"}
USAGE_KEYS = {"prompt_tokens", "completion_tokens", "total_tokens"}


def steps_before_near_tie(case, tolerance):
    """Greedy steps two engines must agree on: those before the first decision
    where llama.cpp's own top-1/top-2 margin is at most `tolerance` (the C++
    parity tests' rule, tests/support/reference.cpp)."""
    n = 0
    while n < len(case["greedy"]):
        top = (case["prompt_logits"][-1] if n == 0 else case["greedy_logits"][n - 1])["top"]
        if len(top) >= 2 and top[0][1] - top[1][1] <= tolerance:
            break
        n += 1
    return n


@pytest.mark.parametrize("model,tolerance", [("stories260K", 0.05), ("tinystories-656k-q8_0", 0.3),
                                             ("synth-qwen2-q8_0", 0.3)])
def test_greedy_completion_gives_llama_cpp_tokens(model, tolerance):
    # Up to llama.cpp's first near-tie (tolerance: the C++ parity tests' for a
    # float or a quantized model), the package's greedy text is llama.cpp's.
    ref = reference(model)
    with rayo.Llama(shared_model(f"{model}.gguf"), n_ctx=256, n_threads=2, device="cpu") as llm:
        for case in ref["cases"][:2]:
            expected = case["greedy"][:min(16, steps_before_near_tie(case, tolerance))]
            out = llm.create_completion(case["prompt"], max_tokens=16, temperature=0)
            choice = out["choices"][0]
            # The continuation's text as it follows the prompt (SentencePiece drops a text's leading space).
            prompt_text = llm.detokenize(case["tokens"])
            continuation = llm.detokenize(case["tokens"] + expected)[len(prompt_text):]
            assert choice["text"].startswith(continuation.decode("utf-8", errors="ignore"))
            assert out["usage"]["prompt_tokens"] == len(case["tokens"])
            if len(case["greedy"]) >= 16:
                assert choice["finish_reason"] == "length"
                assert out["usage"]["completion_tokens"] == 16


def rayo_binary():
    path = Path(os.environ.get("RAYO_BIN", SOURCE_ROOT / "build" / "rayo"))
    if not path.is_file():
        pytest.skip(f"no rayo binary at {path} (set RAYO_BIN or build with scripts/build.sh)")
    return str(path)


@pytest.mark.parametrize("model", ["stories260K", "tinystories-656k-q8_0", "synth-qwen2-q8_0"])
def test_greedy_completion_equals_rayo_run(model):
    path = shared_model(f"{model}.gguf")
    prompt = "Lily and Tom went to the park."
    run = subprocess.run([rayo_binary(), "run", "-m", path, "-p", prompt, "-n", "16", "--temp", "0", "-t", "2",
                          "--device", "cpu", "--json"], check=True, capture_output=True, text=True)
    expected = json.loads(run.stdout)
    with rayo.Llama(path, n_threads=2, device="cpu") as llm:
        out = llm(prompt, max_tokens=16, temperature=0)
        assert out["choices"][0]["text"] == expected["text"]


def test_result_has_llama_cpp_python_fields(stories):
    out = stories("Once upon a time", max_tokens=4, temperature=0)
    assert set(out) == COMPLETION_KEYS
    assert out["object"] == "text_completion" and out["id"].startswith("cmpl-")
    assert isinstance(out["created"], int) and out["model"] == stories.model_path
    assert len(out["choices"]) == 1 and set(out["choices"][0]) == CHOICE_KEYS
    assert out["choices"][0]["index"] == 0 and out["choices"][0]["logprobs"] is None
    assert set(out["usage"]) == USAGE_KEYS
    u = out["usage"]
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"]


@pytest.mark.parametrize("sampling", [{"temperature": 0}, {"temperature": 0.9, "top_k": 0, "seed": 42},
                                      {"temperature": 0.7, "repeat_penalty": 1.3, "seed": 5}])
def test_streamed_chunks_concatenate_to_the_answer(stories, sampling):
    whole = stories.create_completion("Once upon a time", max_tokens=40, **sampling)
    chunks = list(stories.create_completion("Once upon a time", max_tokens=40, stream=True, **sampling))
    assert len(chunks) > 2
    for c in chunks:
        assert set(c) == COMPLETION_KEYS - {"usage"}
        assert set(c["choices"][0]) == CHOICE_KEYS
        assert c["object"] == "text_completion" and c["id"] == chunks[0]["id"]
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
    assert "".join(c["choices"][0]["text"] for c in chunks) == whole["choices"][0]["text"]


def test_stop_strings_and_seeds(stories):
    full = stories("Once upon a time", max_tokens=24, temperature=0)["choices"][0]["text"]
    word = full.split()[3]
    cut = stories("Once upon a time", max_tokens=24, temperature=0, stop=[word])["choices"][0]
    assert cut["finish_reason"] == "stop" and cut["text"] == full[: full.index(word)]
    a = stories("Once upon a time", max_tokens=24, temperature=1.0, seed=3)["choices"][0]["text"]
    b = stories("Once upon a time", max_tokens=24, temperature=1.0, seed=3)["choices"][0]["text"]
    assert a == b


def test_leaving_a_stream_early_stops_it_and_the_model_stays_usable(stories):
    greedy = stories("Once upon a time", max_tokens=16, temperature=0)
    for i, _ in enumerate(stories("Once upon a time", max_tokens=0, stream=True)):
        if i == 3:
            break
    unstarted = stories("Once upon a time", max_tokens=100, stream=True)  # never iterated
    del unstarted
    again = stories("Once upon a time", max_tokens=16, temperature=0)
    assert again["choices"] == greedy["choices"]


def test_tokenize_detokenize_and_model_facts(stories):
    ids = stories.tokenize(b"Once upon a time")
    assert ids[0] == stories.token_bos() and ids == stories.tokenize("Once upon a time")
    assert stories.tokenize("Once upon a time", add_special=False) == ids[1:]
    assert stories.tokenize(b"Once", add_bos=False) == stories.tokenize("Once", False)
    assert stories.detokenize(ids[1:]) == b"Once upon a time"
    assert stories.n_ctx() == 256 and stories.n_vocab() == 512
    assert stories.metadata["general.architecture"] == "llama"
    assert stories.device == "cpu"


def test_logprobs_are_llama_cpps(stories):
    # The log-softmax of llama.cpp's logits after each greedy step (lse and top logits in the reference).
    case = reference("stories260K")["cases"][0]
    out = stories(case["prompt"], max_tokens=8, temperature=0, logprobs=3)
    scores = out["choices"][0]["logprobs"]
    assert set(scores) == {"tokens", "text_offset", "token_logprobs", "top_logprobs"}
    assert "".join(scores["tokens"]) == out["choices"][0]["text"]
    assert scores["text_offset"][0] == len(case["prompt"])
    # The distribution of greedy token i: after the prompt, then after greedy token i - 1.
    steps = [case["prompt_logits"][-1]] + case["greedy_logits"]
    for i, step in enumerate(steps[:8]):
        best_id, best_logit = step["top"][0]
        assert abs(scores["token_logprobs"][i] - (best_logit - step["lse"])) < 1e-3
        top = scores["top_logprobs"][i]
        assert len(top) in (3, 4) and scores["tokens"][i] in top
        assert max(top.values()) == scores["token_logprobs"][i]
    # Asking for them changes no token, greedy or sampled.
    for sampling in ({"temperature": 0}, {"temperature": 0.9, "seed": 11}):
        plain = stories("Once upon a time", max_tokens=20, **sampling)["choices"][0]
        scored = stories("Once upon a time", max_tokens=20, logprobs=0, **sampling)["choices"][0]
        assert scored["text"] == plain["text"] and plain["logprobs"] is None
        assert all(len(t) == 1 for t in scored["logprobs"]["top_logprobs"])


def test_chat_logprobs_have_openais_shape(stories):
    messages = [{"role": "user", "content": "Hi"}]
    out = stories.create_chat_completion(messages, max_tokens=6, temperature=0, logprobs=True, top_logprobs=2)
    scores = out["choices"][0]["logprobs"]
    assert set(scores) == {"content", "refusal"} and len(scores["content"]) == out["usage"]["completion_tokens"]
    entry = scores["content"][0]
    assert set(entry) == {"token", "bytes", "logprob", "top_logprobs"} and entry["logprob"] <= 0
    assert set(entry["top_logprobs"][0]) == {"token", "logprob", "bytes"}
    assert "".join(e["token"] for e in scores["content"]) == out["choices"][0]["message"]["content"]
    assert stories.create_chat_completion(messages, max_tokens=2, logprobs=True)["choices"][0]["logprobs"] is None
