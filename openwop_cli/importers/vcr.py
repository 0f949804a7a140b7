"""VCR.py (and pytest-recording) cassettes as wop captures, so an existing suite's recordings replay strictly.

Every recorded exchange goes through the same Exchange a live capture uses: an LLM call is recognised
by its provider (a streamed answer split into its events), any other request becomes an `http` tool
call. A cassette is data from a stranger: the file, each body (also once decompressed), the number of
interactions, every field's type, and what the document expands to are bounded — YAML aliases are
counted, and the values and bytes they expand to are added up on the parsed node graph, before one
Python value is built (a 400-byte "billion laughs" is refused at once) — and so is the total of the
bodies imported, repeats included. An interaction repeated by alias is read once, and a body
decompressed once. Anything wrong is one BadCassette naming the interaction — all before a capture
directory is created.
"""

import base64
import hashlib
import json
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from openwop_cli.errors import BadCassette

MAX_CASSETTE_BYTES = 512 << 20
MAX_BODY_BYTES = 64 << 20
MAX_INTERACTIONS = 100_000
MAX_NODES = 20_000_000
MAX_ALIASES = 10_000
MAX_EXPANDED_BYTES = MAX_CASSETTE_BYTES  # the scalars of a YAML document, counted as often as aliases repeat them
MAX_TOTAL_BODY_BYTES = MAX_CASSETTE_BYTES  # the bodies of all interactions imported, decoded, repeats included
DECODERS = {"gzip": 47, "x-gzip": 47, "deflate": 15}  # zlib wbits: 47 reads a gzip header, 15 a zlib one


@dataclass(frozen=True, slots=True)
class Interaction:
    """One recorded HTTP exchange, in plain types (headers as (name, value) pairs, bodies as decoded bytes)."""

    method: str
    uri: str
    request_headers: list[tuple[str, str]]
    request_body: bytes
    status: int
    response_headers: list[tuple[str, str]]
    response_body: bytes


def read_cassette(path: Path) -> list[Interaction]:
    """The interactions of a VCR.py cassette (YAML or JSON), checked; a BadCassette says what is wrong."""
    return _interactions(_read_bounded(Path(path)), Path(path))


def _interactions(raw: bytes, path: Path) -> list[Interaction]:
    document = _parse(raw, path)
    if not isinstance(document, dict) or not isinstance(document.get("interactions"), list):
        raise BadCassette(f"{path} is not a VCR.py cassette: it has no `interactions` list")
    interactions = document["interactions"]
    if len(interactions) > MAX_INTERACTIONS:
        raise BadCassette(f"{path} holds {len(interactions)} interactions; wop imports at most {MAX_INTERACTIONS}")
    read: dict[int, Interaction] = {}  # an interaction a YAML alias repeats is the same object: read once
    decoder = _Decoder()
    total = 0
    found = []
    for index, item in enumerate(interactions):
        interaction = read.get(id(item))
        if interaction is None:
            interaction = read[id(item)] = _interaction(item, index, path, decoder)
        total += len(interaction.request_body) + len(interaction.response_body)
        if total > MAX_TOTAL_BODY_BYTES:
            raise BadCassette(f"{path}: the bodies of its first {index + 1} interactions add up to more than "
                              f"{MAX_TOTAL_BODY_BYTES} bytes (repeated by YAML aliases?); not imported")
        found.append(interaction)
    return found


@dataclass(frozen=True, slots=True)
class Imported:
    """A cassette written as a capture: where, its final manifest, and how many LLM and other HTTP calls it holds."""

    path: Path
    manifest: dict[str, Any]
    llm_calls: int
    http_calls: int


