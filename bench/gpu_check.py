"""On a machine with an NVIDIA GPU: does the app get llama.cpp with CUDA, and does a run use it? One script, for
when a GPU is at hand (none was when the CUDA wheel install was written: docs/models.md, GPU).

In order, all in one process as app.py does it: the doctor's report (the `llama.cpp CUDA wheel` line); the CUDA
wheel prepared as at the app's start-up (SEARCHBOX_GPU_BUILD=on unless set: installed from llama-cpp-python's
index, which needs the network, or the one installed before in the cache); llama_cpp imported, saying from
where and whether it offloads; the packaged Qwen2.5-Coder-1.5B loaded with every layer on the GPU, its prefill
and decode speed; one run over the built-in dataroom.

    python bench/gpu_check.py [--cache DIR] [--question "..."]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's searchbox, from any folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default="", help="SEARCHBOX_CACHE_DIR (default: the usual one)")
    parser.add_argument("--question", default="When does the lease of the Duluth headquarters at 410 Lakewalk "
                                                "Avenue expire?")
    args = parser.parse_args()
    if args.cache:
        os.environ["SEARCHBOX_CACHE_DIR"] = args.cache
    os.environ.setdefault("SEARCHBOX_GPU_BUILD", "on")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from searchbox.cli.main import main as cli
    from searchbox.llm.llamacpp.gpu_build import prepare
    from searchbox.settings import Settings

    settings = Settings.resolve()
    prepared = prepare(settings)  # before llama_cpp is imported, as app.py does
    print(f"== prepare: {prepared.state}", *prepared.lines, sep="\n")
    print("== doctor", flush=True)
    cli(["doctor"])

    import llama_cpp

    offload = bool(llama_cpp.llama_supports_gpu_offload())
    print(f"== llama_cpp {llama_cpp.__version__} from {llama_cpp.__file__}: GPU offload {offload}", flush=True)
    if not offload:
        return 1

    from searchbox.llm.weights.packaged import PACKAGED_QWEN_15B, packaged_gguf

    path = packaged_gguf(PACKAGED_QWEN_15B, settings.models_dir)
    started = time.monotonic()
    model = llama_cpp.Llama(model_path=str(path), n_gpu_layers=-1, n_ctx=4096, verbose=True)
    loaded = time.monotonic() - started
    prompt = "Count from one to fifty in words, separated by commas: one, two, three,"
    started = time.monotonic()
    out = model.create_completion(prompt, max_tokens=128, temperature=0.0)
    took = time.monotonic() - started
    usage = out["usage"]
    print(f"== loaded in {loaded:.1f} s; {usage['prompt_tokens']} prompt + {usage['completion_tokens']} new tokens "
          f"in {took:.2f} s", flush=True)
    del model

    print("== one run, LLM_GGUF=packaged:qwen2.5-coder-1.5b", flush=True)
    os.environ["LLM_GGUF"] = PACKAGED_QWEN_15B
    return cli(["run", args.question])


if __name__ == "__main__":
    sys.exit(main())
