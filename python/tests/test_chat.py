"""Chat completions: the model's chat template applied (llama.cpp's answers on
the real chat model), streamed deltas that concatenate to the whole answer,
llama-cpp-python's chat fields."""

import json

import pytest
import rayo

from conftest import SOURCE_ROOT, shared_model, smollm2_model

CHAT = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Tell me a story."}]


def test_real_chat_model_answers_as_llama_cpp():
    # llama.cpp's greedy answers to conversations rendered with SmolLM2's own
    # template (tests/data/smollm2/, made by its make-reference.sh).
    data = SOURCE_ROOT / "tests" / "data" / "smollm2"
    chats = json.loads((data / "chats.json").read_text())
    ref = json.loads((data / "reference-chat.json").read_text())
    with rayo.Llama(smollm2_model(), n_ctx=1024, n_threads=2, device="cpu") as llm:
        for messages, case in list(zip(chats, ref["cases"]))[:3]:
            assert llm.apply_chat_template(messages) == case["prompt"]
            expected = case["greedy"][:12]
            out = llm.create_chat_completion(messages, max_tokens=len(expected), temperature=0)
            assert out["usage"]["prompt_tokens"] == len(case["tokens"])
            answer = out["choices"][0]["message"]["content"]
            assert answer == llm.detokenize(expected).decode("utf-8", errors="ignore")


@pytest.mark.parametrize("model,marker", [("synth-qwen2-q8_0.gguf", "<|im_start|>user\nTell me a story.<|im_end|>"),
                                          ("stories260K.gguf", "[INST]")])
def test_default_template_is_applied(model, marker):
    # These files carry no template: the architecture's default renders them
    # (ChatML for qwen2, Llama-2 for llama), as `rayo chat` does.
    with rayo.Llama(shared_model(model), n_ctx=256, n_threads=2, device="cpu") as llm:
        prompt = llm.apply_chat_template(CHAT)
        assert marker in prompt and "You are terse." in prompt
        out = llm.create_chat_completion(CHAT, max_tokens=4, temperature=0)
        rendered = llm.tokenize(prompt, add_special=False, parse_special=True)
        assert out["usage"]["prompt_tokens"] in (len(rendered), len(rendered) + 1)  # + BOS where it asks for one


def test_chat_fields_and_stream(stories):
    whole = stories.create_chat_completion(CHAT, max_tokens=24, temperature=0)
    assert set(whole) == {"id", "object", "created", "model", "choices", "usage"}
    assert whole["object"] == "chat.completion" and whole["id"].startswith("chatcmpl-")
    choice = whole["choices"][0]
    assert set(choice) == {"index", "message", "logprobs", "finish_reason"}
    assert choice["message"]["role"] == "assistant" and isinstance(choice["message"]["content"], str)

    chunks = list(stories.create_chat_completion(CHAT, max_tokens=24, temperature=0, stream=True))
    for c in chunks:
        assert set(c) == {"id", "object", "created", "model", "choices"}
        assert c["object"] == "chat.completion.chunk"
        assert set(c["choices"][0]) == {"index", "delta", "logprobs", "finish_reason"}
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert chunks[-1]["choices"][0]["delta"] == {}
    assert chunks[-1]["choices"][0]["finish_reason"] == choice["finish_reason"]
    content = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert content == choice["message"]["content"]
