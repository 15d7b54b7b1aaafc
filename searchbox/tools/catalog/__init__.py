"""The catalog tools (design §2.4): retrieval tools a run gets by SEARCHBOX_TOOLS, each declared with its
schema beside its function, group (high / low) and default. catalog.json is generated from them."""

from searchbox.tools.catalog import search, texts

CATALOG_TOOLS = (search.search_dataroom, search.answer_question, search.keyword_search, texts.embed_texts,
                 texts.rerank, texts.similarity, texts.classify, texts.cluster, texts.select_diverse)
