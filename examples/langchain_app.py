"""hybrid-es as a LangChain vector store: write documents, search them with a filter, cite them.
The engine: HYBRID_ES_*; the index names: its namespace's (python examples/langchain_app.py)."""

from langchain_core.documents import Document

from hybrid_es import HybridEs, Principal, Settings
from hybrid_es.adapters.langchain_store import HybridEsVectorStore

# A namespace of its own (templates, indices): beside other deployments of the cluster.
hes = HybridEs(Settings(namespace="langchain_app", filterable_fields="team:keyword"))
hes.bootstrap()  # templates and indices, `team` mapped: the metadata a filter may name
me = Principal(tenant="acme", user_id="alice", groups=("staff",))  # from your auth
store = HybridEsVectorStore.from_settings(me, hes, acl_groups=("staff",))
for doc_id, team, path, text in [
    ("vpn", "it", "handbook/vpn.md", "VPN access needs a hardware key from the IT desk."),
    ("expenses", "finance", "handbook/expenses.md", "Expense reports are due on the fifth."),
    ("passwords", "it", "handbook/passwords.md", "Reset VPN passwords at the self-service portal."),
]:
    store.add_documents([Document(text, metadata={"team": team, "path": path})], ids=[doc_id])
retriever = store.as_retriever(search_kwargs={"k": 2, "filter": {"team": "it"}})
for doc in retriever.invoke("How do I get onto the VPN?"):
    print(f"{doc.metadata['path']}: {doc.page_content}")
hes.close()
