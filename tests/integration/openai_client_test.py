#!/usr/bin/env python3
"""The official `openai` Python package against a running `rayo serve`.

Usage: openai_client_test.py BASE_URL (e.g. http://127.0.0.1:8080/v1)
Exit status 0 when every check passes; 77 when the package cannot be imported.
Run by tests/slow/server_openai_test.cpp, which starts and stops the server.
"""
import sys

from openai_checks import check, openai, report


def main():
    base_url = sys.argv[1]
    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=60)

    models = client.models.list()
    check(len(models.data) == 1, "one model listed")
    model = models.data[0].id

    # Chat, not streamed.
    chat = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "Tell me a story."}],
        max_tokens=12,
        temperature=0,
    )
    check(chat.object == "chat.completion", "chat object")
    check(chat.id.startswith("chatcmpl-"), "chat id")
    check(len(chat.choices) == 1, "one choice")
    check(chat.choices[0].message.role == "assistant", "assistant role")
    check(isinstance(chat.choices[0].message.content, str), "content is text")
    check(chat.choices[0].finish_reason in ("stop", "length"), "finish reason")
    check(chat.usage.completion_tokens <= 12, "max_tokens respected")
    check(chat.usage.total_tokens == chat.usage.prompt_tokens + chat.usage.completion_tokens, "usage adds up")

    # Chat, streamed: the deltas add up to the same answer.
    stream = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "Tell me a story."}],
        max_tokens=12,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    text, finish, usage = "", None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        if not chunk.choices:
            continue
        if chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
        if chunk.choices[0].finish_reason:
            finish = chunk.choices[0].finish_reason
    check(text == chat.choices[0].message.content, f"streamed chat text {text!r} == {chat.choices[0].message.content!r}")
    check(finish == chat.choices[0].finish_reason, "streamed finish reason")
    check(usage is not None and usage.completion_tokens == chat.usage.completion_tokens, "streamed usage")

    # Completions, both ways; stop strings and logprobs.
    comp = client.completions.create(model=model, prompt="Once upon a time", max_tokens=30, temperature=0)
    check(comp.object == "text_completion", "completion object")
    check(len(comp.choices[0].text) > 0, "completion text")
    parts = []
    for chunk in client.completions.create(
        model=model, prompt="Once upon a time", max_tokens=30, temperature=0, stream=True
    ):
        if chunk.choices:
            parts.append(chunk.choices[0].text)
    check("".join(parts) == comp.choices[0].text, "streamed completion text")
    words = comp.choices[0].text.split()
    if len(words) > 3:
        stop = " " + words[3]
        cut = client.completions.create(
            model=model, prompt="Once upon a time", max_tokens=30, temperature=0, stop=[stop]
        )
        check(cut.choices[0].text == comp.choices[0].text[: comp.choices[0].text.find(stop)], "stop string cut")
        check(cut.choices[0].finish_reason == "stop", "stop string finish reason")
    lp = client.completions.create(model=model, prompt="Once upon a time", max_tokens=5, temperature=0, logprobs=2)
    check(len(lp.choices[0].logprobs.tokens) == 5, "5 token logprobs")
    check(all(x <= 0 for x in lp.choices[0].logprobs.token_logprobs), "logprobs are log probabilities")

    # A long prompt sent twice: the second reuses the cached blocks of the
    # first, says so in usage, and answers the same.
    story = "Once upon a time, there was a little girl named Lily. She loved to play in the park with her friends."
    first = client.completions.create(model=model, prompt=story, max_tokens=8, temperature=0)
    again = client.completions.create(model=model, prompt=story, max_tokens=8, temperature=0)
    details = again.usage.prompt_tokens_details
    check(details is not None and details.cached_tokens >= 16, f"cached prompt tokens reported ({details})")
    check(details is None or details.cached_tokens < again.usage.prompt_tokens, "the last prompt token is evaluated")
    check(again.choices[0].text == first.choices[0].text, "same answer from the cached prefix")

    # Seeded sampling is reproducible.
    a = client.completions.create(model=model, prompt="Once", max_tokens=10, temperature=1.0, seed=7)
    b = client.completions.create(model=model, prompt="Once", max_tokens=10, temperature=1.0, seed=7)
    check(a.choices[0].text == b.choices[0].text, "same seed, same text")

    # Errors surface as the package's exceptions.
    try:
        client.chat.completions.create(model=model, messages=[{"role": "user", "content": "x"}], n=2)
        check(False, "n=2 refused")
    except openai.BadRequestError as e:
        check(e.status_code == 400, "n=2 is a 400")
    try:
        client.completions.create(model=model, prompt=[300] * 5000, max_tokens=4)
        check(False, "context overflow refused")
    except openai.BadRequestError as e:
        check("context" in str(e), "context overflow message")

    return report("openai client")


if __name__ == "__main__":
    sys.exit(main())
