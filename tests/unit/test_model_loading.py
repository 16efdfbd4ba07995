"""A model that cannot be loaded is a clear ModelError, not a library traceback."""

import pytest

from hybrid_es.embedder import SentenceTransformerEmbedder
from hybrid_es.errors import ModelError
from hybrid_es.reranker import CrossEncoderReranker


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