def import_cassette(path: Path, *, out: Path | None, store_root: Path, name: str | None, argv: list[str],
                    redact: str) -> Imported:
    """Write the cassette at path as a new capture (in out, else in the store)."""
    from openwop_cli.format.events import new_id
    from openwop_cli.format.redact import Redactor
    from openwop_cli.format.sink import CaptureSink
    from openwop_cli.runtime.adapters.exchange import Exchange, plain_headers
    from openwop_cli.runtime.program import run_end_data, run_start_data
    from openwop_cli.runtime.session import AppendRecorder, Session

    raw = _read_bounded(Path(path))
    interactions = _interactions(raw, Path(path))
    capture_id = new_id()
    target = out if out is not None else store_root / capture_id
    sink = CaptureSink(target, redactor=Redactor.from_environment(redact))
    program: dict[str, Any] = {"argv": argv, "cwd": os.getcwd()}
    sink.start({"captureId": capture_id, "name": name or Path(path).stem, "program": program,
                "imported": {"from": "vcr", "path": str(path), "sha256": hashlib.sha256(raw).hexdigest(),
                             "interactions": len(interactions)}})
    sink.append("run_start", {**run_start_data(argv, program["cwd"], None), "env": []})
    session = Session(AppendRecorder(sink.append, sink.flush))
    llm_calls = 0
    for interaction in interactions:
        exchange = Exchange(session, interaction.method, interaction.uri, interaction.request_headers,
                            interaction.request_body)
        llm_calls += exchange.llm is not None
        exchange.begin()
        headers = plain_headers(interaction.response_headers)
        exchange.record_response(interaction.status, headers, interaction.response_body, exchange.is_stream(headers))
    sink.append("run_end", run_end_data(0, None, 0.0))
    manifest = sink.finalize("ok", program=program)
    return Imported(target, manifest, llm_calls, len(interactions) - llm_calls)


def _read_bounded(path: Path) -> bytes:
    try:
        if not path.is_file():
            raise BadCassette(f"no cassette at {path}: not a file")
        size = path.stat().st_size
        if size > MAX_CASSETTE_BYTES:
            raise BadCassette(f"{path} is {size} bytes; wop imports cassettes up to {MAX_CASSETTE_BYTES} bytes")
        return path.read_bytes()
    except OSError as exc:
        raise BadCassette(f"cannot read {path}: {exc.strerror or exc}") from None


def _parse(raw: bytes, path: Path) -> Any:
    if path.suffix.lower() == ".json" or raw.lstrip()[:1] == b"{":
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise BadCassette(f"{path} is not JSON: {exc}") from None
    try:
        import yaml
    except ImportError:
        raise BadCassette(f"{path} is YAML, which needs PyYAML: pip install 'openwop-cli[vcr]'") from None
    loader = _loader(yaml)(raw)  # a safe loader with VCR.py's few benign tags
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_expansion(yaml, root, path)
        return loader.construct_document(root)
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as exc:
        problem = " ".join(str(exc).split())[:200]
        raise BadCassette(f"{path} is not a readable YAML cassette: {problem}") from None
    finally:
        loader.dispose()


def _loader(yaml: Any) -> Any:
    """A safe YAML loader that also reads the Python tags VCR.py writes for bodies (str, tuple, BytesIO, iter)."""
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = type("CassetteLoader", (base,), {})

    def first_state(node_loader: Any, node: Any, key: str) -> Any:
        values = node_loader.construct_mapping(node, deep=True).get(key) or [b""]
        return values[0] if isinstance(values, (list, tuple)) and values else b""

    loader.add_constructor("tag:yaml.org,2002:python/str", lambda loader_, node: loader_.construct_scalar(node))
    loader.add_constructor("tag:yaml.org,2002:python/unicode", lambda loader_, node: loader_.construct_scalar(node))
    loader.add_constructor("tag:yaml.org,2002:python/tuple", lambda loader_, node: loader_.construct_sequence(node))
    loader.add_constructor("tag:yaml.org,2002:python/object/new:_io.BytesIO",
                           lambda loader_, node: first_state(loader_, node, "state"))
    loader.add_constructor("tag:yaml.org,2002:python/object/apply:builtins.iter",
                           lambda loader_, node: first_state(loader_, node, "args"))
    return loader


