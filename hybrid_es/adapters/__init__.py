"""Framework adapters: a LangChain retriever, a Haystack component and a LlamaIndex retriever over
:class:`~hybrid_es.HybridSearcher`, each taking the caller's ``Principal`` on every call.

Entry point: ``adapters.langchain``, ``.haystack``, ``.llamaindex`` (the ``adapters`` extra);
each imports only its own framework, and importing this package imports none.
May import: evaluation and every layer below it (each adapter uses the searcher and the models).
"""
