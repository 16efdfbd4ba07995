"""The pure parts of `hybrid-es embedder train`: mining, batching, the false-negative mask, the
schedule, the held-out runs; and the index name an embedder path gets."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from hybrid_es.evaluation.collection import default_index, embedder_slug
from hybrid_es.evaluation.embedder_train import (
    EmbedderTrainConfig,
    Example,
    Passage,
    batch_columns,
    doc_run,
    false_negative_mask,
    first_chunks,
    fit_to_budget,
    heldout_ndcg,
    lr_factor,
    make_batches,
    mine_examples,
    top_chunks,
)
from hybrid_es.evaluation.reranker_train import Candidate

PASSAGES = [
    Passage(f"{d}::c{n}", d, n, f"{d} chunk {n}")
    for d, chunks in {"A": 2, "B": 1, "C": 2, "D": 1, "E": 1, "X": 2}.items()
    for n in range(chunks)
]


def _ranked(*chunk_ids: str) -> list[Candidate]:
    return [Candidate(c, c.split("::")[0], "first-stage text, not used") for c in chunk_ids]


def test_mining_uses_the_embedded_text_best_chunk_and_counts_skips():
    ranked = {
        "q1": _ranked("A::c1", "A::c0", "B::c0", "C::c1", "D::c0", "E::c0"),
        "q2": _ranked("C::c0"),  # too few negatives
        "q3": _ranked("B::c0", "C::c1", "D::c0"),  # X missed: its first chunk is the positive
    }
    qrels = {"q1": {"C": 1, "Z": 0}, "q2": {"C": 1}, "q3": {"X": 2, "Y": 1}, "q4": {"A": 1}}
    queries = {"q1": "one", "q2": "two", "q3": "three", "q4": " "}
    kwargs = {"negatives": 2, "negative_pool": 3, "seed": 1}
    examples, skipped = mine_examples(
        ["q1", "q2", "q3", "q4"], queries, qrels, ranked, PASSAGES, **kwargs
    )
    assert skipped == {"no_query_text": 1, "no_positive_text": 1, "too_few_negatives": 1}
    by_q = {e.qid: e for e in examples}
    assert set(by_q) == {"q1", "q3"}
    # the best-ranked chunk of the relevant document, with the passage's own (embedded) text
    assert (by_q["q1"].positive_doc, by_q["q1"].positive) == ("C", "C chunk 1")
    # negatives: from the top 3 non-relevant documents (A, B, D), each once, best chunk each
    assert set(by_q["q1"].negatives) <= {("A", "A chunk 1"), ("B", "B chunk 0"), ("D", "D chunk 0")}
    assert len({d for d, _ in by_q["q1"].negatives}) == 2
    assert (by_q["q3"].positive_doc, by_q["q3"].positive) == ("X", "X chunk 0")
    again, _ = mine_examples(["q1", "q2", "q3", "q4"], queries, qrels, ranked, PASSAGES, **kwargs)
    assert again == examples


def test_first_chunks_take_the_lowest_chunk_number():
    shuffled = list(reversed(PASSAGES))
    assert {d: p.chunk_no for d, p in first_chunks(shuffled).items()} == dict.fromkeys("ABCDEX", 0)


def _ex(qid: str, doc: str, *negs: str) -> Example:
    return Example(qid, f"query {qid}", doc, f"text {doc}", tuple((n, f"text {n}") for n in negs))


def test_batches_never_repeat_a_query_or_a_positive_and_keep_every_example():
    examples = [_ex("q1", "A"), _ex("q1", "B"), _ex("q2", "A"), _ex("q3", "C"), _ex("q4", "D")]
    batches = make_batches(examples, 3, seed=5)
    assert sorted((e.qid, e.positive_doc) for b in batches for e in b) == sorted(
        (e.qid, e.positive_doc) for e in examples
    )
    for b in batches:
        assert len(b) <= 3
        assert len({e.qid for e in b}) == len(b) and len({e.positive_doc for e in b}) == len(b)
    assert make_batches(examples, 3, seed=5) == batches  # seeded
    assert len(make_batches(examples, 16, seed=5)) == 2  # q1 twice: two batches at least


def test_the_mask_hides_passages_relevant_to_a_row_that_are_not_its_positive():
    batch = [_ex("q1", "A", "B"), _ex("q2", "B", "C")]
    assert [d for d, _ in batch_columns(batch)] == ["A", "B", "B", "C"]
    relevant = {"q1": {"A"}, "q2": {"B", "C"}}
    # q2's positive B is q1's hard negative: a true negative for q1, but for q2 it is relevant
    # (column 2, not q2's own positive column 1), and so is C (q2's own mined negative, if the
    # qrels say so): both are masked in q2's row.
    assert false_negative_mask(batch, relevant) == [
        [False, False, False, False],
        [False, False, True, True],
    ]


def test_schedule_warms_up_then_decays_to_zero_and_fits_the_budget():
    factors = [lr_factor(s, 100, 0.1) for s in range(101)]
    assert factors[0] == pytest.approx(0.1) and factors[9] == pytest.approx(1.0)
    assert factors[10] == pytest.approx(1.0) and factors[100] == 0.0
    assert all(a >= b for a, b in itertools.pairwise(factors[9:]))
    assert fit_to_budget(1000, 1.0, 2.0) == 30  # 60 s at 2 s a step
    assert fit_to_budget(10, 60.0, 0.1) == 10  # never longer than planned
    assert fit_to_budget(1000, 0.01, 5.0) == 6  # never shorter than 6


def test_config_rejects_nonsense():
    with pytest.raises(ValueError, match="batch_size"):
        EmbedderTrainConfig(batch_size=1)
    with pytest.raises(ValueError, match="negative_pool"):
        EmbedderTrainConfig(negatives=5, negative_pool=3)
    assert EmbedderTrainConfig(negatives=0).negatives == 0  # in-batch negatives only


def test_top_chunks_is_exact_with_ties_to_the_lower_row():
    p = np.asarray([[1, 0], [0, 1], [0.6, 0.8], [1, 0]], dtype=np.float32)
    q = np.asarray([[1, 0], [0, 1]], dtype=np.float32)
    assert top_chunks(q, p, 3) == [[0, 3, 2], [1, 2, 0]]
    assert top_chunks(q, p, 10)[0] == [0, 3, 2, 1]  # depth past the corpus: all of it


def test_heldout_scores_dense_alone_and_rrf_with_bm25_by_best_chunk():
    doc_of = {"a0": "A", "a1": "A", "b0": "B", "c0": "C"}
    qrels = {"q": {"B": 1}}
    dense = {"q": ["a0", "a1", "b0"]}  # A, then B: B at rank 2
    assert doc_run(dense["q"], doc_of) == {"A": 2.0, "B": 1.0}
    bm25 = {"q": ["b0", "c0"]}  # RRF: b0 is in both legs, so B comes first
    scores = heldout_ndcg(qrels, dense, bm25, doc_of)
    assert scores["dense"] == pytest.approx(round(1 / np.log2(3), 4))
    assert scores["hybrid"] == 1.0


def test_an_embedder_path_gets_a_short_valid_index_name(tmp_path):
    model = tmp_path / "SciFact_Bi.Encoder"
    model.mkdir()
    slug = embedder_slug(str(model))
    assert re.fullmatch(r"scifact_bi\.encoder-[0-9a-f]{8}", slug)
    assert embedder_slug(str(tmp_path / "other" / "SciFact_Bi.Encoder")) != slug  # by path
    assert embedder_slug("minilm") == "minilm" and embedder_slug("e5") == "e5"
    assert embedder_slug("sentence-transformers/all-MiniLM-L6-v2") == (
        "sentence-transformers-all-minilm-l6-v2"
    )
    name = default_index(tmp_path / "scifact", str(model))
    assert name == f"hybrid-es-chunks-eval-scifact-{slug}"
    assert name == name.lower() and "/" not in name and len(name) < 100
