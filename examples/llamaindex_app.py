"""hybrid-es in a LlamaIndex app: write through a VectorStoreIndex, retrieve with LlamaIndex's
own MetadataFilters, cite each answer's source. The engine: HYBRID_ES_*; the index names: its
namespace's."""

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

from hybrid_es import HybridEs, Principal, Settings
from hybrid_es.adapters.llamaindex_store import HybridEsVectorStore, StoreEmbedding

# A namespace of its own (templates, indices): beside other deployments of the cluster.
fields = "team:keyword,ref_doc_id:keyword"  # ref_doc_id: what deletes find
hes = HybridEs(Settings(namespace="llamaindex_app", filterable_fields=fields))
hes.bootstrap()  # maps meta_filter.* in new indices
writer = Principal(tenant="demo-A", user_id="docs-bot", groups=("staff",))  # from your auth
store = HybridEsVectorStore.from_settings(writer, hes, acl_groups=("staff",))
index = VectorStoreIndex.from_vector_store(store, embed_model=StoreEmbedding())
for path, team, text in [
    ("ops/rates.md", "ops", "The Kyoto hotel April room rate is JPY 31,500 a night."),
    ("ops/check-in.md", "ops", "Check-in at the Kyoto hotel opens at 15:00 every day."),
    ("legal/visa.md", "legal", "Guests of the Kyoto hotel need a passport valid six months."),
    ("facilities/pool.md", "facilities", "The Kyoto hotel pool opens at 7:00 in summer."),
]:
    index.insert(Document(text=text, doc_id=path, metadata={"path": path, "team": team}))
ops = MetadataFilters(filters=[MetadataFilter(key="team", value="ops")])
for hit in index.as_retriever(similarity_top_k=3, filters=ops).retrieve("Kyoto hotel April rate"):
    print(f"{hit.node.metadata['path']}  {hit.score:.4f}  {hit.node.get_content()}")
hes.close()
