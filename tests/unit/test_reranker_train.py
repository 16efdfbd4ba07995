"""The pure parts of `hybrid-es reranker train`: splitting, mining, the reranked run, the weight."""

from __future__ import annotations

import pytest

from hybrid_es.encoders.reranker import rerank_passage
from hybrid_es.evaluation.reranker_train import (
    Candidate,
    TrainConfig,
    choose_weight,
    mine_groups,
    reranked_run,
    split_queries,
)
from hybrid_es.retrieval.fusion import blend


def test_split_is_seeded_disjoint_and_complete():
    ids = [f"q{i}" for i in range(50)]
    train, dev = split_queries(ids, 0.2, seed=13)
    assert len(dev) == 10 and len(train) == 40 and set(train) | set(dev) == set(ids)
    assert not set(train) & set(dev)
    assert split_queries(list(reversed(ids)), 0.2, seed=13) == (train, dev)  # order-free
    assert split_queries(ids, 0.2, seed=14) != (train, dev)
    assert split_queries(ids, 0.0, seed=13) == (sorted(ids), [])


def _cands(*docs: str) -> list[Candidate]:
    return [Candidate(f"{d}::c{i}", d, f"text of {d}") for i, d in enumerate(docs)]


def test_mining_takes_hard_negatives_from_the_first_stage_and_counts_skips():
    ranked = {
        "q1": _cands("A", "B", "A", "C", "D", "E"),  # A twice: one negative per document
        "q2": _cands("F", "G"),  # too few negatives
        "q3": _cands("B", "C", "D"),  # positive X missed by the first stage -> fallback text
    }
    qrels = {"q1": {"C": 1, "Z": 0}, "q2": {"F": 1}, "q3": {"X": 2, "Y": 1}, "q4": {"A": 1}}
    queries = {"q1": "one", "q2": "two", "q3": "three", "q4": " "}
    groups, skipped = mine_groups(
        ["q1", "q2", "q3", "q4"],
        queries,
        qrels,
        ranked,
        {"X": "fallback X"},
        negatives=2,
        negative_pool=3,
        seed=1,
    )
    assert skipped == {"no_query_text": 1, "no_positive_text": 1, "too_few_negatives": 1}
    by_q = {g.qid: g for g in groups}
    assert set(by_q) == {"q1", "q3"}
    assert by_q["q1"].positive == "text of C"
    # negatives come from the top 3 non-relevant documents (A, B, D), each once, never C
    assert set(by_q["q1"].negatives) <= {"text of A", "text of B", "text of D"}
    assert len(set(by_q["q1"].negatives)) == 2
    assert by_q["q3"].positive == "fallback X"
    again, _ = mine_groups(
        ["q1", "q2", "q3", "q4"], queries, qrels, ranked, {"X": "fallback X"},
        negatives=2, negative_pool=3, seed=1,
    )  # fmt: skip
    assert again == groups


def test_blend_orders_by_weighted_minmax_with_first_stage_tie_break():
    first = {"a": 3.0, "b": 2.0, "c": 1.0}
    ce = {"a": 0.1, "b": 0.9, "c": 0.5}
    assert blend(first, ce, 0.0) == ["a", "b", "c"]
    assert blend(first, ce, 1.0) == ["b", "c", "a"]
    # weight 0.5: a = 0.5*1 + 0.5*0 = .5, b = .5*.5 + .5*1 = .75, c = 0 + .5*.5 = .25
    assert blend(first, ce, 0.5) == ["b", "a", "c"]
    assert blend(first, {"a": 1.0, "b": 1.0, "c": 1.0}, 1.0) == ["a", "b", "c"]
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        blend(first, ce, 1.5)
    with pytest.raises(ValueError, match="same pool"):
        blend(first, {"a": 1.0}, 0.5)


def test_reranked_run_reorders_the_pool_and_keeps_the_tail():
    ranked = _cands("A", "B", "C", "D")
    run = reranked_run(ranked, [0.1, 0.9], weight=1.0)  # only A, B are reranked
    assert sorted(run, key=lambda d: -run[d]) == ["B", "A", "C", "D"]


def test_choose_weight_never_loses_to_the_first_stage_on_the_held_out_set():
    ranked = {"q1": _cands("N1", "P", "N2"), "q2": _cands("P", "N1", "N2")}
    qrels = {"q1": {"P": 1}, "q2": {"P": 1}}
    helpful = {"q1": [0.1, 0.9, 0.2], "q2": [0.9, 0.1, 0.2]}
    w, table = choose_weight(qrels, ranked, helpful)
    assert w > 0 and table[w] == 1.0 and table[0.0] < 1.0
    harmful = {"q1": [0.9, 0.1, 0.2], "q2": [0.1, 0.2, 0.9]}
    w, table = choose_weight(qrels, ranked, harmful)
    assert w == 0.0 and table[0.0] == max(table.values())


def test_config_rejects_bad_values_with_every_reason():
    with pytest.raises(ValueError) as e:
        TrainConfig(negatives=0, max_length=8, minutes=0)
    assert "negatives must be >= 1" in str(e.value) and "max_length" in str(e.value)
    assert "minutes" in str(e.value)


def test_rerank_passage_is_title_then_chunk_without_the_extractive_header():
    src = {
        "title": "T",
        "raw_chunk_text": "body",
        "search_payload": "Document: T. Identifiers: X.\nbody",
    }
    assert rerank_passage(src) == "T\nbody"
    assert rerank_passage({"title": "T", "raw_chunk_text": "T and more"}) == "T and more"
    assert rerank_passage({"search_payload": "only payload"}) == "only payload"


