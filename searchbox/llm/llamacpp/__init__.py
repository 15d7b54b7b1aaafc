"""The built-in runtime: a GGUF run in-process by llama-cpp-python behind `ChatModel` (model). Its llama.cpp
context is made for speed where the build allows (context); across calls it keeps of the KV cache only what a
cold evaluation would have left (kv_reuse), and the prefix a configuration's conversations share is kept on disk
for the next process (prefix_store, kv_state). On a CPU, tokens are decoded with the cores other work leaves idle
(decode_threads, cpu_load); llama.cpp's own prefill and decode speed is measured on a loaded model (speed)."""
