"""The built-in runtime: a GGUF run in-process by llama-cpp-python behind `ChatModel` (model), its KV cache kept
across calls only where a cold evaluation cuts, and shared prompt prefixes kept on disk across processes
(prefix_store, kv_state); on a CPU, tokens decoded with the cores other work leaves idle (decode_threads,
cpu_load); llama.cpp's own prefill and decode speed measured on a loaded model (speed)."""
