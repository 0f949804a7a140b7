"""OTLP protobuf messages as OTLP JSON, the encoding the OpenTelemetry Collector's file exporter writes.

The protobuf JSON mapping with OTLP's differences: trace and span ids as hex (not base64), enums as integers,
field names in lowerCamelCase; 64-bit integers stay strings.
"""

from typing import Any

_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def otlp_json(message: Any) -> dict[str, Any]:
    """An ExportTraceServiceRequest (or TracesData, LogsData) as an OTLP JSON document."""
    from google.protobuf.json_format import MessageToDict

    document = MessageToDict(message, use_integers_for_enums=True)
    for resource in document.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                _hex_ids(span)
                for link in span.get("links", []):
                    _hex_ids(link)
    for resource in document.get("resourceLogs", []):
        for scope in resource.get("scopeLogs", []):
            for record in scope.get("logRecords", []):
                _hex_ids(record)
    return document


def _hex_ids(item: dict[str, Any]) -> None:
    import base64

    for name in _ID_FIELDS:
        if name in item:
            item[name] = base64.b64decode(item[name]).hex()
