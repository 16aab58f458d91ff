"""rayo.Whisper against faster-whisper's reference transcripts (shared/whisper/reference):
the same text and segments for the same settings, faster-whisper's return shapes,
and Python errors for bad input."""

import io
import json
import struct
import wave

import pytest

from conftest import MODEL_CACHE, shared_file

import rayo


def whisper_folder() -> str:
    path = MODEL_CACHE / "whisper-tiny.en"
    if not (path / "model.bin").is_file():
        pytest.skip(f"Whisper tiny.en is absent: {path} (scripts/fetch-models.sh fetches it)")
    return str(path)


def clip(name: str) -> str:
    return str(shared_file(f"whisper/audio/{name}.wav"))


def reference(name: str) -> dict:
    with open(shared_file(f"whisper/reference/{name}")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def model():
    with rayo.Whisper(whisper_folder(), cpu_threads=2) as m:
        yield m


# The references' settings: language en, temperature 0 alone, no previous text.
REFERENCE_SETTINGS = dict(language="en", temperature=0.0, condition_on_previous_text=False)


def test_greedy_texts_equal_faster_whisper(model):
    ref = reference("faster-whisper-greedy-f32.json")
    for name, text in ref["texts"].items():
        segments, info = model.transcribe(clip(name), beam_size=1, without_timestamps=True, **REFERENCE_SETTINGS)
        got = "".join(s.text for s in segments).strip()
        assert got == text, name
        assert info.language == "en"


def test_timestamped_segments_equal_faster_whisper(model):
    ref = reference("faster-whisper-greedy-f32-timestamps.json")
    for name, expected in ref["segments"].items():
        segments, info = model.transcribe(clip(name), beam_size=1, **REFERENCE_SETTINGS)
        segments = list(segments)
        assert len(segments) == len(expected), name
        for s, r in zip(segments, expected):
            assert s.tokens == r["tokens"], name
            assert s.start == pytest.approx(r["start"], abs=1e-6)
            assert s.end == pytest.approx(r["end"], abs=1e-6)
            assert s.seek == r["seek"]
            assert s.avg_logprob == pytest.approx(r["avg_logprob"], abs=2e-3)
        assert not segments or segments[-1].end <= info.duration + 0.01


def test_faster_whisper_shapes(model):
    segments, info = model.transcribe(clip("u01_plain"), beam_size=1)
    assert isinstance(info, rayo.TranscriptionInfo)
    assert info.language == "en" and info.language_probability == 1
    assert info.duration == pytest.approx(3.77, abs=0.01)
    assert info.duration_after_vad == info.duration
    first = next(segments)
    assert isinstance(first, rayo.Segment)
    assert first.id == 1 and first.start == 0.0 and first.end <= info.duration
    assert first.words is None and first.temperature is not None
    assert rayo.WhisperModel is rayo.Whisper
    assert not model.is_multilingual and model.supported_languages == ["en"]


def wav_samples(path: str):
    with wave.open(path, "rb") as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
        frames = w.readframes(w.getnframes())
    return [v / 32768.0 for v in struct.unpack(f"<{len(frames) // 2}h", frames)]


def test_samples_and_file_objects_give_the_files_transcript(model):
    path = clip("u07_punct")
    from_path, _ = model.transcribe(path, beam_size=1)
    expected = [(s.start, s.end, s.text) for s in from_path]
    from_samples, _ = model.transcribe(wav_samples(path), beam_size=1)
    assert [(s.start, s.end, s.text) for s in from_samples] == expected
    with open(path, "rb") as f:
        from_file, _ = model.transcribe(io.BytesIO(f.read()), beam_size=1)
    assert [(s.start, s.end, s.text) for s in from_file] == expected


def test_bad_input_raises_python_errors(model):
    with pytest.raises(RuntimeError, match="no such file"):
        model.transcribe("/nonexistent.wav")
    with pytest.raises(RuntimeError, match="not a readable audio file"):
        model.transcribe(shared_file("models/stories260K.gguf"))
    with pytest.raises(RuntimeError, match="unknown language"):
        model.transcribe(clip("u01_plain"), language="xx")
    with pytest.raises(RuntimeError, match="beam"):
        model.transcribe(clip("u01_plain"), beam_size=9)  # loaded for 5
    with pytest.raises(ValueError, match="word_timestamps"):
        model.transcribe(clip("u01_plain"), word_timestamps=True)
    with pytest.raises(TypeError):
        model.transcribe(12345)
    with pytest.raises(RuntimeError, match="no audio samples"):
        model.transcribe([])
    with pytest.raises(RuntimeError):
        rayo.Whisper("/nonexistent-model")
    with pytest.raises(RuntimeError, match="int4"):
        rayo.Whisper(whisper_folder(), compute_type="int4")
    # The model is still usable after every error.
    segments, _ = model.transcribe(clip("u01_plain"), beam_size=1)
    assert "lazy dog" in "".join(s.text for s in segments)


def test_closed_model_raises():
    m = rayo.Whisper(whisper_folder(), cpu_threads=1)
    m.close()
    with pytest.raises(ValueError, match="closed"):
        m.transcribe(clip("u01_plain"))


def test_ctrl_c_stops_a_transcription_and_the_model_stays_usable(model):
    import os
    import signal
    import threading
    import time

    expected, _ = model.transcribe(clip("u01_plain"), beam_size=1)
    expected = [s.text for s in expected]
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        model.transcribe(clip("long"), beam_size=5)  # about 3 s a window
    timer.join()
    # It stops after the window it is in: well before the 65-s clip's end.
    assert time.monotonic() - started < 6, "Ctrl-C did not stop the transcription promptly"
    again, _ = model.transcribe(clip("u01_plain"), beam_size=1)
    assert [s.text for s in again] == expected
