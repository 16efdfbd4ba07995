"""`hybrid-es reranker train` end to end on the tiny BEIR collection: mining from the real first
stage, a seeded, bounded fine-tune, the held-out blend weight, a folder the reranker loads."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from hybrid_es.encoders.embedder import make_embedder
from hybrid_es.encoders.reranker import CrossEncoderReranker
from hybrid_es.evaluation.runner import EVAL_PRINCIPAL
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from tests.cli_in_process import run_cli

pytestmark = pytest.mark.integration
TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny-beir"


def _train(out: Path, index: str, base: str, *extra: str) -> dict:
    """One seeded, bounded ``hybrid-es reranker train --json`` in this process
    (tests/cli_in_process.py: the console script's entry point, without a fresh process's 10 s of
    imports); the metadata it prints."""
    r = run_cli(
        "reranker", "train", str(TINY),
        "--out", str(out), "--split", "test", "--base", base, "--index", index,
        "--steps", "3", "--negatives", "2", "--negative-pool", "4",
        "--dev-fraction", "0.25", "--rerank-depth", "5", "--json", *extra,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def test_train_writes_a_loadable_reproducible_model(es, bootstrapped, tmp_path, tiny_cross_encoder):
    index = f"hybrid-es-chunks-eval-test-{uuid.uuid4().hex[:8]}"
    try:
        meta = _train(tmp_path / "a", index, tiny_cross_encoder)
        assert meta["training"]["steps"] == 3 and meta["training"]["stopped_by"] == "steps"
        assert meta["train_queries"] == 3 and meta["dev_queries"] == 1 and meta["groups"] > 0
        assert len(meta["dev_ndcg10_by_weight"]) == 11
        assert meta["blend_weight"] in {i / 10 for i in range(11)}
        assert meta["max_length"] == 128 and "--steps 3 " in meta["replay"]
        saved = json.loads((tmp_path / "a" / "hybrid_es_reranker.json").read_text())
        assert saved == meta
        ce = CrossEncoderReranker(str(tmp_path / "a"))
        assert ce.max_length == 128 and ce.weight == meta["blend_weight"]
        scores = ce.score("hotel cancellation", ["free cancellation until 48 hours", "brochure"])
        assert len(scores) == 2 and all(0.0 <= s <= 1.0 for s in scores)
        # The script gate: trained on English queries (q1-q3), it leaves Chinese ones alone.
        assert meta["scripts"] == ["latin"]
        searcher = HybridSearcher(
            es,
            make_embedder("minilm"),
            index=index,
            corpus_state_index=f"{Settings().corpus_state_index}-eval",
            reranker=ce,
        )
        zh = searcher.search("无障碍淋浴间 房价", EVAL_PRINCIPAL, top_k=3)
        assert not zh.reranked and "cjk script" in zh.rerank_note and zh.hits
        en = searcher.search("roll-in shower rate", EVAL_PRINCIPAL, top_k=3)
        assert en.reranked and all(h.rerank_score is not None for h in en.hits)
        # Seeded: the same command gives the same weights.
        again = _train(tmp_path / "b", index, tiny_cross_encoder)
        assert again["dev_ndcg10_by_weight"] == meta["dev_ndcg10_by_weight"]
        assert (tmp_path / "a" / "model.safetensors").read_bytes() == (
            tmp_path / "b" / "model.safetensors"
        ).read_bytes()
        # A non-empty output folder is not overwritten without --force.
        r = run_cli(
            "reranker", "train", str(TINY), "--out", str(tmp_path / "a"), "--split", "test",
            "--index", index,
        )  # fmt: skip
        assert r.returncode != 0 and "--force" in r.stderr
    finally:
        es.delete_index(index)


def test_a_shallower_student_is_distilled_from_a_teacher(
    es, bootstrapped, tmp_path, tiny_cross_encoder
):
    """``--layers 1 --teacher T``: the saved model has one layer, loads and scores, and the
    metadata says how it was made; without the teacher the same seed trains other weights."""
    index = f"hybrid-es-chunks-eval-test-{uuid.uuid4().hex[:8]}"
    try:
        args = ("--layers", "1", "--teacher", tiny_cross_encoder, "--distill-weight", "0.7")
        meta = _train(tmp_path / "s", index, tiny_cross_encoder, *args)
        assert meta["layers"] == 1 and meta["teacher"] == tiny_cross_encoder
        assert meta["config"]["layers"] == 1 and meta["config"]["distill_weight"] == 0.7
        saved = json.loads((tmp_path / "s" / "config.json").read_text())
        assert saved["num_hidden_layers"] == 1
        ce = CrossEncoderReranker(str(tmp_path / "s"))
        assert len(ce.score("hotel cancellation", ["free cancellation", "brochure"])) == 2
        plain = _train(tmp_path / "p", index, tiny_cross_encoder, "--layers", "1")
        assert plain["teacher"] is None
        assert (tmp_path / "s" / "model.safetensors").read_bytes() != (
            tmp_path / "p" / "model.safetensors"
        ).read_bytes()
        r = run_cli(
            "reranker", "train", str(TINY), "--out", str(tmp_path / "x"),
            "--teacher", str(tmp_path / "missing"),
        )  # fmt: skip
        assert r.returncode != 0 and "--teacher" in r.stderr and "not a folder" in r.stderr
        r = run_cli(
            "reranker", "train", str(TINY), "--out", str(tmp_path / "y"), "--split", "test",
            "--base", tiny_cross_encoder, "--layers", "3",
        )  # fmt: skip
        said = " ".join(r.stderr.split())  # the terminal width wraps a long model path
        assert r.returncode != 0 and "has 2 layers" in said and "between 1 and 2" in said
        assert not (tmp_path / "y").exists()
    finally:
        es.delete_index(index)
