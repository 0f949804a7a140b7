"""Telemetry and analytics calls: recorded and served, but never part of the verdict.

Libraries post telemetry on their own (haystack posts `id(pipeline)` to PostHog on every run, LangSmith and Langfuse
batch their traces as they please): the body carries ids and times that differ on every run, and how many batches a
run sends depends on timing. A replay serves such a call from the capture (the recorded answer of the same service
and host, as often as the program calls it), and compares neither its body nor its count nor its order; the report
says so in a note. Known services (SERVICES) are recognised by host or by a path only they use; more hosts can be
added in `[tool.wop] telemetry = ["metrics.example.com"]`.
"""

import os
from typing import Any
from urllib.parse import urlsplit

ENV_EXTRA_HOSTS = "WOP_TELEMETRY_HOSTS"  # comma-separated hosts ([tool.wop] telemetry), set by `wop replay`

# service → (host suffixes, paths only it uses (a path ending in "/" is a prefix), paths it shares with other APIs,
# which count only with a body key the service's clients always send)
SERVICES: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, str], ...]]] = {
    "posthog": (("posthog.com",), ("/i/v0/e/",), (("/batch/", "api_key"), ("/capture/", "api_key"),
                                                 ("/e/", "api_key"), ("/decide/", "api_key"), ("/flags/", "api_key"))),
    "segment": (("segment.io", "segment.com", "segmentapis.com"), (), (("/v1/batch", "batch"), ("/v1/track", "event"))),
    "sentry": (("sentry.io",), (), ()),
    "datadog": (("datadoghq.com", "datadoghq.eu", "ddog-gov.com"), ("/api/v2/logs", "/api/v2/series", "/api/v0.2/traces"),
                ()),
    "mixpanel": (("mixpanel.com",), (), ()),
    "otlp": ((), ("/v1/traces", "/v1/metrics", "/v1/logs"), ()),
    "langsmith": (("smith.langchain.com",), ("/runs/batch", "/runs/multipart"), ()),
    "langfuse": (("langfuse.com",), ("/api/public/ingestion", "/api/public/otel/"), ()),
    "phoenix": (("phoenix.arize.com", "arize.com"), (), ()),
}
_extra: list[tuple[str, ...]] = []


def telemetry_service(method: Any, url: Any, body: Any) -> str | None:
    """The telemetry service an HTTP request goes to (`posthog`, `otlp`, …), or None for any other request."""
    if not isinstance(url, str) or str(method).upper() not in ("POST", "PUT", "GET"):
        return None
    parts = urlsplit(url)
    host, path = (parts.hostname or "").lower(), parts.path or "/"
    if any(_on_host(host, suffix) for suffix in extra_hosts()):
        return "telemetry"
    for service, (hosts, own_paths, shared_paths) in SERVICES.items():
        if any(_on_host(host, suffix) for suffix in hosts) or any(_on_path(path, own) for own in own_paths):
            return service
        if isinstance(body, dict) and any(path == shared and key in body for shared, key in shared_paths):
            return service
    return None


def telemetry_of(data: dict[str, Any]) -> tuple[str, str] | None:
    """(service, host) of a recorded or today's http tool call (tool_call data) that is telemetry, else None."""
    if data.get("name") != "http":
        return None
    args = data.get("args")
    if not isinstance(args, dict):
        return None
    service = telemetry_service(args.get("method"), args.get("url"), args.get("body"))
    return None if service is None else (service, (urlsplit(str(args.get("url"))).hostname or "").lower())


def extra_hosts() -> tuple[str, ...]:
    """The hosts `[tool.wop] telemetry` adds (read once from the environment `wop replay` sets)."""
    if not _extra:
        _extra.append(tuple(host.strip().lower() for host in os.environ.get(ENV_EXTRA_HOSTS, "").split(",")
                            if host.strip()))
    return _extra[0]


def _on_host(host: str, suffix: str) -> bool:
    return host == suffix or host.endswith("." + suffix)


def _on_path(path: str, own: str) -> bool:
    return path.startswith(own) if own.endswith("/") else path == own or path.endswith(own)
