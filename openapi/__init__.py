"""Schemas of the served kinds and the OpenAPI documents built from them.

    from draemu.openapi import schemas            # structural schemas (see schemas/__init__)
    openapi_v3_index(strategies) -> dict          # /openapi/v3
    openapi_v3_document(group, version, strategies) -> dict   # /openapi/v3/apis/<g>/<v>
    openapi_v2_document(strategies) -> dict       # /openapi/v2 (Swagger 2.0 JSON)
    openapi_v2_protobuf(strategies) -> bytes      # /openapi/v2, gnostic protobuf (kubectl <= 1.28)
"""

from draemu import check_import_name
from draemu.openapi.documents import (
    document_hash,
    document_key,
    openapi_v3_document,
    openapi_v3_index,
)
from draemu.openapi.protobuf import CONTENT_TYPE as V2_PROTOBUF_CONTENT_TYPE
from draemu.openapi.protobuf import openapi_v2_protobuf
from draemu.openapi.swagger import openapi_v2_document

__all__ = ["V2_PROTOBUF_CONTENT_TYPE", "document_hash", "document_key", "openapi_v2_document",
           "openapi_v2_protobuf", "openapi_v3_document", "openapi_v3_index"]

check_import_name(__name__)
