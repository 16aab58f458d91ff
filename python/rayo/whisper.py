"""rayo.Whisper: speech to text with faster-whisper's API (WhisperModel.transcribe).

    import rayo
    model = rayo.Whisper("whisper-tiny.en", compute_type="int8")
    segments, info = model.transcribe("clip.wav", beam_size=5)
    for segment in segments:
        print(f"[{segment.start:.2f} -> {segment.end:.2f}] {segment.text}")

The decoding is faster-whisper's (the same rules, options and defaults), run
by rayo's C++ library (include/rayo/whisper.h) on the CPU. Models are
CTranslate2 Whisper folders, as faster-whisper's users have them, or
whisper.cpp's ggml-*.bin files.
"""

import array
import os
from typing import Iterable, Iterator, List, NamedTuple, Optional, Tuple, Union

from . import _core

__all__ = ["Whisper", "WhisperModel", "Segment", "TranscriptionInfo"]


class Segment(NamedTuple):
    """faster-whisper's Segment (words is None: no word timestamps yet)."""

    id: int
    seek: int
    start: float
    end: float
    text: str
    tokens: List[int]
    avg_logprob: float
    compression_ratio: float
    no_speech_prob: float
    words: Optional[list]
    temperature: Optional[float]


class TranscriptionInfo(NamedTuple):
    """faster-whisper's TranscriptionInfo (no VAD: duration_after_vad is the duration)."""

    language: str
    language_probability: float
    duration: float
    duration_after_vad: float
    all_language_probs: Optional[List[Tuple[str, float]]]
    transcription_options: dict
    vad_options: Optional[dict]


def _samples_bytes(audio) -> bytes:
    """16 kHz mono samples (a numpy array or any sequence of numbers) as float32 bytes."""
    if hasattr(audio, "astype") and hasattr(audio, "tobytes"):  # numpy, without importing it
        if getattr(audio, "ndim", 1) != 1:
            raise ValueError("audio samples must be one-dimensional (mono, 16 kHz)")
        return audio.astype("float32").tobytes()
    try:
        return array.array("f", audio).tobytes()
    except TypeError as e:
        raise TypeError(
            "audio must be a path, a binary file object or a sequence of float samples at 16 kHz, "
            f"not {type(audio).__name__}"
        ) from e


class Whisper:
    """A Whisper model: faster-whisper's WhisperModel(model_size_or_path, device, compute_type, cpu_threads).

    model_size_or_path is a CTranslate2 Whisper folder (model.bin, config.json,
    vocabulary.json or .txt) or a whisper.cpp ggml-*.bin file. device: "auto" (the CPU), "cpu" or "cuda" (the GPU
    path is checked against the CPU on an emulated GPU, not yet measured on one). compute_type: "default", "float32", "float16" (weights as stored) or
    "int8" (quantized at load). max_beams bounds beam_size and best_of.
    """

    def __init__(
        self,
        model_size_or_path: Union[str, os.PathLike],
        device: str = "auto",
        compute_type: str = "default",
        cpu_threads: int = 0,
        max_beams: int = 5,
    ):
        if not isinstance(model_size_or_path, (str, os.PathLike)):
            raise TypeError(f"model_size_or_path must be a path, not {type(model_size_or_path).__name__}")
        options = _core.WhisperOptions()
        options.device = device
        options.compute_type = compute_type
        options.n_threads = int(cpu_threads)
        options.max_beams = int(max_beams)
        self._model = _core.WhisperModel(os.fspath(model_size_or_path), options)

    def close(self) -> None:
        """Frees the model now (it is freed when the object goes, too)."""
        self._model.close()

    def __enter__(self) -> "Whisper":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def is_multilingual(self) -> bool:
        return self._model.multilingual()

    @property
    def supported_languages(self) -> List[str]:
        return self._model.languages()

    def transcribe(
        self,
        audio,
        language: Optional[str] = None,
        task: str = "transcribe",
        beam_size: int = 5,
        best_of: int = 5,
        patience: float = 1,
        length_penalty: float = 1,
        temperature: Union[float, Iterable[float]] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0),
        compression_ratio_threshold: Optional[float] = 2.4,
        log_prob_threshold: Optional[float] = -1.0,
        no_speech_threshold: Optional[float] = 0.6,
        condition_on_previous_text: bool = True,
        initial_prompt: Optional[str] = None,
        suppress_blank: bool = True,
        without_timestamps: bool = False,
        max_initial_timestamp: float = 1.0,
        word_timestamps: bool = False,
        vad_filter: bool = False,
    ) -> Tuple[Iterator[Segment], TranscriptionInfo]:
        """Transcribes audio: a path, a binary file object, or 16 kHz mono float samples.

        Returns (segments, info) as faster-whisper does; the segments are
        computed before the call returns (the GIL released meanwhile, Ctrl-C
        stopping it after the current 30-s window).
        """
        if word_timestamps:
            raise ValueError("word_timestamps is not supported yet")
        if vad_filter:
            raise ValueError("vad_filter is not supported yet")
        options = _core.TranscribeOptions()
        options.language = language
        options.task = task
        options.beam_size = int(beam_size)
        options.best_of = int(best_of)
        options.patience = float(patience)
        options.length_penalty = float(length_penalty)
        options.temperature = (
            [float(temperature)] if isinstance(temperature, (int, float)) else [float(t) for t in temperature]
        )
        options.compression_ratio_threshold = compression_ratio_threshold
        options.log_prob_threshold = log_prob_threshold
        options.no_speech_threshold = no_speech_threshold
        options.condition_on_previous_text = bool(condition_on_previous_text)
        options.initial_prompt = initial_prompt
        options.suppress_blank = bool(suppress_blank)
        options.without_timestamps = bool(without_timestamps)
        options.max_initial_timestamp = float(max_initial_timestamp)

        if isinstance(audio, (str, os.PathLike)):
            result = self._model.transcribe(os.fspath(audio), None, options)
        elif hasattr(audio, "read"):  # a binary file object: its bytes, through a temporary file
            import tempfile

            with tempfile.NamedTemporaryFile(suffix=".audio") as f:
                f.write(audio.read())
                f.flush()
                result = self._model.transcribe(f.name, None, options)
        else:
            result = self._model.transcribe(None, _samples_bytes(audio), options)

        segments = [
            Segment(s.id, s.seek, s.start, s.end, s.text, list(s.tokens), s.avg_logprob, s.compression_ratio,
                    s.no_speech_prob, None, s.temperature)
            for s in result.segments
        ]
        info = TranscriptionInfo(
            language=result.language,
            language_probability=result.language_probability,
            duration=result.duration,
            duration_after_vad=result.duration,
            all_language_probs=None,
            transcription_options={
                "beam_size": beam_size, "best_of": best_of, "patience": patience, "length_penalty": length_penalty,
                "temperatures": list(options.temperature), "initial_prompt": initial_prompt,
                "condition_on_previous_text": condition_on_previous_text, "without_timestamps": without_timestamps,
            },
            vad_options=None,
        )
        return iter(segments), info


# faster-whisper's name, so that `from rayo import WhisperModel` replaces it.
WhisperModel = Whisper
