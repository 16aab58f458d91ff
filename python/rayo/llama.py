"""rayo.Llama: llama-cpp-python's high-level ``Llama`` API over rayo's C++ library.

The names, parameters, defaults and result dictionaries are llama-cpp-python's,
so code written for it runs with only the import changed. The C++ side
(``rayo._core``, python/src/bindings.cpp) runs each generation with the GIL
released and stops it on Ctrl-C; this module checks the arguments (a
``ValueError`` or ``TypeError`` before anything reaches C++) and shapes the
results. The library's own failures arrive as ``RuntimeError`` carrying its
one-line message.
"""

from __future__ import annotations

import math
import os
import time
import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from . import _core

#: The seed that asks for a fresh random one (llama.cpp's LLAMA_DEFAULT_SEED).
LLAMA_DEFAULT_SEED = 0xFFFFFFFF

Completion = Dict[str, Any]
CompletionChunk = Dict[str, Any]
ChatCompletion = Dict[str, Any]
ChatCompletionChunk = Dict[str, Any]
ChatMessage = Dict[str, Any]

# Constructor options of llama-cpp-python that have no meaning here (layer
# offload, memory mapping, ...): accepted so that its code runs, and ignored.
_IGNORED_LLAMA_OPTIONS = frozenset(
    {
        "n_gpu_layers", "split_mode", "main_gpu", "tensor_split", "use_mmap", "use_mlock",
        "kv_overrides", "n_ubatch", "n_threads_batch", "rope_scaling_type", "pooling_type", "rope_freq_base",
        "rope_freq_scale", "yarn_ext_factor", "yarn_attn_factor", "yarn_beta_fast", "yarn_beta_slow",
        "yarn_orig_ctx", "logits_all", "offload_kqv", "flash_attn", "last_n_tokens_size", "numa", "type_k",
        "type_v", "spm_infill", "lora_scale",
    }
)
# Constructor options that would change what the model answers: only their
# "off" value is accepted, anything else raises NotImplementedError.
_UNSUPPORTED_LLAMA_DEFAULTS: Dict[str, Any] = {
    "chat_format": None, "chat_handler": None, "draft_model": None, "tokenizer": None, "lora_base": None,
    "lora_path": None, "embedding": False, "vocab_only": False,
}

