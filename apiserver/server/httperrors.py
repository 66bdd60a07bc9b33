"""Requests that fail before any handler runs (a request line or header too long, bytes
that are not HTTP) answered with a `Status`, as every other failure, instead of
aiohttp's plain text: kubectl prints a Status' message, and misreads anything else.

Go's server reads at most 1 MiB of request line and headers (http.DefaultMaxHeaderBytes);
the limits here are of that size, far above aiohttp's 8 KiB defaults, so what upstream
takes draemu takes too.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong
from aiohttp.web_protocol import RequestHandler

from draemu.api.errors import StatusError
from draemu.apiserver.wire.codec import status_response

MAX_REQUEST_LINE = 1024 * 1024
MAX_HEADER_FIELD = 512 * 1024  # one header, name and value; a different number tells which

HANDLER_ARGS = {"max_line_size": MAX_REQUEST_LINE, "max_field_size": MAX_HEADER_FIELD}


def _status_of(status: int, exc: BaseException | None, message: str | None) -> StatusError:
    if isinstance(exc, LineTooLong):
        if exc.args[1] == MAX_REQUEST_LINE:
            return StatusError(414, "RequestURITooLong",
                               f"the request line is longer than {MAX_REQUEST_LINE} bytes")
        return StatusError(431, "RequestHeaderFieldsTooLarge",
                           f"a request header is longer than {MAX_HEADER_FIELD} bytes")
    if isinstance(exc, HttpProcessingError) and 400 <= status < 500:
        return StatusError(status, "BadRequest", f"malformed HTTP request: {exc.message}")
    return StatusError(500, "InternalError", f"Internal error occurred: {message or exc!r}")


class _StatusRequestHandler(RequestHandler):
    def handle_error(self, request: Any, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        super().handle_error(request, status, exc, message)  # logs; refuses a started reply
        resp = status_response(_status_of(status, exc, message))
        resp.force_close()
        return resp


class _StatusServer(web.Server):
    def __call__(self) -> RequestHandler:
        return _StatusRequestHandler(self, loop=self._loop, **self._kwargs)


def answer_with_status(runner: web.AppRunner) -> None:
    """After `runner.setup()`: its connections answer protocol errors with a Status.
    (aiohttp builds its Server inside the runner and takes no handler class.)"""
    server = runner.server
    assert server is not None and type(server) is web.Server
    server.__class__ = _StatusServer
