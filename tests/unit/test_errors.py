"""Mapping Elasticsearch failures to hybrid-es errors, without leaking credentials."""

from __future__ import annotations

import elastic_transport
import elasticsearch
import pytest

from hybrid_es.errors import (
    AuthenticationError,
    CapabilityMissingError,
    EngineError,
    EngineUnavailableError,
    HybridEsError,
    IndexMissingError,
    SearchTimeoutError,
    from_error_body,
    translate_es_error,
)
from hybrid_es.settings import Settings

SECRET_URL = "http://u:secret@h:9200"
URL = Settings(url=SECRET_URL).redacted_url()


def _es_error(status, reason_type, reason):
    return {
        "error": {
            "root_cause": [{"type": reason_type, "reason": reason}],
            "type": reason_type,
            "reason": reason,
        },
        "status": status,
    }


def _api_error(cls, status, body):
    node = elastic_transport.NodeConfig("http", "h", 9200)
    meta = elastic_transport.ApiResponseMeta(
        status, "1.1", elastic_transport.HttpHeaders(), 0.0, node
    )
    return cls(message=str(status), meta=meta, body=body)


# --- from_error_body --------------------------------------------------------------------------


def test_401_is_an_authentication_error_naming_the_url():
    err = from_error_body(
        401, _es_error(401, "security_exception", "unable to authenticate"), url=URL
    )
    assert type(err) is AuthenticationError
    assert err.status == 401
    assert URL in err.message
    assert "HYBRID_ES_PASSWORD" in err.hint


def test_403_is_an_authentication_error_with_the_reason():
    body = _es_error(403, "security_exception", "action [indices:data/read/search] is unauthorized")
    err = from_error_body(403, body, url=URL)
    assert type(err) is AuthenticationError
    assert err.status == 403
    assert "is unauthorized" in err.message


def test_404_index_not_found_is_index_missing():
    body = _es_error(404, "index_not_found_exception", "no such index [hybrid-es-chunks]")
    err = from_error_body(404, body, url=URL)
    assert type(err) is IndexMissingError
    assert "no such index [hybrid-es-chunks]" in err.message
    assert "hybrid-es bootstrap" in err.hint


def test_other_404_is_a_plain_engine_error():
    err = from_error_body(404, {"_id": "x", "found": False})
    assert type(err) is EngineError
    assert err.status == 404


def test_unknown_rrf_retriever_is_a_missing_capability():
    body = _es_error(400, "x_content_parse_exception", "[1:27] unknown retriever [rrf]")
    err = from_error_body(400, body, url=URL)
    assert type(err) is CapabilityMissingError
    assert "unknown retriever [rrf]" in err.message
    assert "fusion='client'" in err.hint


def test_non_compliant_licence_is_a_missing_capability_not_an_auth_error():
    # The licence check answers 403 like a missing privilege; it must not send the user to
    # check their credentials.
    body = _es_error(403, "security_exception", "current license is non-compliant for [rrf]")
    err = from_error_body(403, body, url=URL)
    assert type(err) is CapabilityMissingError
    assert err.status == 403
    assert "non-compliant" in err.message


def test_timeouts_are_search_timeouts():
    assert type(from_error_body(504, {"error": "gateway timeout"})) is SearchTimeoutError
    assert type(from_error_body(408, {"error": "request timeout"})) is SearchTimeoutError


def test_other_status_is_an_engine_error_with_status_and_reason():
    body = _es_error(400, "parsing_exception", "unknown query [foo]")
    err = from_error_body(400, body)
    assert type(err) is EngineError
    assert err.status == 400
    assert "HTTP 400" in err.message
    assert "parsing_exception: unknown query [foo]" in err.message


def test_msearch_item_error_body():
    # An _msearch item carries the same error object and its own status.
    item = {**_es_error(404, "index_not_found_exception", "no such index [x]"), "status": 404}
    assert type(from_error_body(item["status"], item)) is IndexMissingError


def test_string_error_and_non_dict_body():
    assert "boom" in from_error_body(500, {"error": "boom"}).message
    assert "plain text" in from_error_body(500, "plain text").message


# --- translate_es_error -----------------------------------------------------------------------


def test_connection_error_is_engine_unavailable_with_a_start_hint():
    err = translate_es_error(elastic_transport.ConnectionError("x"), url=URL)
    assert type(err) is EngineUnavailableError
    assert err.message == f"cannot reach Elasticsearch at {URL}"
    assert "scripts/es.sh start" in err.hint


def test_connection_timeout_is_a_search_timeout():
    err = translate_es_error(elastic_transport.ConnectionTimeout("slow"), url=URL, what="search")
    assert type(err) is SearchTimeoutError
    assert URL in err.message


def test_api_errors_are_mapped_by_status_and_body():
    body = _es_error(404, "index_not_found_exception", "no such index [hybrid-es-chunks]")
    err = translate_es_error(_api_error(elasticsearch.NotFoundError, 404, body), url=URL)
    assert type(err) is IndexMissingError
    assert err.status == 404
    err = translate_es_error(_api_error(elasticsearch.AuthenticationException, 401, {}), url=URL)
    assert type(err) is AuthenticationError


def test_own_errors_pass_through_unchanged():
    original = IndexMissingError("gone")
    assert translate_es_error(original) is original


def test_anything_else_is_an_engine_error_naming_the_type():
    err = translate_es_error(RuntimeError("odd"), what="bulk")
    assert type(err) is EngineError
    assert err.message == "unexpected error during bulk: RuntimeError: odd"
    assert isinstance(err, HybridEsError)


def test_str_includes_the_hint():
    assert str(HybridEsError("m", hint="h")) == "m (h)"
    assert str(HybridEsError("m")) == "m"


# --- credentials never appear -----------------------------------------------------------------


def test_redacted_url_drops_user_and_password():
    assert URL == "http://h:9200"
    assert Settings(url="https://h").redacted_url() == "https://h"
    assert Settings(url="http://u:secret@h:9200/es?x=1#f").redacted_url() == "http://h:9200/es"


def test_redacted_url_keeps_ipv6_brackets():
    # Without the brackets "::1:9200" reads as an address, not host and port.
    assert Settings(url="http://u:secret@[::1]:9200").redacted_url() == "http://[::1]:9200"


def _all_errors(url):
    bodies = [
        (401, {}),
        (403, _es_error(403, "security_exception", "unauthorized")),
        (403, _es_error(403, "security_exception", "current license is non-compliant")),
        (404, _es_error(404, "index_not_found_exception", "no such index [x]")),
        (400, _es_error(400, "x_content_parse_exception", "unknown retriever [rrf]")),
        (504, {"error": "timed_out"}),
        (500, {"error": "boom"}),
    ]
    errors = [from_error_body(status, body, url=url) for status, body in bodies]
    errors.append(translate_es_error(elastic_transport.ConnectionError("x"), url=url))
    errors.append(translate_es_error(elastic_transport.ConnectionTimeout("x"), url=url))
    return errors


@pytest.mark.parametrize("err", _all_errors(URL), ids=lambda e: type(e).__name__)
def test_messages_never_contain_the_password(err):
    assert "secret" not in str(err)
    assert "u:" not in str(err)
