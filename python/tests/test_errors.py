"""Bad input of every kind raises a Python exception -- ValueError or TypeError
for bad arguments, FileNotFoundError for a missing file, RuntimeError with the
library's one-line message for what it rejects -- never a crash, and the model
stays usable afterwards."""

import pytest
import rayo

from conftest import shared_model


def test_bad_model_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        rayo.Llama(str(tmp_path / "missing.gguf"))
    with pytest.raises(FileNotFoundError):
        rayo.Llama(str(tmp_path))  # a folder
    not_gguf = tmp_path / "notes.gguf"
    not_gguf.write_text("this is not a GGUF file\n" * 10)
    with pytest.raises(RuntimeError) as e:
        rayo.Llama(str(not_gguf))
    assert "\n" not in str(e.value) and str(e.value)
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    with pytest.raises(RuntimeError):
        rayo.Llama(str(empty))
    data = open(shared_model("stories260K.gguf"), "rb").read()
    for size in (4, 24, 1000, len(data) // 2):
        cut = tmp_path / f"cut{size}.gguf"
        cut.write_bytes(data[:size])
        with pytest.raises(RuntimeError):
            rayo.Llama(str(cut))


@pytest.mark.parametrize("kwargs,error", [
    ({"n_ctx": -1}, ValueError), ({"n_ctx": "big"}, TypeError), ({"n_ctx": 1.5}, TypeError),
    ({"n_batch": 0}, ValueError), ({"n_threads": -2}, ValueError), ({"device": "tpu"}, ValueError),
    ({"device": 1}, ValueError), ({"seed": 2**40}, ValueError), ({"seed": "x"}, TypeError),
    ({"verbose": "no"}, TypeError), ({"no_such_option": 1}, TypeError),
    ({"chat_format": "chatml"}, NotImplementedError), ({"embedding": True}, NotImplementedError),
])
def test_bad_load_options(kwargs, error):
    with pytest.raises(error):
        rayo.Llama(shared_model("stories260K.gguf"), **kwargs)


def test_bad_model_path_types():
    for path in (None, 123, b"model.gguf", ["a"]):
        with pytest.raises(TypeError):
            rayo.Llama(path)


@pytest.mark.parametrize("kwargs,error", [
    ({"prompt": None}, TypeError), ({"prompt": 12}, TypeError), ({"prompt": b"bytes"}, TypeError),
    ({"prompt": "bad \ud800 surrogate"}, ValueError),
    ({"max_tokens": -1}, ValueError), ({"max_tokens": -100}, ValueError), ({"max_tokens": "5"}, TypeError),
    ({"max_tokens": 2.5}, TypeError), ({"temperature": float("nan")}, ValueError), ({"temperature": "hot"}, TypeError),
    ({"top_p": 1.5}, ValueError), ({"top_p": -0.1}, ValueError), ({"min_p": 2}, ValueError),
    ({"repeat_penalty": 0}, ValueError), ({"repeat_penalty": float("inf")}, ValueError),
    ({"presence_penalty": float("nan")}, ValueError), ({"top_k": 1.0}, TypeError), ({"top_k": 2**40}, ValueError),
    ({"stop": [""]}, ValueError), ({"stop": 5}, TypeError), ({"stop": [5]}, TypeError),
    ({"stop": ["\udfff"]}, ValueError), ({"seed": -5}, ValueError), ({"seed": 1.5}, TypeError),
    ({"stream": "yes"}, TypeError), ({"logprobs": 21}, ValueError),
    ({"logprobs": -1}, ValueError), ({"logprobs": "2"}, TypeError), ({"logprobs": 2, "stream": True}, NotImplementedError), ({"grammar": "root ::= x"}, NotImplementedError),
    ({"mirostat_mode": 2}, NotImplementedError), ({"echo": True}, NotImplementedError),
    ({"no_such_option": 1}, TypeError),
])
def test_bad_completion_arguments(stories, kwargs, error):
    args = {"prompt": "Once upon a time", "max_tokens": 4, **kwargs}
    with pytest.raises(error):
        out = stories.create_completion(**args)
        list(out) if not isinstance(out, dict) else None
    assert stories("Once upon a time", max_tokens=4, temperature=0)["usage"]["completion_tokens"] == 4


def test_prompt_longer_than_the_context(stories):
    with pytest.raises(RuntimeError, match="n_ctx") as e:
        stories("Once upon a time " * 200, max_tokens=4)
    assert "\n" not in str(e.value)
    with pytest.raises(RuntimeError):
        list(stories("Once upon a time " * 200, max_tokens=4, stream=True))
    assert stories("Once upon a time", max_tokens=4)["usage"]["completion_tokens"] == 4


@pytest.mark.parametrize("messages,error", [
    ("hello", TypeError), (None, TypeError), ([], ValueError), ([1], TypeError), ([{"content": "x"}], ValueError),
    ([{"role": "", "content": "x"}], ValueError), ([{"role": "user", "content": 5}], TypeError),
    ([{"role": "user", "content": "\ud800"}], ValueError), ([{"role": "user", "content": [{"type": "image_url"}]}], ValueError),
])
def test_bad_chat_messages(stories, messages, error):
    with pytest.raises(error):
        stories.create_chat_completion(messages, max_tokens=4)
    with pytest.raises(error):
        list(stories.create_chat_completion(messages, max_tokens=4, stream=True))


def test_bad_tokens(stories):
    assert isinstance(stories.tokenize(b"\xff\xfe not UTF-8 \xc3"), list)  # bytes need not be UTF-8
    for text in (None, 5, ["a"]):
        with pytest.raises(TypeError):
            stories.tokenize(text)
    with pytest.raises(ValueError):
        stories.tokenize("\ud800")
    for tokens in ([-1], [stories.n_vocab()], [10**6]):
        with pytest.raises(ValueError):
            stories.detokenize(tokens)
    for tokens in (["a"], [1.5], 5, "abc", [2**40]):
        with pytest.raises((TypeError, ValueError)):
            stories.detokenize(tokens)


def test_a_closed_model_raises_value_error():
    llm = rayo.Llama(shared_model("stories260K.gguf"), n_ctx=128, n_threads=2, device="cpu")
    llm.close()
    llm.close()
    for call in (lambda: llm("Once", max_tokens=2), lambda: llm.tokenize(b"x"), llm.n_ctx,
                 lambda: llm.create_chat_completion([{"role": "user", "content": "hi"}])):
        with pytest.raises(ValueError, match="closed"):
            call()
