# Type stubs of the extension rayo._core (python/src/bindings.cpp), the thin
# layer over include/rayo/llm.h that rayo.Llama (llama.py) is built on.
from typing import Dict, List, Optional, Tuple

__version__: str
RANDOM_SEED: int

class LlmOptions:
    """How a model is loaded and where it runs (rayo::LlmOptions)."""
    n_ctx: int
    n_batch: int
    n_threads: int
    device: str
    seed: int
    verbose: bool
    def __init__(self) -> None: ...

class CompletionOptions:
    """Sampling and stopping for one completion (rayo::CompletionOptions)."""
    max_tokens: int
    temperature: float
    top_p: float
    top_k: int
    min_p: float
    repeat_penalty: float
    presence_penalty: float
    frequency_penalty: float
    stop: List[bytes]
    seed: Optional[int]
    logprobs: int
    def __init__(self) -> None: ...

class Completion:
    """What a completion produced (rayo::Completion)."""
    @property
    def text(self) -> bytes: ...
    @property
    def tokens(self) -> List[int]: ...
    @property
    def finish_reason(self) -> str: ...
    @property
    def prompt_tokens(self) -> int: ...
    @property
    def completion_tokens(self) -> int: ...
    @property
    def logprobs(self) -> List[Tuple[int, float, List[Tuple[int, float]]]]:
        """Per generated token (token, logprob, top alternatives), when asked for."""

class Generation:
    """One running completion, generated on a thread of its own."""
    def next_piece(self) -> Optional[bytes]:
        """The next piece of text (whole UTF-8 characters), or None at the end."""
    def result(self) -> Completion:
        """Waits for the end and returns the Completion."""
    def stop(self) -> None:
        """Stops the generation at its next piece and waits for it."""

class Model:
    """A loaded GGUF model and its context (rayo::Llm)."""
    def __init__(self, model_path: str, options: LlmOptions) -> None: ...
    def close(self) -> None:
        """Frees the model (after any generation still running)."""
    @property
    def closed(self) -> bool: ...
    def complete(self, prompt: bytes, options: CompletionOptions, stream: bool) -> Generation: ...
    def chat(self, messages: List[Tuple[bytes, bytes]], options: CompletionOptions, stream: bool) -> Generation: ...
    def apply_chat_template(self, messages: List[Tuple[bytes, bytes]]) -> bytes: ...
    def tokenize(self, text: bytes, add_special: bool, parse_special: bool) -> List[int]: ...
    def detokenize(self, tokens: List[int], special: bool) -> bytes: ...
    def n_ctx(self) -> int: ...
    def n_vocab(self) -> int: ...
    def token_bos(self) -> int: ...
    def token_eos(self) -> int: ...
    def device(self) -> str: ...
    def metadata(self) -> Dict[str, str]: ...

class WhisperOptions:
    """How a Whisper model is loaded (rayo::WhisperOptions)."""
    device: str
    compute_type: str
    n_threads: int
    max_beams: int
    def __init__(self) -> None: ...

class TranscribeOptions:
    """One transcription's decoding (rayo::TranscribeOptions)."""
    language: Optional[str]
    task: str
    beam_size: int
    best_of: int
    patience: float
    length_penalty: float
    temperature: List[float]
    compression_ratio_threshold: Optional[float]
    log_prob_threshold: Optional[float]
    no_speech_threshold: Optional[float]
    condition_on_previous_text: bool
    initial_prompt: Optional[str]
    without_timestamps: bool
    suppress_blank: bool
    max_initial_timestamp: float
    seed: int
    def __init__(self) -> None: ...

class TranscriptSegment:
    """One segment (rayo::TranscriptSegment)."""
    id: int
    seek: int
    start: float
    end: float
    text: str
    tokens: List[int]
    temperature: float
    avg_logprob: float
    compression_ratio: float
    no_speech_prob: float

class Transcription:
    """A transcript (rayo::Transcription)."""
    language: str
    language_probability: float
    duration: float
    segments: List[TranscriptSegment]

class WhisperModel:
    """A loaded Whisper model (rayo::Whisper)."""
    def __init__(self, model_path: str, options: WhisperOptions) -> None: ...
    def close(self) -> None:
        """Frees the model."""
    @property
    def closed(self) -> bool: ...
    def transcribe(self, path: Optional[str], samples: Optional[bytes], options: TranscribeOptions) -> Transcription:
        """Transcribes a file (path) or float32 samples at 16 kHz (samples, as bytes)."""
    def multilingual(self) -> bool: ...
    def n_mels(self) -> int: ...
    def languages(self) -> List[str]: ...
