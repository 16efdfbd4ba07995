"""The growth benchmark's corpus of any size, made from the pool of real chunks.

Chunk ``i`` of a corpus of ``n`` is pool chunk ``perm[i % pool]``; up to the pool's size it is
that chunk unchanged, beyond it a perturbed copy (about 10 % of its words dropped, its vector
moved by Gaussian noise and renormalised). Every chunk gets a tenant at random and an ACL the
benchmark's principal passes. Everything is drawn per block of :data:`BLOCK` chunks from the seed
and the block number, so a block can be made again: the bulk load generates the corpus block by
block, and the brute force that judges kNN recall draws the same blocks again.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.scale_corpus import GROUP, Pool
from hybrid_es.text.folding import fold_for_matching

BLOCK = 1000
"""Chunks generated together (one noise draw per block: the brute force redraws it)."""

Block = tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]


def perturb(src: dict[str, Any], rnd: random.Random, copy: int) -> None:
    """Make ``src`` the ``copy``-th perturbed copy of its pool chunk: ~10 % of the words of its
    search text and of its raw text dropped, its doc id suffixed ``~copy``."""
    words = src["search_payload"].split()
    kept = [w for w in words if rnd.random() > 0.1] or words
    src["search_payload"] = " ".join(kept)
    if "search_folded" in src:  # what BM25 reads (text.folding)
        src["search_folded"] = fold_for_matching(src["search_payload"])
    raw = src["raw_chunk_text"].split()
    src["raw_chunk_text"] = " ".join(w for w in raw if rnd.random() > 0.1) or src["raw_chunk_text"]
    src["doc_id"] = f"{src['doc_id']}~{copy}"


def assign(src: dict[str, Any], rnd: random.Random, n: int, tenant: int) -> None:
    """The fields every chunk of the corpus gets: its id, tenant, ACL, validity and deleted flag."""
    src["chunk_id"] = f"s{n}"
    src["tenant"] = f"t{tenant}"
    src["acl_groups"] = [GROUP] if rnd.random() < 0.7 else [GROUP, "ops"]
    src["acl_users"] = [f"u{rnd.randrange(1000)}"]
    src["valid_from"] = f"20{rnd.randrange(15, 25)}-01-01"
    src["deleted"] = False


class Synth:
    """Chunk ``i`` of a corpus of ``n``: deterministic per block of BLOCK chunks."""

    def __init__(self, pool: Pool, n: int, tenants: int, noise: float, seed: int) -> None:
        self.pool, self.n, self.tenants, self.noise, self.seed = pool, n, tenants, noise, seed
        self.perm = np.random.default_rng(seed).permutation(len(pool.records))
        self.blocks = math.ceil(n / BLOCK)

    @property
    def real(self) -> int:
        return min(self.n, len(self.pool.records))

    def block(self, b: int) -> Block:
        """Chunk numbers, pool indices, tenants and vectors (float32) of block ``b``."""
        i = np.arange(b * BLOCK, min(self.n, (b + 1) * BLOCK))
        d = len(self.pool.records)
        base = self.perm[i % d]
        rng = np.random.default_rng([self.seed, b])
        tenant = rng.integers(self.tenants, size=len(i))
        vecs = self.pool.vectors[base].copy()
        noise = rng.standard_normal((len(i), vecs.shape[1]), dtype=np.float32) * self.noise
        copies = (i // d) > 0
        if copies.any():
            v = vecs[copies] + noise[copies]
            vecs[copies] = v / np.linalg.norm(v, axis=1, keepdims=True)
        return i, base, tenant, vecs.astype(np.float32)

    def actions(self, index: str) -> Iterator[dict[str, Any]]:
        """The bulk actions, generated block by block (memory stays bounded)."""
        d = len(self.pool.records)
        for b in range(self.blocks):
            i, base, tenant, vecs = self.block(b)
            rnd = random.Random(self.seed * 1_000_003 + b)
            for k in range(len(i)):
                n = int(i[k])
                src = dict(self.pool.records[int(base[k])])
                if n >= d:  # a perturbed copy: ~10 % of the words dropped
                    perturb(src, rnd, n // d)
                assign(src, rnd, n, int(tenant[k]))
                src["embedding"] = vecs[k]
                yield {"_index": index, "_id": str(n), "_source": src}

    def exact_top(
        self, qvecs: NDArray[np.float32], qtenant: NDArray[np.int64], k: int
    ) -> NDArray[np.int64]:
        """Brute force: the ``k`` best chunk numbers per query among its tenant's chunks
        (cosine = dot product: every vector is unit length)."""
        return self.exact_best(qvecs, qtenant, k)[0]

    def exact_best(
        self, qvecs: NDArray[np.float32], qtenant: NDArray[np.int64], k: int
    ) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """:meth:`exact_top`'s chunk numbers, best first, and their cosines to the query."""
        nq = len(qvecs)
        best_s = np.full((nq, k), -np.inf, dtype=np.float32)
        best_i = np.full((nq, k), -1, dtype=np.int64)
        q = qvecs.astype(np.float32)
        for b in range(self.blocks):
            i, _, tenant, vecs = self.block(b)
            s = vecs @ q.T  # (block, nq)
            s[tenant[:, None] != qtenant[None, :]] = -np.inf
            s = s.T  # (nq, block)
            all_s = np.concatenate([best_s, s], axis=1)
            all_i = np.concatenate([best_i, np.broadcast_to(i, s.shape)], axis=1)
            top = np.argpartition(-all_s, k - 1, axis=1)[:, :k]
            best_s = np.take_along_axis(all_s, top, axis=1)
            best_i = np.take_along_axis(all_i, top, axis=1)
        order = np.argsort(-best_s, axis=1)
        return np.take_along_axis(best_i, order, axis=1), np.take_along_axis(best_s, order, axis=1)
