"""``HYBRID_ES_EMBEDDER=auto``: the embedder of a new index is chosen from the scripts of its
first documents, and an index's recorded model decides from then on (issue 26)."""

from __future__ import annotations

import pytest

from hybrid_es.encoders.embedder_choice import (
    AUTO,
    AUTO_SHARE,
    ENGLISH,
    MULTILINGUAL,
    SAMPLE,
    Embedders,
)
from hybrid_es.errors import ModelError
from hybrid_es.evaluation.metering import HashEmbedder

ZH = "无障碍双床房每晚价格含早餐"
EN = "The accessible twin room rate per night, breakfast included."


class Named(HashEmbedder):
    def __init__(self, name: str) -> None:
        self.model_id = f"test/{name}"


def auto() -> tuple[Embedders, list[str]]:
    made: list[str] = []

    def make(name: str) -> Named:
        made.append(name)
        return Named(name)

    return Embedders(make=make), made


def test_english_documents_get_the_english_model_and_nothing_else_is_made() -> None:
    es, made = auto()
    choice = es.for_documents([EN] * 10)
    assert choice.name == ENGLISH and choice.embedder.model_id == f"test/{ENGLISH}"
    assert "0 of the first 10" in choice.reason
    assert made == [ENGLISH]  # the multilingual model is never built for an English corpus


def test_chinese_documents_get_the_multilingual_model() -> None:
    es, made = auto()
    choice = es.for_documents([ZH] * 3)
    assert choice.name == MULTILINGUAL and "3 of the first 3" in choice.reason
    assert made == [MULTILINGUAL]


@pytest.mark.parametrize(("chinese", "want"), [(6, ENGLISH), (7, MULTILINGUAL), (64, MULTILINGUAL)])
def test_the_share_that_turns_the_choice(chinese: int, want: str) -> None:
    es, _ = auto()
    sample = [ZH] * chinese + [EN] * (SAMPLE - chinese)
    assert (chinese / SAMPLE >= AUTO_SHARE) == (want == MULTILINGUAL)  # 6.4 of 64 turns it
    assert es.for_documents(sample).name == want


def test_only_the_first_documents_are_read() -> None:
    es, _ = auto()
    assert es.for_documents([EN] * SAMPLE + [ZH] * 1000).name == ENGLISH


def test_mixed_script_documents_are_read_by_their_dominant_script() -> None:
    es, _ = auto()
    mixed = f"KYO-H12 {ZH}"  # an ID in Latin letters inside Chinese text: Chinese
    assert es.for_documents([mixed]).name == MULTILINGUAL
    assert es.for_documents([f"{EN} 含早餐"]).name == ENGLISH  # a few characters: English
    assert es.for_documents([]).name == ENGLISH


def test_an_index_keeps_the_model_it_records() -> None:
    es, _ = auto()
    assert es.recorded("i", f"test/{MULTILINGUAL}").model_id == f"test/{MULTILINGUAL}"
    assert es.recorded("i", f"test/{ENGLISH}").model_id == f"test/{ENGLISH}"
    assert es.recorded("i", None) is es.default  # nothing written yet
    with pytest.raises(ModelError, match="was built with acme/other") as err:
        es.recorded("i", "acme/other")
    assert "HYBRID_ES_EMBEDDER" in (err.value.hint or "")


def test_a_fixed_embedder_serves_every_index() -> None:
    fixed = Named("fixed")
    es = Embedders.of(fixed)
    assert not es.auto and es.name == "test/fixed" and es.default is fixed
    assert es.for_documents([ZH]).embedder is fixed
    assert es.recorded("i", "anything") is fixed  # the index checks refuse a mismatch
    assert Embedders.of(es) is es
    assert Embedders().name == AUTO


def test_a_fixed_minilm_serves_an_index_another_minilm_runtime_wrote_on_that_runtime() -> None:
    # Issue 40: new MiniLM indices are int8 now; a float32 index keeps float32, also under a
    # fixed HYBRID_ES_EMBEDDER=minilm (before, that refused every float32 index).
    from hybrid_es.encoders.embedder import DEFAULT_RUNTIME, MINILM_ID, MINILM_INT8_ID

    assert DEFAULT_RUNTIME == "onnx-int8"
    made: list[str] = []

    def on(runtime: str) -> Named:
        made.append(runtime)
        emb = Named(runtime)
        emb.model_id = MINILM_ID if runtime == "onnx" else MINILM_INT8_ID
        return emb

    fixed = Named("minilm-int8")
    fixed.model_id = MINILM_INT8_ID
    es = Embedders.of(fixed)
    es.make_minilm = on
    assert es.recorded("new", None) is fixed and es.recorded("int8", MINILM_INT8_ID) is fixed
    old = es.recorded("float32", MINILM_ID)
    assert old.model_id == MINILM_ID and made == ["onnx"]
    assert es.recorded("float32", MINILM_ID) is old  # made once
    assert es.recorded("other", "acme/other") is fixed  # not MiniLM: the checks refuse it
