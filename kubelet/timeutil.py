"""Kubernetes timestamps: RFC 3339 with seconds (Time) or microseconds (MicroTime), UTC."""

from __future__ import annotations

from datetime import UTC, datetime


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_rfc3339_micro() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_rfc3339_nano() -> str:
    """CRI log lines carry nanoseconds; Python has microseconds, padded."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")