def _check_expansion(yaml: Any, root: Any, path: Path) -> None:
    """Refuse a YAML node graph that aliases more than MAX_ALIASES times, or that would expand into more than
    MAX_NODES values or MAX_EXPANDED_BYTES of scalars: each node's expanded size is worked out once and counted
    as often as it is referred to, so nothing is expanded to find out (nor is an alias cycle followed)."""
    sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (values, scalar bytes) it expands to
    expanding: set[int] = set()  # the nodes whose children are being sized: the current node's ancestors
    referenced: set[int] = set()
    aliases = 0
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_sized = stack.pop()
        key = id(node)
        if children_sized:
            expanding.discard(key)
            values, size = 1, 0
            for child in _children(yaml, node):
                child_values, child_size = sizes[id(child)]
                values, size = values + child_values, size + child_size
            if values > MAX_NODES or size > MAX_EXPANDED_BYTES:
                raise BadCassette(f"{path} expands to more than {MAX_NODES} values or {MAX_EXPANDED_BYTES} bytes "
                                  "(repeated YAML aliases?); not imported")
            sizes[key] = (values, size)
        elif key not in sizes:
            if isinstance(node, yaml.ScalarNode):
                sizes[key] = (1, len(node.value))
                continue
            expanding.add(key)
            stack.append((node, True))
            for child in _children(yaml, node):
                if id(child) in expanding:
                    raise BadCassette(f"{path} holds a YAML alias to a value that contains it; not imported")
                if id(child) in referenced:
                    aliases += 1
                    if aliases > MAX_ALIASES:
                        raise BadCassette(f"{path} uses YAML aliases more than {MAX_ALIASES} times; not imported")
                referenced.add(id(child))
                stack.append((child, False))


def _children(yaml: Any, node: Any) -> list[Any]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _interaction(item: Any, index: int, path: Path, decoder: "_Decoder") -> Interaction:
    def bad(problem: str) -> BadCassette:
        return BadCassette(f"{path}: interaction {index}: {problem}")

    if not isinstance(item, dict) or not isinstance(item.get("request"), dict) or not isinstance(item.get("response"), dict):
        raise bad("expected a mapping with `request` and `response`")
    request, response = item["request"], item["response"]
    method, uri = request.get("method"), request.get("uri")
    if not isinstance(method, str) or not method.isalpha():
        raise bad(f"request method {method!r} is not an HTTP method")
    if not isinstance(uri, str) or not uri.startswith(("http://", "https://")):
        raise bad(f"request uri {_short(uri)} is not an http(s) URL")
    status = response.get("status")
    code = status.get("code") if isinstance(status, dict) else response.get("status_code")
    if type(code) is not int or not 100 <= code <= 599:
        raise bad(f"response status {_short(code)} is not an HTTP status code")
    response_headers = _headers(response.get("headers"), bad)
    body = response["body"] if "body" in response else response.get("content")
    return Interaction(method.upper(), uri, _headers(request.get("headers"), bad),
                       _request_body(request.get("body"), bad), code, *decoder.decoded(response_headers, _bytes(body, bad), bad))


def _request_body(value: Any, bad: Callable[[str], BadCassette]) -> bytes:
    """A request body as bytes. VCR.py's aiohttp stub stores a `json=` (or `data=` mapping) body as the value the
    program passed, a mapping or list in the cassette: it is the JSON aiohttp sends (its json.dumps)."""
    wrapped = isinstance(value, dict) and ("string" in value or "base64_string" in value)
    chunks = isinstance(value, list) and all(isinstance(chunk, bytes) for chunk in value)
    if isinstance(value, (dict, list)) and not wrapped and not chunks:
        try:
            value = json.dumps(value).encode()
        except (TypeError, ValueError, RecursionError):
            raise bad("a request body that is neither text, bytes nor JSON") from None
    return _bytes(value, bad)


def _headers(value: Any, bad: Callable[[str], BadCassette]) -> list[tuple[str, str]]:
    """Headers as VCR.py stores them ({name: [values]} or {name: value}) as (name, value) pairs."""
    if value is None:
        return []
    if not isinstance(value, dict):
        raise bad("headers must be a mapping of names to values")
    pairs = []
    for name, values in value.items():
        for single in values if isinstance(values, (list, tuple)) else [values]:
            if not isinstance(name, str) or not isinstance(single, (str, bytes, int, float)):
                raise bad(f"header {_short(name)} has a value of type {type(single).__name__}")
            pairs.append((name, single.decode("latin-1") if isinstance(single, bytes) else str(single)))
    return pairs