def test_dominant_script_tells_chinese_questions_from_english_claims():
    from hybrid_es.text.analysis import dominant_script

    assert dominant_script("无障碍淋浴间 房价") == "cjk"
    assert dominant_script("KYO-H12 无障碍淋浴间的房价是多少") == "cjk"
    assert dominant_script("Vitamin D deficiency raises TB risk") == "latin"
    assert dominant_script("the 京都 hotel's roll-in shower rate for April") == "latin"
    assert dominant_script("12345 !!") == "latin"


def test_a_trained_reranker_gates_on_the_scripts_it_was_trained_on(tmp_path):
    import json

    from hybrid_es.encoders.reranker import METADATA_FILE, CrossEncoderReranker

    (tmp_path / METADATA_FILE).write_text(
        json.dumps({"scripts": ["latin"], "max_length": 96, "blend_weight": 0.3})
    )
    ce = CrossEncoderReranker(str(tmp_path))  # nothing is loaded until the first score
    assert (ce.max_length, ce.weight) == (96, 0.3)
    assert ce.covers("roll-in shower") == (True, "latin")
    assert ce.covers("无障碍淋浴间") == (False, "cjk")
    hub = CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L6-v2")  # no metadata: no gate
    assert hub.covers("无障碍淋浴间") == (True, "cjk") and hub.weight == 1.0


def test_config_rejects_a_layer_count_or_distil_share_out_of_range():
    with pytest.raises(ValueError) as e:
        TrainConfig(layers=0, distill_weight=1.5)
    assert "layers must be >= 1" in str(e.value) and "distill_weight" in str(e.value)
    assert TrainConfig(layers=4, distill_weight=1.0).layers == 4


def _tiny_bert(layers: int):  # type: ignore[no-untyped-def]
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=64, hidden_size=16, num_hidden_layers=layers, num_attention_heads=2,
        intermediate_size=32, num_labels=1,
    )  # fmt: skip
    return BertForSequenceClassification(cfg).eval()


def test_keep_layers_drops_the_top_layers_and_keeps_the_rest_unchanged():
    import torch

    from hybrid_es.evaluation.reranker_train import keep_layers

    full = _tiny_bert(4)
    kept = [layer.state_dict() for layer in full.bert.encoder.layer[:2]]
    model = keep_layers(full, 2)
    assert len(model.bert.encoder.layer) == 2 and model.config.num_hidden_layers == 2
    for layer, before in zip(model.bert.encoder.layer, kept, strict=True):
        assert all(torch.equal(layer.state_dict()[k], v) for k, v in before.items())
    ids = torch.tensor([[2, 5, 7, 3]])
    assert model(input_ids=ids).logits.shape == (1, 1)  # still a working classifier
    with pytest.raises(ValueError, match=r"layers must lie in 1\.\.2"):
        keep_layers(model, 3)


def test_the_distilled_loss_is_the_hard_loss_plus_the_teachers_share():
    import torch

    from hybrid_es.evaluation.reranker_train import listwise_loss

    logits = torch.tensor([[2.0, 0.5, -1.0], [0.1, 0.3, 0.2]])
    hard = torch.nn.functional.cross_entropy(logits, torch.zeros(2, dtype=torch.long))
    assert torch.isclose(listwise_loss(logits, None, 0.5), hard)
    assert torch.isclose(listwise_loss(logits, logits.clone(), 0.0), hard)
    # A teacher that agrees with the student adds nothing; one that disagrees adds its share.
    assert torch.isclose(listwise_loss(logits, logits.clone(), 0.5), 0.5 * hard)
    other = torch.tensor([[0.0, 3.0, 0.0], [0.1, 0.3, 0.2]])
    p = torch.softmax(other[0], -1)
    kl = float((p * (p.log() - torch.log_softmax(logits[0], -1))).sum()) / 2  # batch mean
    got = listwise_loss(logits, other, 0.5)
    assert abs(float(got) - (0.5 * float(hard) + 0.5 * kl)) < 1e-5
    assert float(listwise_loss(logits, other, 1.0)) == pytest.approx(kl, abs=1e-5)


def test_with_teacher_records_the_teachers_logits_for_each_groups_passages():
    import torch

    from hybrid_es.evaluation.reranker_train import Group, encode_pairs, with_teacher

    class Tok:
        def __call__(self, queries, passages, **kw):  # type: ignore[no-untyped-def]
            pairs = zip(queries, passages, strict=True)
            ids = [[2, len(q) % 60 + 3, len(p) % 60 + 3, 1] for q, p in pairs]
            return {"input_ids": torch.tensor(ids)}

    teacher = _tiny_bert(2)
    groups = [
        Group("q1", "shower", "roll-in shower", ("brochure", "rates")),
        Group("q2", "x", "y", ("zz",)),
    ]
    ticks: list[int] = []
    out = with_teacher(groups, teacher, Tok(), 32, on_group=lambda: ticks.append(1))
    assert [len(g.teacher) for g in out] == [3, 2] and len(ticks) == 2
    assert [g.passages for g in out] == [g.passages for g in groups]  # nothing else changes
    enc = encode_pairs(Tok(), [("shower", p) for p in groups[0].passages], 32)
    want = teacher(**enc).logits.view(-1).tolist()
    assert list(out[0].teacher) == pytest.approx(want)
