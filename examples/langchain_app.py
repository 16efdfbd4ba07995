"""hybrid-es as a LangChain vector store: write documents, search them with a filter, cite them.
The engine and index names: HYBRID_ES_* (python examples/langchain_app.py)."""

from langchain_core.documents import Document

from hybrid_es import Ingestor, Principal, Settings, connect
from hybrid_es.adapters.langchain_store import HybridEsVectorStore
from hybrid_es.cluster.bootstrap import bootstrap
from hybrid_es.cluster.capabilities import probe
from hybrid_es.traces.wiring import traced_searcher

settings = Settings(filterable_fields="team:keyword")  # the metadata a filter may name
engine = connect(settings)
bootstrap(engine, probe(engine), settings)  # templates and indices, `team` mapped
searcher = traced_searcher(settings, client=engine)
ingestor = Ingestor(engine, searcher.embedder, layout=settings.layout())
me = Principal(tenant="acme", user_id="alice", groups=("staff",))  # from your auth
store = HybridEsVectorStore(searcher, ingestor, me, acl_groups=("staff",))
for doc_id, team, path, text in [
    ("vpn", "it", "handbook/vpn.md", "VPN access needs a hardware key from the IT desk."),
    ("expenses", "finance", "handbook/expenses.md", "Expense reports are due on the fifth."),
    ("passwords", "it", "handbook/passwords.md", "Reset VPN passwords at the self-service portal."),
]:
    store.add_documents([Document(text, metadata={"team": team, "path": path})], ids=[doc_id])
retriever = store.as_retriever(search_kwargs={"k": 2, "filter": {"team": "it"}})
for doc in retriever.invoke("How do I get onto the VPN?"):
    print(f"{doc.metadata['path']}: {doc.page_content}")
