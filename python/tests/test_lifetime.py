"""The object's life: `with` frees the model, 100 load/free cycles do not grow
the process, Ctrl-C stops a generation promptly and leaves the model usable,
and other Python threads run while the model computes (the GIL is released)."""

import os
import signal
import threading
import time

import pytest
import rayo

from conftest import shared_model


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_load_free_cycles_do_not_grow_memory():
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("needs /proc (Linux)")
    path = shared_model("stories260K.gguf")

    def cycle():
        with rayo.Llama(path, n_ctx=256, n_threads=2, device="cpu") as llm:
            assert llm("Once upon a time", max_tokens=4, temperature=0)["usage"]["completion_tokens"] == 4
            assert sum(1 for _ in llm("Once upon a time", max_tokens=4, stream=True)) >= 2

    for _ in range(10):  # allocator pools and thread stacks reach their steady size
        cycle()
    before = rss_bytes()
    for _ in range(100):
        cycle()
    grown = rss_bytes() - before
    # One model and its context are about 2 MiB: a leak of either per cycle would show as 200 MiB.
    assert grown < 24 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 100 load/free cycles"


def test_objects_dropped_without_close_are_freed():
    path = shared_model("stories260K.gguf")
    for _ in range(5):
        llm = rayo.Llama(path, n_ctx=128, n_threads=2, device="cpu")
        stream = llm("Once upon a time", max_tokens=50, stream=True)
        next(stream)
        del llm, stream  # a stream still open when both go


def long_generation_model():
    # Random weights seldom end a text: generation runs until the context is full.
    return rayo.Llama(shared_model("synth-llama-q8_0.gguf"), n_ctx=4096, n_threads=2, device="cpu", seed=1)


def interrupt_after(seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    return timer


@pytest.mark.parametrize("stream", [False, True])
def test_ctrl_c_stops_a_generation_and_the_model_stays_usable(stream):
    with long_generation_model() as llm:
        greedy = llm("Once upon a time", max_tokens=8, temperature=0)
        started = time.monotonic()
        timer = interrupt_after(0.5)
        with pytest.raises(KeyboardInterrupt):
            if stream:
                for _ in llm("Once upon a time", max_tokens=0, stream=True):
                    pass
            else:
                llm("Once upon a time", max_tokens=0)
        timer.join()
        assert time.monotonic() - started < 5, "Ctrl-C did not stop the generation promptly"
        assert llm("Once upon a time", max_tokens=8, temperature=0)["choices"] == greedy["choices"]


def test_other_threads_run_while_the_model_computes():
    with long_generation_model() as llm:
        ticks = []
        done = threading.Event()

        def ticker():
            while not done.is_set():
                ticks.append(time.monotonic())
                time.sleep(0.01)

        t = threading.Thread(target=ticker)
        t.start()
        started = time.monotonic()
        try:
            llm("Once upon a time", max_tokens=1000, temperature=0)
        finally:
            took = time.monotonic() - started
            done.set()
            t.join()
        # A held GIL would let the ticker in only between calls: one or two ticks.
        assert len(ticks) >= min(5, took / 0.05), f"{len(ticks)} ticks in {took:.2f} s: the GIL was held"
