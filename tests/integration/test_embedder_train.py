"""`hybrid-es embedder train` end to end on the tiny BEIR collection: mining from the real first
stage, a seeded, bounded fine-tune, held-out numbers before and after, a folder that `eval
--embedder PATH` ingests and searches under a short, valid index name."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from hybrid_es.encoders.embedder import make_embedder
from hybrid_es.evaluation.collection import default_index
from hybrid_es.evaluation.embedder_train import METADATA_FILE
from tests.cli_in_process import run_cli

pytestmark = pytest.mark.integration
TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny-beir"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``hybrid-es ARGS`` in this process (tests/cli_in_process.py): the console script's entry
    point, without the 10 s of imports a fresh process pays at each of this module's runs."""
    return run_cli(*args)


def _train(out: Path, index: str) -> dict:
    r = _cli(
        "embedder", "train", str(TINY), "--out", str(out), "--split", "test", "--index", index,
        "--steps", "2", "--batch-size", "2", "--negatives", "1", "--negative-pool", "3",
        "--max-length", "64", "--dev-fraction", "0.25", "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def test_train_writes_a_reproducible_model_that_eval_takes_by_path(es, bootstrapped, tmp_path):
    index = f"hybrid-es-chunks-eval-test-{uuid.uuid4().hex[:8]}"
    model = tmp_path / "Tiny_Model"
    by_path = default_index(TINY, str(model))
    try:
        meta = _train(model, index)
        assert meta["training"]["steps"] == 2 and meta["training"]["stopped_by"] == "steps"
        assert meta["train_queries"] == 3 and meta["dev_queries"] == 1 and meta["examples"] > 0
        assert meta["passages"] == 9 and meta["training"]["loss_curve"]
        dev = meta["dev_ndcg10"]
        assert dev["before_from"] == "the index's stored vectors"
        for when in ("before", "after"):
            assert set(dev[when]) == {"dense", "hybrid"}
            assert all(0.0 <= v <= 1.0 for v in dev[when].values())
        assert meta["improved"] == (dev["after"]["hybrid"] > dev["before"]["hybrid"])
        assert "--steps 2 " in meta["replay"]
        assert json.loads((model / METADATA_FILE).read_text()) == meta
        emb = make_embedder(str(model))
        assert emb.dims == 384 and emb.embed_queries(["roll-in shower"]).shape == (1, 384)
        # Seeded: the same command gives the same weights and the same held-out numbers.
        again = _train(tmp_path / "b", index)
        assert again["dev_ndcg10"]["after"] == dev["after"]
        assert (model / "model.safetensors").read_bytes() == (
            tmp_path / "b" / "model.safetensors"
        ).read_bytes()
        # A model path is an embedder name: eval ingests into an index named after it.
        assert by_path.startswith("hybrid-es-chunks-eval-tiny-beir-tiny_model-")
        r = _cli("eval", str(TINY), "--embedder", str(model), "--pipelines", "bm25,dense,hybrid",
                 "--json")  # fmt: skip
        assert r.returncode == 0, r.stderr[-3000:]
        results = {x["pipeline"]: x for x in json.loads(r.stdout)["results"]}
        assert set(results) == {"bm25", "dense", "hybrid"}
        assert all(x["queries"] == 4 for x in results.values())
        assert es.index_exists(by_path)
        # A non-empty output folder is not overwritten without --force.
        r = _cli("embedder", "train", str(TINY), "--out", str(model), "--split", "test")
        assert r.returncode != 0 and "--force" in r.stderr
    finally:
        es.delete_index(index)
        if es.index_exists(by_path):
            es.delete_index(by_path)