# Sampling options of llama-cpp-python that rayo does not implement, with the
# value that means "off": any other value raises NotImplementedError rather
# than being ignored, since it would change the output.
_UNSUPPORTED_SAMPLING_DEFAULTS: Dict[str, Any] = {
    "suffix": None, "echo": False, "typical_p": 1.0, "tfs_z": 1.0, "mirostat_mode": 0, "grammar": None,
    "logit_bias": None, "logits_processor": None, "stopping_criteria": None, "functions": None,
    "function_call": None, "tools": None, "tool_choice": None,
}
# The most alternatives per token that logprobs may ask for (as rayo serve).
_MAX_LOGPROBS = 20
# Accepted with any value, and without effect (as in llama-cpp-python, where they are hints).
_IGNORED_SAMPLING_OPTIONS = frozenset({"model", "mirostat_tau", "mirostat_eta"})


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def _check_int(name: str, value: Any, minimum: Optional[int] = None, maximum: Optional[int] = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return value


def _check_float(
    name: str, value: Any, minimum: Optional[float] = None, maximum: Optional[float] = None
) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be between {minimum} and {maximum}, got {value}")
    return float(value)


def _utf8(name: str, text: Any) -> bytes:
    """Text as UTF-8 bytes; str that cannot be encoded (lone surrogates) raises UnicodeEncodeError, a ValueError."""
    if isinstance(text, str):
        return text.encode("utf-8")
    raise TypeError(f"{name} must be a str, got {type(text).__name__}")


def _check_seed(name: str, seed: Any) -> int:
    seed = _check_int(name, seed, -1, LLAMA_DEFAULT_SEED)
    return LLAMA_DEFAULT_SEED if seed == -1 else seed  # -1: random, as in llama-cpp-python


def _check_unsupported(options: Dict[str, Any]) -> None:
    for name, value in options.items():
        if name in _IGNORED_SAMPLING_OPTIONS:
            continue
        if name not in _UNSUPPORTED_SAMPLING_DEFAULTS:
            raise TypeError(f"unexpected keyword argument {name!r}")
        default = _UNSUPPORTED_SAMPLING_DEFAULTS[name]
        if value is not None and value != default:
            raise NotImplementedError(f"{name}={value!r} is not supported by rayo (leave it at {default!r})")


def _text(data: bytes) -> str:
    # As llama-cpp-python: bytes that are not UTF-8 (a model may emit any byte token) are dropped.
    return data.decode("utf-8", errors="ignore")


class Llama:
    """A GGUF model loaded for generation, with llama-cpp-python's ``Llama`` API.

    >>> llm = rayo.Llama("stories260K.gguf", n_ctx=256, seed=1)
    >>> llm("Once upon a time", max_tokens=16, temperature=0)["choices"][0]["text"]

    One call runs at a time (calls from several threads wait for each other).
    A call reuses the KV cache for the prompt tokens it shares with the
    previous call. ``close()``, or leaving a ``with`` block, frees the model's
    memory at once; otherwise it is freed when the object goes.
    """

    def __init__(
        self,
        model_path: str,
        *,
        n_ctx: int = 512,
        n_batch: int = 512,
        n_threads: Optional[int] = None,
        device: str = "auto",
        seed: int = LLAMA_DEFAULT_SEED,
        verbose: bool = False,
        **llama_cpp_options: Any,
    ) -> None:
        """Loads and checks the GGUF file at ``model_path`` and prepares the backend.

        n_ctx: context length in tokens, at most the model's training context (0: that context).
        n_batch: prompt tokens evaluated per step. n_threads: CPU threads (None: the physical cores).
        device: "auto" (CUDA when a GPU is usable, else the CPU), "cpu" or "cuda".
        seed: seeds the sampling of every call that gives no seed (-1 or LLAMA_DEFAULT_SEED: random).
        verbose: describe the backend on stderr. llama-cpp-python's options of
        placement and memory (n_gpu_layers, use_mmap, ...) are accepted and ignored;
        those that would change the answers (chat_format, lora_path, embedding, ...)
        raise NotImplementedError unless left at their defaults.

        Raises FileNotFoundError when there is no such file, ValueError/TypeError
        for a bad option, RuntimeError (the library's message) when the file
        cannot be loaded (not GGUF, an unsupported architecture, ...).
        """
        for name, value in llama_cpp_options.items():
            if name in _IGNORED_LLAMA_OPTIONS:
                continue
            if name not in _UNSUPPORTED_LLAMA_DEFAULTS:
                raise TypeError(f"unexpected keyword argument {name!r}")
            if value is not None and value != _UNSUPPORTED_LLAMA_DEFAULTS[name]:
                raise NotImplementedError(f"{name}={value!r} is not supported by rayo")
        if not isinstance(model_path, (str, os.PathLike)):
            raise TypeError(f"model_path must be a str or a path, got {type(model_path).__name__}")
        model_path = os.fspath(model_path)
        if not isinstance(model_path, str):
            raise TypeError("model_path must be a str path")
        if not os.path.isfile(model_path):
            raise FileNotFoundError(f"no such model file: {model_path!r}")
        if not isinstance(device, str) or device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {device!r}")
        options = _core.LlmOptions()
        options.n_ctx = _check_int("n_ctx", n_ctx, 0)
        options.n_batch = _check_int("n_batch", n_batch, 1)
        options.n_threads = 0 if n_threads is None else _check_int("n_threads", n_threads, 0, 4096)
        options.device = device
        options.seed = _check_seed("seed", seed)
        options.verbose = _check_bool("verbose", verbose)
        self.model_path: str = model_path
        self.verbose: bool = verbose
        self._model: Optional[_core.Model] = None
        self._model = _core.Model(model_path, options)
        #: The GGUF file's metadata: every key that is not an array, its value as text.
        self.metadata: Dict[str, str] = self._model.metadata()

    # -- lifetime ---------------------------------------------------------

    def close(self) -> None:
        """Frees the model now (a stream still open finishes first). Further calls raise ValueError."""
        if self._model is not None:
            self._model.close()

    def __enter__(self) -> "Llama":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def _loaded(self) -> _core.Model:
        if self._model is None or self._model.closed:
            raise ValueError("the model is closed")
        return self._model

    # -- vocabulary and context -------------------------------------------

    def tokenize(
        self,
        text: Union[bytes, str],
        add_special: bool = True,
        parse_special: bool = False,
        *,
        add_bos: Optional[bool] = None,
        special: Optional[bool] = None,
    ) -> List[int]:
        """The token ids of ``text``.

        add_special: the BOS/EOS tokens the vocabulary asks for (llama-cpp-python's ``add_bos``).
        parse_special: control tokens written in the text ("<|im_start|>") become their ids
        (llama-cpp-python's ``special``); otherwise they are plain text. Bytes need not be UTF-8.
        """
        if isinstance(text, str):
            data = _utf8("text", text)
        elif isinstance(text, (bytes, bytearray, memoryview)):
            data = bytes(text)
        else:
            raise TypeError(f"text must be bytes or str, got {type(text).__name__}")
        add = _check_bool("add_special", add_special if add_bos is None else add_bos)
        parse = _check_bool("parse_special", parse_special if special is None else special)
        return self._loaded().tokenize(data, add, parse)

    def detokenize(
        self, tokens: Sequence[int], prev_tokens: Optional[Sequence[int]] = None, special: bool = False
    ) -> bytes:
        """The bytes of token ids (llama-cpp-python returns bytes too); control tokens only with ``special``."""
        if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence):
            raise TypeError(f"tokens must be a sequence of ints, got {type(tokens).__name__}")
        ids = [_check_int("a token id", t) for t in tokens]
        return self._loaded().detokenize(ids, _check_bool("special", special))

    def n_ctx(self) -> int:
        """The context length in tokens."""
        return self._loaded().n_ctx()

    def n_vocab(self) -> int:
        """The vocabulary's size."""
        return self._loaded().n_vocab()

    def token_bos(self) -> int:
        """The beginning-of-sequence token id, -1 when the vocabulary has none."""
        return self._loaded().token_bos()

    def token_eos(self) -> int:
        """The end-of-sequence token id."""
        return self._loaded().token_eos()

    @property
    def device(self) -> str:
        """Where the model runs: "cpu" or "cuda"."""
        return self._loaded().device()

    # -- generation -------------------------------------------------------

    def _options(
        self,
        max_tokens: Optional[int],
        temperature: float,
        top_p: float,
        top_k: int,
        min_p: float,
        repeat_penalty: float,
        presence_penalty: float,
        frequency_penalty: float,
        stop: Optional[Union[str, List[str]]],
        seed: Optional[int],
        logprobs: Optional[int],
        stream: bool,
    ) -> _core.CompletionOptions:
        o = _core.CompletionOptions()
        if logprobs is not None:
            o.logprobs = _check_int("logprobs", logprobs, 0, _MAX_LOGPROBS)
            if stream:
                raise NotImplementedError("logprobs of a streamed completion are not supported by rayo yet")
        # None or 0: until the end of generation or a full context (llama-cpp-python's meaning).
        o.max_tokens = 0 if max_tokens is None else _check_int("max_tokens", max_tokens, 0)
        o.temperature = _check_float("temperature", temperature)
        # The library checks these ranges too (runtime::SamplingParams::validate);
        # here they raise ValueError, as bad arguments do, rather than its RuntimeError.
        o.top_p = _check_float("top_p", top_p, 0.0, 1.0)
        o.top_k = _check_int("top_k", top_k, -(2**31), 2**31 - 1)
        o.min_p = _check_float("min_p", min_p, 0.0, 1.0)
        o.repeat_penalty = _check_float("repeat_penalty", repeat_penalty)
        if o.repeat_penalty <= 0:
            raise ValueError(f"repeat_penalty must be positive, got {repeat_penalty}")
        o.presence_penalty = _check_float("presence_penalty", presence_penalty)
        o.frequency_penalty = _check_float("frequency_penalty", frequency_penalty)
        if stop is None:
            stops: List[str] = []
        elif isinstance(stop, str):
            stops = [stop]
        elif isinstance(stop, (list, tuple)):
            stops = list(stop)
        else:
            raise TypeError(f"stop must be a str or a list of str, got {type(stop).__name__}")
        encoded = [_utf8("a stop string", s) for s in stops]
        if any(not s for s in encoded):
            raise ValueError("a stop string is empty")
        o.stop = encoded
        if seed is not None:
            o.seed = _check_seed("seed", seed)
        return o

    def create_completion(
        self,
        prompt: str,
        max_tokens: Optional[int] = 16,
        temperature: float = 0.8,
        top_p: float = 0.95,
        min_p: float = 0.05,
        logprobs: Optional[int] = None,
        stop: Optional[Union[str, List[str]]] = [],
        frequency_penalty: float = 0.0,
        presence_penalty: float = 0.0,
        repeat_penalty: float = 1.0,
        top_k: int = 40,
        stream: bool = False,
        seed: Optional[int] = None,
        **llama_cpp_options: Any,
    ) -> Union[Completion, Iterator[CompletionChunk]]:
        """Completes ``prompt`` (tokenized with the model's BOS token; control tokens in it are recognised).

        Sampling is llama.cpp's chain: penalties -> top-k -> top-p -> min-p -> temperature;
        temperature <= 0 is greedy. max_tokens None or 0: until the end of generation or a
        full context. stop: strings that end the text (not included). seed: this call's seed
        (None: the next one drawn from the Llama's seed). logprobs: None, or 0 to 20: each
        token's log-probability and that many most likely alternatives (not when streaming).

        Returns llama-cpp-python's ``text_completion`` dictionary, or with ``stream=True``
        an iterator of its chunks, whose texts concatenate to the whole text; the last
        chunk carries the finish_reason ("stop" or "length"). Options of llama-cpp-python
        that rayo lacks (grammar, mirostat_mode, ...) raise NotImplementedError unless
        left at their defaults.
        """
        _check_unsupported(llama_cpp_options)
        streaming = _check_bool("stream", stream)
        options = self._options(max_tokens, temperature, top_p, top_k, min_p, repeat_penalty, presence_penalty,
                                frequency_penalty, stop, seed, logprobs, streaming)
        data = _utf8("prompt", prompt)
        generation = self._loaded().complete(data, options, streaming)
        completion_id = f"cmpl-{uuid.uuid4()}"
        created = int(time.time())
        if streaming:
            return self._completion_chunks(generation, completion_id, created)
        result = self._finish(generation)
        scores = None
        if logprobs is not None:
            context = self._loaded().tokenize(data, True, True)
            scores = self._completion_logprobs(result, context, len(prompt))
        return {
            "id": completion_id,
            "object": "text_completion",
            "created": created,
            "model": self.model_path,
            "choices": [
                {"text": _text(result.text), "index": 0, "logprobs": scores, "finish_reason": result.finish_reason}
            ],
            "usage": _usage(result),
        }

    def __call__(self, prompt: str, *args: Any, **kwargs: Any) -> Union[Completion, Iterator[CompletionChunk]]:
        """Same as create_completion."""
        return self.create_completion(prompt, *args, **kwargs)

    def create_chat_completion(
        self,
        messages: List[ChatMessage],
        temperature: float = 0.2,
        top_p: float = 0.95,
        top_k: int = 40,
        min_p: float = 0.05,
        stream: bool = False,
        stop: Optional[Union[str, List[str]]] = [],
        seed: Optional[int] = None,
        response_format: Optional[Dict[str, Any]] = None,
        max_tokens: Optional[int] = None,
        presence_penalty: float = 0.0,
        frequency_penalty: float = 0.0,
        repeat_penalty: float = 1.0,
        logprobs: Optional[bool] = None,
        top_logprobs: Optional[int] = None,
        **llama_cpp_options: Any,
    ) -> Union[ChatCompletion, Iterator[ChatCompletionChunk]]:
        """Answers a conversation rendered with the model's own chat template.

        messages: dictionaries with "role" ("system", "user", "assistant") and "content" (str).
        The template is the GGUF file's (a ChatML or Llama-2 default when it has none).
        Returns llama-cpp-python's ``chat.completion`` dictionary, or with ``stream=True`` an
        iterator of ``chat.completion.chunk`` dictionaries: a first delta with the role, one
        per piece of content, and a last empty one with the finish_reason. Other options as
        in create_completion; logprobs=True with top_logprobs=N (0 to 20) gives OpenAI's
        chat logprobs; tools, functions and grammars raise NotImplementedError.
        """
        if response_format is not None and response_format.get("type", "text") != "text":
            raise NotImplementedError("response_format other than text is not supported by rayo")
        _check_unsupported(llama_cpp_options)
        streaming = _check_bool("stream", stream)
        # As llama-cpp-python: logprobs=True asks for top_logprobs alternatives (None: no logprobs).
        alternatives = top_logprobs if logprobs is not None and _check_bool("logprobs", logprobs) else None
        options = self._options(max_tokens, temperature, top_p, top_k, min_p, repeat_penalty, presence_penalty,
                                frequency_penalty, stop, seed, alternatives, streaming)
        turns = _chat_turns(messages)
        generation = self._loaded().chat(turns, options, streaming)
        completion_id = f"chatcmpl-{uuid.uuid4()}"
        created = int(time.time())
        if streaming:
            return self._chat_chunks(generation, completion_id, created)
        result = self._finish(generation)
        scores = None
        if alternatives is not None:
            context = self._loaded().tokenize(self._loaded().apply_chat_template(turns), False, True)
            scores = _chat_logprobs(self._completion_logprobs(result, context, 0))
        return {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": self.model_path,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": _text(result.text)},
                    "logprobs": scores,
                    "finish_reason": result.finish_reason,
                }
            ],
            "usage": _usage(result),
        }

    def apply_chat_template(self, messages: List[ChatMessage]) -> str:
        """The prompt text that create_chat_completion generates from (the model's template applied)."""
        return _text(self._loaded().apply_chat_template(_chat_turns(messages)))

    # -- helpers ----------------------------------------------------------

    def _completion_logprobs(self, result: _core.Completion, prompt_tokens: List[int], text_offset: int) -> Dict[str, Any]:
        """llama-cpp-python's completion logprobs: each token's text, offset, logprob and top alternatives."""
        model = self._loaded()
        # Each token's text as it follows what came before it (a few prompt
        # tokens of context keep SentencePiece from dropping a leading space).
        context = list(prompt_tokens[-4:])
        generated: List[int] = [token for token, _, _ in result.logprobs]
        token_texts = []
        before = model.detokenize(context, False)
        for i in range(len(generated)):
            after = model.detokenize(context + generated[: i + 1], False)
            token_texts.append(_text(after[len(before):]))
            before = after
        offsets, top = [], []
        for i, (token, logprob, alternatives) in enumerate(result.logprobs):
            offsets.append(text_offset + sum(len(t) for t in token_texts[:i]))
            best = {_text(model.detokenize([alt], False)): alt_logprob for alt, alt_logprob in alternatives}
            best[token_texts[i]] = logprob
            top.append(best)
        return {
            "tokens": token_texts,
            "text_offset": offsets,
            "token_logprobs": [logprob for _, logprob, _ in result.logprobs],
            "top_logprobs": top,
        }

    @staticmethod
    def _finish(generation: _core.Generation) -> _core.Completion:
        try:
            return generation.result()
        finally:
            generation.stop()

    def _pieces(self, generation: _core.Generation) -> Iterator[str]:
        # Stopping in `finally` ends the generation when the caller leaves the
        # loop early (break, an exception, the iterator dropped).
        try:
            while True:
                piece = generation.next_piece()
                if piece is None:
                    return
                text = _text(piece)
                if text:
                    yield text
        finally:
            generation.stop()

    def _completion_chunks(
        self, generation: _core.Generation, completion_id: str, created: int
    ) -> Iterator[CompletionChunk]:
        def chunk(text: str, finish_reason: Optional[str]) -> CompletionChunk:
            return {
                "id": completion_id,
                "object": "text_completion",
                "created": created,
                "model": self.model_path,
                "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish_reason}],
            }

        for text in self._pieces(generation):
            yield chunk(text, None)
        yield chunk("", generation.result().finish_reason)

    def _chat_chunks(
        self, generation: _core.Generation, completion_id: str, created: int
    ) -> Iterator[ChatCompletionChunk]:
        def chunk(delta: Dict[str, str], finish_reason: Optional[str]) -> ChatCompletionChunk:
            return {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": self.model_path,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
            }

        yield chunk({"role": "assistant"}, None)
        for text in self._pieces(generation):
            yield chunk({"content": text}, None)
        yield chunk({}, generation.result().finish_reason)


