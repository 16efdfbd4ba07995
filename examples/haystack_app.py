"""hybrid-es in a Haystack app: write with DocumentWriter, retrieve with a filter, cite sources."""

from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter

from hybrid_es import HybridEs, Principal, Settings
from hybrid_es.adapters.haystack import HybridEsRetriever
from hybrid_es.adapters.haystack_store import HybridEsDocumentStore

# A namespace of its own (templates, indices): beside other deployments of the cluster.
settings = Settings(namespace="haystack_app", filterable_fields="team:keyword")  # URL: HYBRID_ES_*
HybridEs(settings).bootstrap()  # maps the declared field `team`
# The indexer writes for tenant acme; every user of acme ("*") may read what it writes.
indexer = Principal(tenant="acme", user_id="indexer")
store = HybridEsDocumentStore(indexer, settings=settings, acl_groups=["*"])
docs = [
    ("ops", "handbook/on-call.md", "Ops rotates the on-call pager every Monday at 09:00."),
    ("ops", "runbooks/payments.md", "Ops restarts payments with `make restart-payments`."),
    ("sales", "handbook/demos.md", "Sales restarts stalled demo payments by email."),
]
indexing = Pipeline()
indexing.add_component("writer", DocumentWriter(document_store=store))
indexing.run({"writer": {"documents": [Document(content=c, meta={"team": t, "path": p})
                                       for t, p, c in docs]}})  # fmt: skip
querying = Pipeline()
querying.add_component("retriever", HybridEsRetriever(document_store=store, top_k=3))
ops_only = {"field": "meta.team", "operator": "==", "value": "ops"}
alice = Principal(tenant="acme", user_id="alice")
answer = querying.run({"retriever": {"query": "who restarts payments?", "principal": alice,
                                     "filters": ops_only}})  # fmt: skip
for doc in answer["retriever"]["documents"]:
    print(f"{doc.meta['path']}  {doc.score:.3f}  {doc.content}")
