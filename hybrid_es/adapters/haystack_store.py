"""A Haystack ``DocumentStore`` over hybrid-es, bound to one principal: the write side of a
Haystack app (``DocumentWriter``), and what :class:`~hybrid_es.adapters.haystack.HybridEsRetriever`
can be built from.

::

    store = HybridEsDocumentStore(acl_groups=["*"])
    indexing = Pipeline()
    indexing.add_component("writer", DocumentWriter(document_store=store))
    with acting_as(Principal(tenant="acme", user_id="indexer", roles=(WRITER_ROLE,))):
        indexing.run({"writer": {"documents": [Document(content="...", meta={"team": "ops"})]}})

**The caller is given at run time.** A store holds no principal of its own unless it is built
with one in code: every operation acts as the caller of the enclosing
:func:`~hybrid_es.adapters.acting.acting_as` block (or of the application's registered resolver),
and is refused without one. A saved pipeline therefore holds nobody's identity, and loading it
grants no one anyone's rights. Writes go through :class:`~hybrid_es.ingest.indexer.Ingestor`
into the caller's tenant only, under the tenant's write authority (``ingest.authority``: the
writer role writes any document; a member creates new ones and replaces or deletes only those
it may read); reads through :meth:`HybridSearcher.records` see exactly what the caller may read
now (the same policy filter as a search). Another tenant's document of the same id is another
document: it is never listed, overwritten or deleted, and it looks exactly as an id that does not
exist; so does a document of the tenant that the caller may not delete.

**A Haystack Document is one record**: id = the Document's id, body = its ``content``, metadata
= its ``meta``, ACL = the store's ``acl_users``/``acl_groups`` (None: the deployment's
``HYBRID_ES_DEFAULT_ACL``). The store does not split it further, so ``filter_documents`` returns
what was written; split long texts upstream (``DocumentSplitter``), as for every Haystack store:
the embedder reads the first few hundred tokens of a record. Records that another writer split
into several chunks are returned as one Document, their texts joined (overlaps included).
Embeddings the caller computed are not stored: hybrid-es embeds every record with its own model
(the index's), and a warning says how many were ignored. ``filter_documents`` returns
``embedding`` and ``score`` None.

**Counts and duplicates are the writer's view.** ``count_documents`` counts, and the duplicate
policies check against, the live documents the caller may replace or delete: every live
document of the tenant for its writer role, those whose ACL admits it for a member
(``Ingestor.count_writable``). So an indexer counts what it wrote, whatever ACL it gave it.
``filter_documents`` is a read: what the caller may read now. ``write_documents(policy=...)``:
``NONE`` is ``FAIL``, as in Haystack's own stores; ``FAIL`` raises DuplicateDocumentError before
anything is written; ``SKIP`` writes only new ids; ``OVERWRITE`` writes a new revision of an
existing id (the Ingestor's correction, the earlier text kept as an audit copy; an unchanged one
is left as it is). An id the caller may not replace is not a duplicate in its view: its write is
refused and reported in the HaystackWriteError, with the others that failed.

**Failures surface.** A Document that cannot be written (no text, metadata that cannot be stored,
a value of the wrong type in a declared filterable field, an id hybrid-es refuses) is reported:
the others are written, then :class:`HaystackWriteError` lists every failure with its reason.

**Serialisation** (``to_dict``/``from_dict``, so ``Pipeline.dumps()``/``loads()``): the ACL
and the :class:`~hybrid_es.settings.Settings` that build the searcher and ingestor, without any
principal, credential or connection setting: the credentials and where to connect are Haystack
``Secret`` environment variable references (``HYBRID_ES_URL``, ``HYBRID_ES_CLOUD_ID``,
``HYBRID_ES_USERNAME``, ``HYBRID_ES_API_KEY``, ``HYBRID_ES_PASSWORD``,
``HYBRID_ES_BEARER_AUTH``, ``HYBRID_ES_TRACE_HASH_KEY`` by default), read where the pipeline is
loaded, never inline values. A principal found in a pipeline saved by an earlier release is
dropped when it is loaded (with a warning).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from haystack import Document as HaystackDocument
from haystack import default_from_dict, default_to_dict
from haystack.document_stores.errors import DocumentStoreError, DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils import Secret, deserialize_secrets_inplace
from pydantic import ValidationError

from hybrid_es.adapters.acting import current_principal
from hybrid_es.adapters.haystack_filters import check_haystack_filters
from hybrid_es.adapters.provenance import NAMESPACE
from hybrid_es.errors import BulkIndexError, ConfigurationError
from hybrid_es.ingest.chunking import Chunk
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal, Record
from hybrid_es.retrieval.records import MAX_RECORDS
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings

logger = logging.getLogger(__name__)

CREDENTIALS = ("password", "api_key", "bearer_auth", "trace_hash_key")
"""The settings that are secrets: serialised as ``Secret`` references, never as values."""
CONNECTION = ("url", "cloud_id", "username")
"""Where to connect, and as whom: serialised as environment references too, so that a saved
pipeline connects where its loader's environment says, with its loader's credentials."""
REFERENCED = (*CONNECTION, *CREDENTIALS)
"""Every setting a serialised component holds as a reference to its ``HYBRID_ES_*`` variable."""
# Nor where start-local's .env is: a loaded pipeline must not read a file on the machine that
# loads it (``auto``: whatever folder it runs in) unless that process asks itself.
_NOT_SERIALISED = (*REFERENCED, "start_local_env")


class HaystackWriteError(BulkIndexError, DocumentStoreError):
    """Some documents were not written (the rest were): ``failed`` lists each with its
    ``doc_id`` and ``reason``. Both hybrid-es's BulkIndexError and Haystack's
    DocumentStoreError."""


def default_secrets() -> dict[str, Secret]:
    """Each connection and credential setting (:data:`REFERENCED`) as a non-strict reference to
    its ``HYBRID_ES_*`` variable."""
    return {
        name: Secret.from_env_var(f"HYBRID_ES_{name.upper()}", strict=False) for name in REFERENCED
    }


def settings_to_dict(settings: Settings) -> dict[str, Any]:
    """The settings that differ from the defaults, JSON-ready, without where to connect or any
    credential (:data:`REFERENCED`: those are environment references)."""
    out = settings.model_dump(mode="json", exclude_defaults=True, exclude=set(_NOT_SERIALISED))
    if settings.filterable_fields:
        out["filterable_fields"] = ",".join(str(f) for f in settings.filterable_fields)
    return out


def build_settings(
    spec: Settings | Mapping[str, Any] | None, secrets: Mapping[str, Secret]
) -> Settings:
    """The Settings for ``spec``: itself, a mapping's values over the environment's, or the
    environment's alone (None), with each credential that ``spec`` does not hold read from its
    secret where that resolves."""
    if isinstance(spec, Settings):
        return spec
    values = dict(spec or {})
    for name, secret in secrets.items():
        if name not in REFERENCED:
            raise ConfigurationError(
                f"unknown secret {name!r}: the settings held as references are "
                f"{', '.join(REFERENCED)}"
            )
        resolved = secret.resolve_value()
        if resolved is not None and name not in values:
            values[name] = resolved
    return Settings(**values)


def whole_document(doc: Document) -> list[Chunk]:
    """The store's chunker: a Haystack Document is one record (split upstream)."""
    return [Chunk(number=0, text=doc.body, heading_path=())]