def _chat_logprobs(scores: Dict[str, Any]) -> Dict[str, Any]:
    """Completion logprobs in a chat's shape, as llama-cpp-python converts them."""
    return {
        "content": [
            {
                "token": token,
                "bytes": None,
                "logprob": logprob,
                "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in alternatives.items()],
            }
            for token, logprob, alternatives in zip(scores["tokens"], scores["token_logprobs"], scores["top_logprobs"])
        ],
        "refusal": None,
    }


def _usage(result: _core.Completion) -> Dict[str, int]:
    return {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "total_tokens": result.prompt_tokens + result.completion_tokens,
    }


def _chat_turns(messages: Any) -> List[tuple]:
    """The messages as (role, content) UTF-8 pairs; a message without content (None) is empty."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TypeError(f"messages must be a list of dicts, got {type(messages).__name__}")
    if not messages:
        raise ValueError("a chat needs at least one message")
    turns = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise TypeError(f"messages[{i}] must be a dict, got {type(message).__name__}")
        role = message.get("role")
        if not isinstance(role, str) or not role:
            raise ValueError(f"messages[{i}] needs a role (a non-empty str)")
        content = message.get("content")
        if content is None:
            content = ""
        elif isinstance(content, list):
            # OpenAI's list of parts: only text parts can go to a text model.
            texts = []
            for part in content:
                if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                    raise ValueError(f"messages[{i}].content: only text parts are supported")
                texts.append(part["text"])
            content = "".join(texts)
        turns.append((_utf8(f"messages[{i}].role", role), _utf8(f"messages[{i}].content", content)))
    return turns
