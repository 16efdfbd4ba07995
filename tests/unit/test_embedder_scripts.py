"""The dense leg's script gate: an embedder says which scripts it was trained on."""

from __future__ import annotations

from hybrid_es.encoders.embedder import MINILM_SCRIPTS, SentenceTransformerEmbedder, covers
from hybrid_es.evaluation.metering import HashEmbedder


def test_an_english_embedder_covers_latin_text_only() -> None:
    emb = SentenceTransformerEmbedder("unused-path")  # the model loads lazily: never here
    emb.scripts = MINILM_SCRIPTS
    assert covers(emb, "roll-in shower rate at KYO-H12") == (True, "latin")
    assert covers(emb, "无障碍淋浴间的房价是多少") == (False, "cjk")
    # A Latin question that names a CJK place is still Latin (under 30 % CJK letters).
    assert covers(emb, "What is the rate of the 京都 hotel for April?") == (True, "latin")


def test_an_embedder_that_names_no_scripts_covers_everything() -> None:
    assert covers(SentenceTransformerEmbedder("unused-path"), "无障碍淋浴间") == (True, "cjk")
    assert covers(HashEmbedder(), "无障碍淋浴间") == (True, "cjk")
