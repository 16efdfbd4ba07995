"""Certificates for the local HTTPS node (``HYBRID_ES_TLS=1 scripts/es.sh start``), made with
trustme: a throwaway CA and a node certificate for 127.0.0.1 and localhost that it signed.

    python scripts/make_certs.py DIR

writes, into DIR (created if missing):

    ca.pem          the CA certificate: what HYBRID_ES_CA_CERTS names
    ca.sha256       the CA's SHA-256 fingerprint: a value for HYBRID_ES_SSL_ASSERT_FINGERPRINT
    node.pem        the node's certificate, then the CA's (xpack.security.http.ssl.certificate):
                    the node sends its chain with the CA in it, as an Elasticsearch 8+ node
                    set up by its own security auto-configuration does, so that a client may
                    pin the CA's fingerprint
    node-key.pem    its private key, PKCS#8 (xpack.security.http.ssl.key)

The keys never leave the machine and the CA exists only for this node: nothing else trusts it.
"""

from __future__ import annotations

import hashlib
import ssl
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import trustme
    except ImportError:
        print(
            "make_certs.py: needs the Python package trustme: run scripts/setup.sh (the venv has "
            "it) or pip install trustme",
            file=sys.stderr,
        )
        return 1
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="hybrid-es local test CA")
    node = ca.issue_cert("127.0.0.1", "localhost", common_name="hybrid-es-node-1")
    ca.cert_pem.write_to_path(str(out / "ca.pem"))
    node.private_key_pem.write_to_path(str(out / "node-key.pem"))
    chain = [blob.bytes() for blob in node.cert_chain_pems] + [ca.cert_pem.bytes()]
    (out / "node.pem").write_bytes(b"".join(chain))
    der = ssl.PEM_cert_to_DER_cert(ca.cert_pem.bytes().decode())
    (out / "ca.sha256").write_text(hashlib.sha256(der).hexdigest() + "\n")
    (out / "node-key.pem").chmod(0o600)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