class HybridEsDocumentStore:
    """Haystack's ``DocumentStore`` protocol over hybrid-es, for the caller (module docstring).

    ``principal``: the caller every operation acts as, for a store built in code for one caller;
    None (the default, and always for a loaded store): the caller given at run time
    (:func:`~hybrid_es.adapters.acting.acting_as`). ``settings``: a
    :class:`~hybrid_es.settings.Settings`, a mapping of its fields (over the environment's), or
    None (the environment's, ``HYBRID_ES_*``), read when the store is first used.
    ``acl_users``/``acl_groups``: the ACL of every document it writes (None for both: the
    deployment's default ACL; ``["*"]``: every user of the tenant). ``secrets``: where to connect
    and the credentials, as Haystack ``Secret`` references (default: their ``HYBRID_ES_*``
    variables, :data:`REFERENCED`).
    ``searcher``/``ingestor``: objects built by the caller instead (a store given them cannot be
    serialised).
    """

    def __init__(
        self,
        principal: Principal | Mapping[str, Any] | None = None,
        *,
        settings: Settings | Mapping[str, Any] | None = None,
        acl_users: Sequence[str] | None = None,
        acl_groups: Sequence[str] | None = None,
        secrets: Mapping[str, Secret] | None = None,
        searcher: HybridSearcher | None = None,
        ingestor: Ingestor | None = None,
    ) -> None:
        self.bound = (
            None
            if principal is None
            else principal
            if isinstance(principal, Principal)
            else Principal.model_validate(principal)
        )
        self.settings_spec = settings
        self.acl_users = None if acl_users is None else tuple(acl_users)
        self.acl_groups = None if acl_groups is None else tuple(acl_groups)
        self.secrets = dict(default_secrets() if secrets is None else secrets)
        self._given = searcher is not None or ingestor is not None
        if (searcher is None) != (ingestor is None):
            raise ConfigurationError(
                "give both searcher and ingestor, or neither (the store builds both from its "
                "settings)"
            )
        self._searcher = searcher
        self._ingestor = ingestor
        self._settings: Settings | None = settings if isinstance(settings, Settings) else None

    # -- what it is built from ----------------------------------------------------------------

    @property
    def principal(self) -> Principal:
        """The caller this operation acts as: the one bound in code, else the run time's
        (:func:`~hybrid_es.adapters.acting.current_principal`). PolicyViolationError without."""
        return self.bound or current_principal("HybridEsDocumentStore")

    @property
    def settings(self) -> Settings:
        """The resolved settings (built on first use)."""
        if self._settings is None:
            self._settings = build_settings(self.settings_spec, self.secrets)
        return self._settings

    @property
    def has_searcher(self) -> bool:
        """Whether the searcher is built (or was given): reading it then connects to nothing."""
        return self._searcher is not None

    @property
    def searcher(self) -> HybridSearcher:
        """The searcher reads go through (built from the settings on first use)."""
        if self._searcher is None:
            self._build()
        assert self._searcher is not None
        return self._searcher

    @property
    def ingestor(self) -> Ingestor:
        """The ingestor writes go through (built from the settings on first use)."""
        if self._ingestor is None:
            self._build()
        assert self._ingestor is not None
        return self._ingestor

    def _build(self) -> None:
        from hybrid_es.deployment import HybridEs

        hes = HybridEs(self.settings)
        # A Haystack Document is one record: the store writes it whole (split upstream).
        self._ingestor = Ingestor(
            hes.engine,
            hes.embedders,
            layout=hes.settings.layout(),
            corpus_state=hes.ingestor.corpus_state,
            default_acl=hes.ingestor.default_acl,
            chunker=whole_document,
            url=hes.settings.redacted_url(),
        )
        self._searcher = hes.searcher

    def to_dict(self) -> dict[str, Any]:
        """Haystack serialisation: ACL, settings and the references to the connection and
        credential variables; never a principal (not even a bound one). Raises
        ConfigurationError for a store given searcher/ingestor objects."""
        if self._given:
            raise ConfigurationError(
                "this HybridEsDocumentStore was given searcher and ingestor objects, which "
                "cannot be serialised",
                hint="build it from settings (HybridEsDocumentStore(principal, settings=...)) "
                "to save it in a pipeline",
            )
        spec = self.settings_spec
        inline = sorted(set(spec or {}) & set(REFERENCED)) if isinstance(spec, Mapping) else []
        if inline:
            raise ConfigurationError(
                f"the store's settings hold {', '.join(inline)}, which a serialised pipeline "
                "would write out inline",
                hint="set them in the HYBRID_ES_* environment where the pipeline runs, or pass "
                "secrets={'password': Secret.from_env_var(...)}",
            )
        return default_to_dict(
            self,
            settings=settings_to_dict(spec) if isinstance(spec, Settings) else spec,
            acl_users=None if self.acl_users is None else list(self.acl_users),
            acl_groups=None if self.acl_groups is None else list(self.acl_groups),
            secrets={k: v.to_dict() for k, v in self.secrets.items()},
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HybridEsDocumentStore:
        """The store :meth:`to_dict` describes (credentials read from their secrets)."""
        params = data.get("init_parameters", {})
        if params.pop("principal", None) is not None:
            logger.warning(
                "ignored the principal saved in this pipeline (an earlier hybrid-es wrote it): "
                "the store acts as the caller given at run time (acting_as)"
            )
        secrets = dict(params.get("secrets") or {})
        deserialize_secrets_inplace(secrets, keys=list(secrets))
        params["secrets"] = secrets
        return default_from_dict(cls, data)

    # -- the DocumentStore protocol -----------------------------------------------------------

    def count_documents(self) -> int:
        """How many live documents the caller may replace or delete: the writer's view
        (module docstring), so an indexer counts what it wrote whatever ACL it gave."""
        return self.ingestor.count_writable(self.principal)

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[HaystackDocument]:
        """The documents the store's principal may read that match ``filters`` (a Haystack 2.x
        filter on ``meta.<declared field>``), ordered by id; ``embedding`` and ``score`` None.
        Raises HaystackFilterError for a bad filter (before any request), BadQueryError when
        more than 10,000 records match."""
        neutral = check_haystack_filters(filters, self.searcher.filterable_fields)
        records = self.searcher.records(self.principal, filters=neutral, limit=MAX_RECORDS)
        return as_documents(records)

    def write_documents(
        self, documents: list[HaystackDocument], policy: DuplicatePolicy = DuplicatePolicy.NONE
    ) -> int:
        """Write ``documents`` for the store's principal; returns how many were written (or
        rewritten). See the module docstring for ``policy``. Raises ValueError for input that
        is not a list of Documents, DuplicateDocumentError (``FAIL``, ``NONE``) before any write,
        HaystackWriteError listing the documents that could not be written (after the rest)."""
        if not isinstance(documents, list) or not all(
            isinstance(d, HaystackDocument) for d in documents
        ):
            raise ValueError("write_documents takes a list of haystack Document objects")
        if policy == DuplicatePolicy.NONE:
            policy = DuplicatePolicy.FAIL
        principal = self.principal
        chosen = _deduplicated(documents, policy)
        if policy != DuplicatePolicy.OVERWRITE:
            existing = self.ingestor.writable_ids(principal, [d.id for d in chosen])
            if existing and policy == DuplicatePolicy.FAIL:
                raise DuplicateDocumentError(
                    f"{len(existing)} document(s) already exist: {', '.join(sorted(existing))}; "
                    "nothing was written (use DuplicatePolicy.OVERWRITE or SKIP)"
                )
            chosen = [d for d in chosen if d.id not in existing]
        docs, failed = self._converted(chosen, principal)
        written = len(docs)
        if docs:
            report = self.ingestor.ingest(docs, principal, raise_on_error=False)
            failed += report.failed_documents + report.failed
            written -= len({f.get("doc_id") for f in report.failed_documents})
        if failed:
            raise HaystackWriteError(
                f"{len(failed)} of {len(chosen)} documents were not written "
                f"({written} were): "
                + "; ".join(f"{f.get('doc_id', f.get('id'))}: {f.get('reason')}" for f in failed),
                failed=failed,
            )
        return written

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete the caller's documents with these ids; an id that names no such document
        (missing, another tenant's, or one the caller may not delete) is passed over, as
        Haystack stores do."""
        principal = self.principal
        for doc_id in dict.fromkeys(document_ids):
            self.ingestor.delete_document(principal, doc_id)

    # -- helpers ------------------------------------------------------------------------------

    def _converted(
        self, documents: list[HaystackDocument], principal: Principal
    ) -> tuple[list[Document], list[dict[str, Any]]]:
        """hybrid-es Documents for ``documents``, and the ones that cannot be (with why)."""
        docs: list[Document] = []
        failed: list[dict[str, Any]] = []
        carried = 0
        for d in documents:
            carried += d.embedding is not None or d.sparse_embedding is not None
            try:
                docs.append(self.as_record(d, principal))
            except (ValidationError, ValueError) as exc:
                failed.append({"doc_id": d.id, "tenant": principal.tenant, "reason": _why(exc)})
        if carried:
            logger.warning(
                "%d document(s) carried embeddings, which hybrid-es does not store: it embeds "
                "every record with the index's own model",
                carried,
            )
        return docs, failed

    def as_record(self, document: HaystackDocument, principal: Principal | None = None) -> Document:
        """The hybrid-es Document a Haystack Document is written as (the caller's tenant, this
        store's ACL). Raises ValueError (a pydantic ValidationError) saying what cannot be
        written."""
        if not document.content or not document.content.strip():
            raise ValueError(
                "it has no text content (hybrid-es indexes text; a blob or an embedding alone "
                "cannot be searched)"
            )
        acl: dict[str, Any] = {}
        if self.acl_users is not None or self.acl_groups is not None:
            acl = {"acl_users": self.acl_users or (), "acl_groups": self.acl_groups or ()}
        return Document(
            id=document.id,
            tenant=(principal or self.principal).tenant,
            body=document.content,
            metadata=dict(document.meta),
            **acl,
        )


def as_documents(records: Sequence[Record]) -> list[HaystackDocument]:
    """One Haystack Document per document id (records ordered by id and chunk number): the
    chunk texts joined, the document's own metadata (less any ``hybrid_es`` key, which only
    provenance may hold)."""
    out: list[HaystackDocument] = []
    by_id: dict[str, list[Record]] = {}
    for r in records:
        by_id.setdefault(r.doc_id, []).append(r)
    for doc_id, parts in by_id.items():
        meta = {k: v for k, v in parts[0].metadata.items() if k != NAMESPACE}
        text = parts[0].text if len(parts) == 1 else "\n".join(p.text for p in parts)
        out.append(HaystackDocument(id=doc_id, content=text, meta=meta))
    return out


def _deduplicated(
    documents: list[HaystackDocument], policy: DuplicatePolicy
) -> list[HaystackDocument]:
    """One Document per id: FAIL refuses repeats within the call, SKIP keeps the first,
    OVERWRITE the last."""
    seen: dict[str, HaystackDocument] = {}
    for d in documents:
        if d.id in seen:
            if policy == DuplicatePolicy.FAIL:
                raise DuplicateDocumentError(
                    f"document {d.id} is given twice in one write; nothing was written"
                )
            if policy == DuplicatePolicy.SKIP:
                continue
        seen[d.id] = d
    return list(seen.values())


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'document'}: "
            f"{str(e['msg']).removeprefix('Value error, ')}"
            for e in exc.errors()
        )
    return str(exc)