def _bytes(value: Any, bad: Callable[[str], BadCassette]) -> bytes:
    """A body as VCR.py stores it — text, bytes (YAML !!binary), {string: …}, {base64_string: …}, a list of
    chunks — as bytes, bounded."""
    if isinstance(value, dict):
        if "base64_string" in value:
            encoded = value["base64_string"]
            try:
                value = base64.b64decode(encoded, validate=True) if isinstance(encoded, (str, bytes)) else None
            except ValueError:
                raise bad("base64_string is not base64") from None
        else:
            value = value.get("string")
    if isinstance(value, list) and all(isinstance(chunk, (str, bytes)) for chunk in value):
        value = b"".join(chunk.encode() if isinstance(chunk, str) else chunk for chunk in value)
    if value is None:
        return b""
    if isinstance(value, str):
        value = value.encode("utf-8", errors="surrogateescape")
    if not isinstance(value, bytes):
        raise bad(f"a body of type {type(value).__name__}, not text or bytes")
    if len(value) > MAX_BODY_BYTES:
        raise bad(f"a body of {len(value)} bytes; wop imports bodies up to {MAX_BODY_BYTES} bytes")
    return value


class _Decoder:
    """Compressed response bodies (gzip, deflate) decompressed, bounded, each distinct body once."""

    def __init__(self) -> None:
        self._done: dict[tuple[str, bytes], bytes] = {}

    def decoded(self, headers: list[tuple[str, str]], body: bytes,
                bad: Callable[[str], BadCassette]) -> tuple[list[tuple[str, str]], bytes]:
        """The body decompressed and the headers without its content-encoding (see _decoded)."""
        encodings = [value.strip().lower() for name, value in headers if name.lower() == "content-encoding"]
        encoding = next((value for value in encodings if value not in ("", "identity")), None)
        if encoding is None or not body:
            return headers, body
        if encoding not in DECODERS:
            raise bad(f"the response is {encoding}-encoded; wop decodes gzip and deflate (record with "
                      "decode_compressed_response=True)")
        plain = [(name, value) for name, value in headers if name.lower() != "content-encoding"]
        decoded = self._done.get((encoding, body))
        if decoded is None:
            decoded = self._done[(encoding, body)] = _decoded(encoding, body, bad)
        return plain, decoded


def _decoded(encoding: str, body: bytes, bad: Callable[[str], BadCassette]) -> bytes:
    """A body sent with a content-encoding of gzip or deflate, decompressed (bounded).

    VCR.py's requests and aiohttp stubs store the body their client already decoded under the server's
    `Content-Encoding: gzip` header (and play it back as it is): a body that does not start the way its
    encoding does (gzip's magic number, a zlib header, a raw deflate stream that ends) is taken as decoded."""
    if encoding == "deflate" and not _zlib_header(body):
        decoded = _inflate(body, -15, bad)  # deflate without the zlib header, as some servers send it
        return body if decoded is None else decoded
    if DECODERS[encoding] == 47 and body[:2] != b"\x1f\x8b":
        return body
    decoded = _inflate(body, DECODERS[encoding], bad)
    if decoded is None:
        raise bad(f"the response body is not valid {encoding} data")
    return decoded


def _zlib_header(body: bytes) -> bool:
    return len(body) >= 2 and body[0] & 0x0F == 8 and (body[0] << 8 | body[1]) % 31 == 0


def _inflate(body: bytes, wbits: int, bad: Callable[[str], BadCassette]) -> bytes | None:
    """The body decompressed, or None when it is not a whole stream of that format (damaged or cut short)."""
    inflater = zlib.decompressobj(wbits)
    try:
        decoded = inflater.decompress(body, MAX_BODY_BYTES + 1)
    except zlib.error:
        return None
    if len(decoded) > MAX_BODY_BYTES:
        raise bad(f"the response body decompresses to more than {MAX_BODY_BYTES} bytes")
    return decoded if inflater.eof else None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"
