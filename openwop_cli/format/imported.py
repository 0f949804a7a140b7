"""What an imported capture could not hold, as its manifest's `imported` field says it (one reading for the replay
and the report).

`imported.from` is where the capture came from (`vcr`, `otel`). An OpenTelemetry trace holds the calls it traced and
nothing else, so its capture names what it lacks in `imported.notInTrace`:

- `ambient`: clock, random and uuid values (and every other value read without an SDK call);
- `output`: the program's stdout and stderr;
- `http`: HTTP requests other than the traced LLM and tool calls;
- `url`: the URL each LLM request went to (a trace names at most the server);
- `requestOptions`: request fields the trace's conventions do not record (the GenAI conventions keep a few options;
  a framework's span its own): `imported.tracedRequestFields` lists the fields the trace does say, and a replay
  keys and compares only those of today's request (the others are kept aside on the observed event), as the import
  keyed the recorded one.

A replay of such a capture reads them live and lists them as "not in the trace"; they are never divergences.
"""

from typing import Any

AMBIENT, OUTPUT, HTTP, URL, REQUEST_OPTIONS = "ambient", "output", "http", "url", "requestOptions"
NOT_IN_TRACE = (AMBIENT, OUTPUT, HTTP, URL, REQUEST_OPTIONS)
DESCRIPTIONS = {AMBIENT: "clock, random and uuid values", OUTPUT: "the program's stdout and stderr",
                HTTP: "HTTP requests it did not trace", URL: "the URL of each LLM request",
                REQUEST_OPTIONS: "request options its conventions do not keep (only those it holds are compared)"}


def imported_from(manifest: dict[str, Any]) -> str | None:
    """Where the capture was imported from (`vcr`, `otel`), or None for a capture wop recorded."""
    imported = manifest.get("imported")
    source = imported.get("from") if isinstance(imported, dict) else None
    return source if isinstance(source, str) else None


def not_in_trace(manifest: dict[str, Any]) -> frozenset[str]:
    """What the capture's trace could not hold (NOT_IN_TRACE's names); empty for a recorded capture."""
    imported = manifest.get("imported")
    names = imported.get("notInTrace") if isinstance(imported, dict) else None
    return frozenset(name for name in names if isinstance(name, str)) if isinstance(names, list) else frozenset()


def watches_ambient(manifest: dict[str, Any]) -> bool:
    """Whether a replay intercepts the program's clock, random and uuid reads: the capture recorded them, or its trace
    could not (each read is then listed, per call site, as not in the trace)."""
    return manifest.get("ambient") is True or AMBIENT in not_in_trace(manifest)


def hidden_spans(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The spans whose content the trace hid ({spanId, name, kind, hidden: [what]}), as the import found them."""
    imported = manifest.get("imported")
    spans = imported.get("hidden") if isinstance(imported, dict) else None
    return [span for span in spans if isinstance(span, dict)] if isinstance(spans, list) else []


def traced_request_fields(manifest: dict[str, Any]) -> frozenset[str] | None:
    """The request fields an imported capture's trace says (its keys and comparisons cover only those); None when it
    holds whole requests (or is no import)."""
    imported = manifest.get("imported")
    names = imported.get("tracedRequestFields") if isinstance(imported, dict) else None
    return frozenset(name for name in names if isinstance(name, str)) if isinstance(names, list) else None


def traced_part(request: Any, traced: frozenset[str] | None) -> Any:
    """A request with only the fields its trace says: what a replay keys and compares."""
    if traced is None or not isinstance(request, dict):
        return request
    return {key: value for key, value in request.items() if key in traced}
