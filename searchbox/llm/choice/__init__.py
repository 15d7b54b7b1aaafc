"""Which model a run gets: the settings made a chat model (connect: the endpoint at LLAMA_URL, or a GGUF on the
built-in runtime, the embedded model when the one asked for cannot be had), the catalog of presets and the limits
each fits to a run (presets), and LLM_GGUF=auto's pick, which on a CPU weighs this machine's measured speed
(cpu_speed)."""
