"""Index two documents for one tenant and search them as one of its users (HYBRID_ES_* for the
cluster; python examples/quickstart.py)."""

from hybrid_es import Document, HybridEs, Principal, Settings
from hybrid_es.models import WRITER_ROLE

loader = Principal(tenant="acme", user_id="loader", roles=(WRITER_ROLE,))  # the ingest service
ana = Principal(tenant="acme", user_id="ana", groups=("staff",))  # from your authentication
with HybridEs(Settings(namespace="quickstart")) as hes:  # its own names; the rest: HYBRID_ES_*
    hes.bootstrap()  # templates and indices of the namespace, once per cluster
    vpn = Document(id="vpn", tenant="acme", body="VPN access needs a key.", acl_groups=("staff",))
    pay = Document(id="pay", tenant="acme", body="Paid on the 25th.", acl_groups=("hr",))
    hes.ingest([vpn, pay], loader)
    for hit in hes.search("How do I get VPN access?", ana).hits:  # hr's record is never scored
        print(hit.doc_id, hit.sparse_rank, hit.dense_rank, hit.authorization.allowed, hit.text)
