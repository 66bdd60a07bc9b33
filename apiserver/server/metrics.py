"""/metrics in the Prometheus text format, with kube-apiserver's metric names:
requests by verb/resource/code with latency histograms, in-flight and long-running
requests, registered watchers and stored objects per resource."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10,
           15, 20, 30, 45, 60)

Labels = tuple[tuple[str, str], ...]


def _fmt_labels(labels: Labels, extra: tuple[tuple[str, str], ...] = ()) -> str:
    items = (*labels, *extra)
    if not items:
        return ""
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in items)
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Histogram:
    __slots__ = ("counts", "sum", "total")

    def __init__(self) -> None:
        self.counts = [0] * len(BUCKETS)
        self.sum = 0.0
        self.total = 0

    def observe(self, value: float) -> None:
        self.sum += value
        self.total += 1
        for i, bound in enumerate(BUCKETS):
            if value <= bound:
                self.counts[i] += 1
                break


class Metrics:
    def __init__(self) -> None:
        self.requests: dict[Labels, int] = defaultdict(int)
        self.latency: dict[Labels, Histogram] = defaultdict(Histogram)
        self.in_flight = {"mutating": 0, "readOnly": 0}
        self.rejected: dict[str, int] = defaultdict(int)
        self.gauges: dict[str, Callable[[], dict[Labels, float]]] = {}
        self.counters: dict[str, Callable[[], dict[Labels, float]]] = {}

    def observe(self, verb: str, group: str, version: str, resource: str, subresource: str,
                scope: str, code: int, seconds: float) -> None:
        base = (("verb", verb), ("group", group), ("version", version),
                ("resource", resource), ("subresource", subresource), ("scope", scope),
                ("component", "apiserver"))
        self.requests[(*base, ("code", str(code)))] += 1
        self.latency[base].observe(seconds)

    def render(self) -> str:
        lines = ["# HELP apiserver_request_total Counter of apiserver requests broken out "
                 "for each verb, group, version, resource, scope, component, and HTTP "
                 "response code.", "# TYPE apiserver_request_total counter"]
        for labels, count in sorted(self.requests.items()):
            lines.append(f"apiserver_request_total{_fmt_labels(labels)} {count}")
        lines += ["# HELP apiserver_request_duration_seconds Response latency distribution in "
                  "seconds for each verb, group, version, resource, subresource, scope and "
                  "component.", "# TYPE apiserver_request_duration_seconds histogram"]
        for labels, h in sorted(self.latency.items()):
            cumulative = 0
            for bound, count in zip(BUCKETS, h.counts, strict=True):
                cumulative += count
                lines.append(f"apiserver_request_duration_seconds_bucket"
                             f"{_fmt_labels(labels, (('le', f'{bound:g}'),))} {cumulative}")
            lines.append(f"apiserver_request_duration_seconds_bucket"
                         f"{_fmt_labels(labels, (('le', '+Inf'),))} {h.total}")
            lines.append(f"apiserver_request_duration_seconds_sum{_fmt_labels(labels)} {h.sum}")
            lines.append(f"apiserver_request_duration_seconds_count{_fmt_labels(labels)} "
                         f"{h.total}")
        lines += ["# HELP apiserver_current_inflight_requests Maximal number of currently used "
                  "inflight request limit of this apiserver per request kind in last second.",
                  "# TYPE apiserver_current_inflight_requests gauge"]
        for kind, value in sorted(self.in_flight.items()):
            lines.append(f'apiserver_current_inflight_requests{{request_kind="{kind}"}} {value}')
        lines += ["# HELP apiserver_dropped_requests_total Number of requests dropped with "
                  "'Try again later' response.", "# TYPE apiserver_dropped_requests_total counter"]
        for kind, value in sorted(self.rejected.items()):
            lines.append(f'apiserver_dropped_requests_total{{request_kind="{kind}"}} {value}')
        for kind, collectors in (("gauge", self.gauges), ("counter", self.counters)):
            for name, collect in sorted(collectors.items()):
                lines.append(f"# TYPE {name} {kind}")
                for labels, value in sorted(collect().items()):
                    lines.append(f"{name}{_fmt_labels(labels)} {value:g}")
        return "\n".join(lines) + "\n"
