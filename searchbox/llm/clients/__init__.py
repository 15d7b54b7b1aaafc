"""The client of an OpenAI-compatible chat endpoint (openai_client), and the stream assembly both
backends share: OpenAI-style chunks built into a `ChatResponse` (assemble), reasoning split from text as it
streams (live_split). llama-cpp-python yields the same chunks in-process, so the llama.cpp engine
(llm/llamacpp/) assembles its replies here too."""
