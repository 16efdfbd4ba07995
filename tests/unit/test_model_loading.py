"""A model that cannot be loaded is a clear ModelError, not a library traceback."""

import pytest

from hybrid_es.encoders.embedder import SentenceTransformerEmbedder
from hybrid_es.encoders.reranker import CrossEncoderReranker
from hybrid_es.errors import ModelError


def test_a_missing_cross_encoder_is_a_model_error_with_a_hint():
    with pytest.raises(ModelError, match="cannot load cross-encoder") as err:
        CrossEncoderReranker("/nonexistent/cross-encoder").score("q", ["p"])
    assert err.value.hint and "HYBRID_ES_RERANKER_MODEL" in err.value.hint


def test_a_missing_embedder_is_a_model_error_with_a_hint():
    with pytest.raises(ModelError, match="cannot load embedding model") as err:
        SentenceTransformerEmbedder("/nonexistent/embedder").embed_queries(["q"])
    assert err.value.hint and "models" in err.value.hint


def test_no_passages_need_no_model():
    assert CrossEncoderReranker("/nonexistent/cross-encoder").score("q", []) == []


def test_the_metered_embedder_counts_passages_and_passes_queries_through():
    import numpy as np

    from hybrid_es.evaluation.metering import MeteredEmbedder

    class Fixed:
        model_id, dims = "fixed", 2

        def embed_queries(self, texts):  # type: ignore[no-untyped-def]
            return np.zeros((len(texts), 2), dtype=np.float32)

        embed_passages = embed_queries

    m = MeteredEmbedder(Fixed())
    m.embed_passages(["a", "b", "c"])
    m.embed_queries(["q"])
    assert (m.passages, m.model_id, m.dims) == (3, "fixed", 2) and m.seconds >= 0
    assert m.count_tokens("two words") == 2  # no tokenizer: the estimate


def test_a_first_load_is_timed_apart_and_only_once():
    import time as _time

    from hybrid_es.encoders.embedder import LazyModel, ensure_loaded

    class Slow:
        def __init__(self) -> None:
            self._model = LazyModel(lambda: _time.sleep(0.05) or object(), what="x", hint="y")

    slow = Slow()
    first = ensure_loaded(slow)
    assert first >= 50.0
    assert ensure_loaded(slow) == 0.0  # loaded: nothing more to report
    assert ensure_loaded(object()) == 0.0  # a model with nothing to load
