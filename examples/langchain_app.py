"""hybrid-es as a LangChain vector store: write documents, search them with a filter, cite them.

Run against the cluster HYBRID_ES_URL names (index names from HYBRID_ES_CHUNKS_INDEX etc.):
    python examples/langchain_app.py
"""

from langchain_core.documents import Document

from hybrid_es import HybridSearcher, Ingestor, Principal, Settings, connect
from hybrid_es.adapters.langchain_store import HybridEsVectorStore
from hybrid_es.cluster.bootstrap import bootstrap
from hybrid_es.cluster.capabilities import probe
from hybrid_es.retrieval.embedder import make_embedder

settings = Settings(filterable_fields="team:keyword")  # the metadata a filter may name
engine = connect(settings)
bootstrap(engine, probe(engine), settings)  # templates and indices, `team` mapped
embedder = make_embedder("minilm")
searcher = HybridSearcher(
    engine, embedder, layout=settings.layout(), filterable_fields=settings.filterable_fields
)
ingestor = Ingestor(engine, embedder, layout=settings.layout())
me = Principal(tenant="acme", user_id="alice", groups=("staff",))  # from your auth
store = HybridEsVectorStore(searcher, ingestor, me, acl_groups=("staff",))
store.add_documents(
    [
        Document(
            page_content="VPN access needs a hardware key from the IT desk.",
            metadata={"team": "it", "path": "handbook/vpn.md"},
        ),
        Document(
            page_content="Expense reports are due on the fifth of each month.",
            metadata={"team": "finance", "path": "handbook/expenses.md"},
        ),
        Document(
            page_content="Reset a forgotten VPN password at the self-service portal.",
            metadata={"team": "it", "path": "handbook/passwords.md"},
        ),
    ],
    ids=["vpn", "expenses", "passwords"],
)
retriever = store.as_retriever(search_kwargs={"k": 2, "filter": {"team": "it"}})
for doc in retriever.invoke("How do I get onto the VPN?"):
    print(f"{doc.metadata['path']}: {doc.page_content}")
