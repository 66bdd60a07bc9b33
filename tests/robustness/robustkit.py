"""What every answer of the apiserver to a malformed request must look like."""

from __future__ import annotations

import json

import httpx


def assert_status_answer(reply: httpx.Response) -> dict:
    """A failed request is answered with a `Status` (JSON, exactly that content type)
    whose message names the problem; never with a 500."""
    assert reply.status_code < 500, (reply.request.method, reply.request.url, reply.text)
    assert reply.status_code >= 400, (reply.request.url, reply.status_code, reply.text)
    assert reply.headers.get("Content-Type") == "application/json", reply.headers
    status = json.loads(reply.content)
    assert status["kind"] == "Status" and status["apiVersion"] == "v1", status
    assert status["status"] == "Failure" and status["code"] == reply.status_code, status
    assert status["message"].strip(), status
    return status
