"""Code written for llama-cpp-python's high-level API runs with only its import
changed: the snippet below is its README's usage (completion and chat, streamed
and not), run as a separate program against rayo."""

import subprocess
import sys
import textwrap

from conftest import shared_model

SNIPPET = textwrap.dedent('''
    import sys
    from llama_cpp import Llama

    llm = Llama(model_path=sys.argv[1], n_ctx=512, n_gpu_layers=0, seed=1337, verbose=False)
    output = llm("Q: Name the planets in the solar system? A: ", max_tokens=32, stop=["Q:", "\\n"], echo=False)
    print("completion:", output["choices"][0]["text"], output["usage"]["total_tokens"])

    for chunk in llm("Once upon a time", max_tokens=16, stream=True):
        print(chunk["choices"][0]["text"], end="", flush=True)
    print()

    answer = llm.create_chat_completion(
        messages=[{"role": "system", "content": "You are an assistant who perfectly describes images."},
                  {"role": "user", "content": "Describe this image in detail please."}],
        max_tokens=24)
    print("chat:", answer["choices"][0]["message"]["role"], answer["choices"][0]["message"]["content"])

    text = ""
    for chunk in llm.create_chat_completion(messages=[{"role": "user", "content": "Hello"}], max_tokens=16,
                                            temperature=0.7, top_p=0.9, stream=True):
        delta = chunk["choices"][0]["delta"]
        if "role" in delta:
            print("role:", delta["role"])
        elif "content" in delta:
            text += delta["content"]
    print("streamed chat:", text, chunk["choices"][0]["finish_reason"])
    print(llm.tokenize(b"Hello"), llm.detokenize(llm.tokenize(b"Hello", add_bos=False)), llm.n_ctx())
''')


def test_llama_cpp_python_snippet_runs_with_the_import_changed(tmp_path):
    script = tmp_path / "snippet.py"
    script.write_text(SNIPPET.replace("from llama_cpp import Llama", "from rayo import Llama"))
    run = subprocess.run([sys.executable, str(script), shared_model("stories260K.gguf")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("completion:") and any(l.startswith("chat: assistant") for l in lines)
    assert "role: assistant" in lines and any(l.startswith("streamed chat:") for l in lines)
