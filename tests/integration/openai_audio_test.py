#!/usr/bin/env python3
"""The official `openai` Python package against `rayo serve --whisper`.

Usage: openai_audio_test.py BASE_URL AUDIO_FILE EXPECTED_TEXT
Exit status 0 when every check passes; 77 when the package cannot be imported.
Run by tests/slow/server_audio_test.cpp, which starts and stops the server.
"""
import sys

from openai_checks import check, openai, report


def main():
    base_url, audio, expected = sys.argv[1], sys.argv[2], sys.argv[3]
    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=60)

    with open(audio, "rb") as f:
        t = client.audio.transcriptions.create(model="whisper-1", file=f)
    check(t.text == expected, f"transcription text: {t.text!r} != {expected!r}")

    with open(audio, "rb") as f:
        v = client.audio.transcriptions.create(model="whisper-1", file=f, response_format="verbose_json",
                                               language="en", temperature=0)
    check(v.text == expected, "verbose_json text")
    check(v.language == "english", f"verbose_json language {v.language!r}")
    check(v.duration > 3 and len(v.segments) >= 1, "verbose_json duration and segments")
    check(v.segments[-1].end <= v.duration + 0.01, "segments end within the audio")

    with open(audio, "rb") as f:
        srt = client.audio.transcriptions.create(model="whisper-1", file=f, response_format="srt")
    check(isinstance(srt, str) and srt.startswith("1\n00:00:00,000 --> "), f"srt: {srt[:40]!r}")

    with open(audio, "rb") as f:
        tr = client.audio.translations.create(model="whisper-1", file=f)
    check(tr.text == expected, "translation of English by an English-only model")

    try:
        client.audio.transcriptions.create(model="whisper-1", file=("notes.txt", b"not audio"))
        check(False, "a file that is not audio is refused")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and "file" == (e.body or {}).get("param"), f"bad audio error: {e}")

    return report("openai audio")


if __name__ == "__main__":
    sys.exit(main())
