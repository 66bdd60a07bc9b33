"""structlog, configured once for every component.

A terminal gets the coloured console renderer, anything else (or `--log-format json`)
one JSON object per line. Components ask for a logger with `get_logger("scheduler")`.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR}


class _StderrLogger:
    """Writes each rendered line to whatever `sys.stderr` is *now*: a component's logger
    outlives any one stream (test runners swap stderr per test and close the old one)."""

    def msg(self, message: str) -> None:
        stream = sys.stderr
        try:
            stream.write(message + "\n")
            stream.flush()
        except (ValueError, OSError):  # a closed or broken stream: drop the line
            pass

    log = debug = info = warn = warning = err = error = critical = exception = fatal = msg


def _stderr_logger(*_args: Any) -> _StderrLogger:
    return _StderrLogger()


def configure(log_format: str = "auto", level: str = "info") -> None:
    """Set up structlog (and the standard library's logging, which aiohttp uses)."""
    global _settings
    if log_format == "auto":
        log_format = "console" if sys.stderr.isatty() else "json"
    _settings = (log_format, level)
    renderer: Any
    if log_format == "json":
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    numeric = _LEVELS.get(level, logging.INFO)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=max(numeric, logging.WARNING), stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")


_settings = ("auto", "info")


def settings() -> tuple[str, str]:
    """The format and level `configure` was given (for a child process to log alike)."""
    return _settings


def get_logger(component: str) -> Any:
    return structlog.get_logger().bind(component=component)
