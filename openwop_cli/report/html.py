"""`wop report`: one self-contained HTML file — timeline, JSON trees, filters, state at a seq, and the diff.

Everything is inline (CSS, JS, data); nothing is fetched, so it works from file:// and offline.
The data is gzip-compressed JSON lines in base64 (a header, then one record per event, timeline row and
state point, then the final state), written as the capture is read so wop holds one event at a time; the
browser's DecompressionStream unpacks it line by line. The timeline is paged (500 rows a page) rather than
cut and always has every row; the first MAX_PAGE_EVENTS events are embedded whole (their JSON trees),
later ones as their timeline rows, with `wop show --seq N` named for their full JSON.
The events are the capture's own, already redacted, and shown through its redaction profile again (Redactor.shown):
a capture made before a secret format was known shows none of it. `report.html#seq=N` opens with event N selected.
"""

import base64
import html
import zlib
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from openwop_cli.format.schema import dumps_wrapping
from openwop_cli.report.summary import summarize
from openwop_cli.report.timeline import paired_rows, row_text

PAGE_SIZE = 500
MAX_STATE_BYTES = 4096
MAX_PAGE_EVENTS = 100_000


def write_report(write: Callable[[str], Any], manifest: dict[str, Any], events: Iterable[dict[str, Any]], *,
                 diff: dict[str, Any] | None = None, against: dict[str, Any] | None = None) -> None:
    """Write the whole HTML page for a capture (and, with diff, its RFC 0054 diff against another run), streaming
    the events into it."""
    from openwop_cli.channels.fold import StateFold
    from openwop_cli.format.redact import Redactor

    redactor = Redactor.of_capture(manifest)
    manifest = redactor.redact_flagged(manifest)
    events = redactor.shown(events)
    head, tail = TEMPLATE.split("__DATA__")
    write(head.replace("__TITLE__", html.escape(f"wop report · {manifest.get('name') or manifest.get('captureId')}")))
    data = _Base64Gzip(write)
    data.record({"manifest": manifest, "diff": _diff_view(diff) if diff else None, "against": against,
                 "pageSize": PAGE_SIZE, "maxEvents": MAX_PAGE_EVENTS})
    fold = StateFold()
    count = 0

    def folded(stream: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
        nonlocal count
        for event in stream:
            fold.apply(event)
            if count < MAX_PAGE_EVENTS:
                data.record({"e": event})
                if event.get("type") == "state_mutation":
                    data.record({"s": [event["seq"], _bounded(fold.snapshot())]})
            count += 1
            yield event

    start = None
    for row in paired_rows(folded(events)):
        start = row.event.get("ts", 0) if start is None else start
        result = row.result
        data.record({"r": {
            "seq": row.event.get("seq"), "end": None if result is None else result.get("seq"),
            "ms": row.event.get("ts", 0) - start,
            "took": None if result is None else result.get("ts", 0) - row.event.get("ts", 0),
            "type": row.event.get("type"), "depth": row.depth, "text": row_text(row),
            "failed": bool(result is not None and (result.get("data") or {}).get("ok") is False),
        }})
    data.record({"final": fold.snapshot(), "eventCount": count})
    data.close()
    write(tail)


class _Base64Gzip:
    """JSON records, one a line, gzip-compressed and base64-encoded as they come (whole 3-byte groups only)."""

    def __init__(self, write: Callable[[str], Any]) -> None:
        self._write = write
        self._gzip = zlib.compressobj(6, zlib.DEFLATED, 31)
        self._pending = b""

    def record(self, value: Any) -> None:
        self._emit(self._gzip.compress(dumps_wrapping(value, orjson.OPT_APPEND_NEWLINE, default=repr)))

    def close(self) -> None:
        self._emit(self._gzip.flush())
        self._write(base64.b64encode(self._pending).decode("ascii"))
        self._pending = b""

    def _emit(self, compressed: bytes) -> None:
        if not compressed:
            return
        pending = self._pending + compressed
        whole = len(pending) - len(pending) % 3
        self._write(base64.b64encode(pending[:whole]).decode("ascii"))
        self._pending = pending[whole:]


def _bounded(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The state after a write, with any value too big to repeat at every write replaced by a note."""
    out: dict[str, Any] = {}
    for part in ("channels", "variables"):
        out[part] = {}
        for name, value in snapshot[part].items():
            size = len(orjson.dumps(value, default=repr))
            out[part][name] = value if size <= MAX_STATE_BYTES else f"({size} bytes: `wop state --at` shows it)"
    return out


def _diff_view(diff: dict[str, Any]) -> dict[str, Any]:
    items = [{"seq": item["seq"], "aSeq": item["aEvent"]["seq"] if item.get("aEvent") else None,
              "op": item["op"], "paths": item.get("paths", []),
              "a": item.get("aEvent"), "b": item.get("bEvent"),
              "aText": summarize(item["aEvent"]) if item.get("aEvent") else "",
              "bText": summarize(item["bEvent"]) if item.get("bEvent") else ""} for item in diff["eventDiffs"]]
    return {"divergedAtSeq": diff["divergedAtSeq"], "items": items, "counts": diff.get("counts"),
            "stateDiff": diff["stateDiff"], "truncated": diff["truncated"], "align": diff.get("align"),
            "a": diff["a"], "b": diff["b"]}


TEMPLATE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
:root { --bg:#0f1115; --panel:#171a21; --text:#d7dae0; --muted:#8a90a0; --accent:#6cb6ff; --bad:#ff7b72;
        --good:#7ee787; --warn:#e3b341; --hl:#3b2f12; }
* { box-sizing: border-box; }
body { margin:0; font:13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background:var(--bg); color:var(--text); }
header { padding:10px 16px; background:var(--panel); border-bottom:1px solid #262b36; }
header h1 { font-size:15px; margin:0 0 4px; } header .meta { color:var(--muted); }
.bar { display:flex; gap:8px; align-items:center; padding:8px 16px; border-bottom:1px solid #262b36; flex-wrap:wrap; }
.bar input, .bar select, .bar button { background:#0b0d12; color:var(--text); border:1px solid #313847; padding:4px 8px; font:inherit; }
main { display:grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); height: calc(100vh - 96px); }
#timeline { overflow:auto; border-right:1px solid #262b36; }
#detail { overflow:auto; padding:10px 14px; }
table { border-collapse:collapse; width:100%; table-layout:fixed; }
td { padding:2px 8px; white-space:nowrap; overflow:hidden; text-overflow:ellipsis; }
td.seq { color:var(--accent); text-align:right; } td.ms, td.took { color:var(--muted); text-align:right; }
tr { cursor:pointer; } tr:hover { background:#1d2230; } tr.selected { background:#233047; }
tr.failed td.text { color:var(--bad); } tr.diverged { background:var(--hl); } tr.diverged td.seq::before { content:"✗ "; color:var(--bad); }
tr.first-divergence { outline:2px solid var(--bad); }
.t-llm_request, .t-llm_response { color:#79c0ff; } .t-tool_call, .t-tool_result { color:#d2a8ff; }
.t-state_mutation { color:var(--good); } .t-nondeterministic { color:var(--warn); } .t-replay_diverged { color:var(--bad); }
details { margin-left:14px; } summary { cursor:pointer; color:var(--accent); } .k { color:#ffa657; } .s { color:#a5d6ff; } .n { color:#79c0ff; }
.leaf { margin-left:14px; } h2 { font-size:13px; color:var(--muted); text-transform:uppercase; margin:14px 0 6px; }
.side { display:grid; grid-template-columns:1fr 1fr; gap:10px; } .side > div { background:var(--panel); padding:6px; overflow:auto; }
.path-hl { background:#5c1f1f; outline:1px solid var(--bad); }
#pager { color:var(--muted); }
</style></head>
<body>
<header><h1 id="title">wop report</h1><div class="meta" id="meta">loading…</div></header>
<div class="bar">
  <label>type <select id="type"><option value="">all</option></select></label>
  <label>filter <input id="grep" placeholder="text in the event" size="28"></label>
  <button id="prev">◀</button><span id="pager"></span><button id="next">▶</button>
  <span id="diffinfo"></span>
</div>
<main><div id="timeline"><table><colgroup><col style="width:92px"><col style="width:84px"><col style="width:70px">
<col style="width:140px"><col></colgroup><tbody id="rows"></tbody></table></div><div id="detail"><p class="meta">Click an event.</p></div></main>
<script id="wop-data" type="application/octet-stream">__DATA__</script>
<script>
"use strict";
let DATA = null, shown = [], page = 0;
const $ = (id) => document.getElementById(id);

async function unpack() {
  const text = document.getElementById("wop-data").textContent.trim();
  const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  const reader = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))
    .pipeThrough(new TextDecoderStream()).getReader();
  const data = {events: [], rows: [], state: []};
  const take = (line) => {
    if (!line) return;
    const record = JSON.parse(line);
    if (record.e) data.events.push(record.e); else if (record.r) data.rows.push(record.r);
    else if (record.s) data.state.push(record.s); else Object.assign(data, record);
  };
  let rest = "";
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    const lines = (rest + value).split("\n");
    rest = lines.pop();
    lines.forEach(take);
  }
  take(rest);
  return data;
}

function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }

function tree(value, key, highlight, path) {
  path = path || "$";
  const hl = highlight && highlight.has(path);
  if (value !== null && typeof value === "object") {
    const d = el("details"); d.open = path.split(/[.\[]/).length < 4 || (highlight && [...highlight].some((p) => p.startsWith(path)));
    const s = el("summary", hl ? "path-hl" : "");
    s.append(el("span", "k", key === undefined ? "" : key + " "), el("span", "", Array.isArray(value) ? "[" + value.length + "]" : "{…}"));
    d.append(s);
    for (const [k, v] of Object.entries(value)) {
      const child = Array.isArray(value) ? path + "[" + k + "]" : path + "." + k;
      d.append(tree(v, Array.isArray(value) ? "[" + k + "]" : k, highlight, child));
    }
    return d;
  }
  const leaf = el("div", "leaf" + (hl ? " path-hl" : ""));
  leaf.append(el("span", "k", key === undefined ? "" : key + ": "),
              el("span", typeof value === "string" ? "s" : "n", JSON.stringify(value)));
  return leaf;
}

function stateAt(seq) {
  let lo = 0, hi = DATA.state.length - 1, found = null;
  while (lo <= hi) { const mid = (lo + hi) >> 1; if (DATA.state[mid][0] <= seq) { found = DATA.state[mid][1]; lo = mid + 1; } else hi = mid - 1; }
  return found || {channels: {}, variables: {}};
}

const bySeq = new Map();
function eventAt(seq) { return bySeq.get(seq); }

function select(row, tr) {
  document.querySelectorAll("tr.selected").forEach((e) => e.classList.remove("selected"));
  if (tr) tr.classList.add("selected");
  const detail = $("detail"); detail.replaceChildren();
  detail.append(el("h2", "", "event" + (row.end !== null ? "s " + row.seq + "–" + row.end : " " + row.seq)));
  const site = ((eventAt(row.seq) || {}).origin || {}).site;
  if (site) detail.append(el("div", "meta site", "called from " + site.file + ":" + site.line + " in " + site.function + "()"));
  for (const seq of row.end !== null ? [row.seq, row.end] : [row.seq]) {
    detail.append(eventAt(seq) !== undefined ? tree(eventAt(seq), "seq " + seq) : el("div", "meta",
      "seq " + seq + " is in the timeline only: this page embeds the first " + DATA.maxEvents +
      " events whole; run `wop show " + DATA.manifest.captureId + " --seq " + seq + "` for its JSON"));
  }
  const diff = DATA.diff && DATA.diff.items.find((d) => d.aSeq !== null && (d.aSeq === row.seq || d.aSeq === row.end));
  if (diff) {
    detail.append(el("h2", "", "diff · " + diff.op + " · " + diff.paths.join(", ")));
    const side = el("div", "side"), left = el("div"), right = el("div");
    const hl = new Set(diff.paths);
    left.append(el("div", "meta", "A " + DATA.diff.a)); right.append(el("div", "meta", "B " + DATA.diff.b));
    if (diff.a) left.append(tree(diff.a.data, "data", hl)); if (diff.b) right.append(tree(diff.b.data, "data", hl));
    side.append(left, right); detail.append(side);
  }
  detail.append(el("h2", "", "state after seq " + (row.end !== null ? row.end : row.seq)));
  detail.append(tree(stateAt(row.end !== null ? row.end : row.seq), "state"));
}

function applyFilters() {
  const type = $("type").value, grep = $("grep").value.toLowerCase();
  shown = DATA.rows.filter((r) => (!type || r.type === type) &&
    (!grep || r.text.toLowerCase().includes(grep) || (JSON.stringify(eventAt(r.seq)) || "").toLowerCase().includes(grep)));
  page = 0; render();
}

function render() {
  const pages = Math.max(1, Math.ceil(shown.length / DATA.pageSize));
  page = Math.min(page, pages - 1);
  $("pager").textContent = "page " + (page + 1) + " of " + pages + " · " + shown.length + " rows";
  const body = $("rows"); body.replaceChildren();
  const diverged = new Set(DATA.diff ? DATA.diff.items.filter((d) => d.aSeq !== null).map((d) => d.aSeq) : []);
  for (const row of shown.slice(page * DATA.pageSize, (page + 1) * DATA.pageSize)) {
    const tr = el("tr", (row.failed ? "failed " : "") + (diverged.has(row.seq) || diverged.has(row.end) ? "diverged " : "") +
      (DATA.diff && DATA.diff.divergedAtSeq !== null && (row.seq === DATA.diff.divergedAtSeq || row.end === DATA.diff.divergedAtSeq) ? "first-divergence" : ""));
    tr.dataset.seq = row.seq;
    tr.append(el("td", "seq", row.end !== null ? row.seq + "–" + row.end : String(row.seq)),
              el("td", "ms", "+" + (row.ms / 1000).toFixed(3) + "s"), el("td", "took", row.took === null ? "" : row.took + "ms"),
              el("td", "type t-" + row.type, row.type), el("td", "text", "\u00a0".repeat(row.depth * 2) + row.text));
    tr.addEventListener("click", () => select(row, tr));
    body.append(tr);
  }
}

unpack().then((data) => {
  DATA = data;
  for (const event of DATA.events) bySeq.set(event.seq, event);
  const m = DATA.manifest;
  $("title").textContent = "wop · " + (m.name || m.captureId);
  $("meta").textContent = m.captureId + " · status " + m.status + " · " + DATA.eventCount + " events" +
    (DATA.events.length < DATA.eventCount ? " (the first " + DATA.events.length + " embedded whole, every one in the timeline)" : "") +
    (DATA.against ? " · compared with " + (DATA.against.name || DATA.against.captureId) : "");
  for (const type of [...new Set(DATA.rows.map((r) => r.type))].sort()) $("type").append(new Option(type, type));
  if (DATA.diff) {
    const c = DATA.diff.counts || {};
    $("diffinfo").textContent = DATA.diff.divergedAtSeq === null ? "identical to " + DATA.diff.b :
      "diverged at seq " + DATA.diff.divergedAtSeq + " (" + (c.changed || 0) + " changed, " + (c.added || 0) + " added, " +
      (c.removed || 0) + " removed; aligned by " + DATA.diff.align + ")";
  }
  $("type").addEventListener("change", applyFilters); $("grep").addEventListener("input", applyFilters);
  $("prev").addEventListener("click", () => { page = Math.max(0, page - 1); render(); });
  $("next").addEventListener("click", () => { page += 1; render(); });
  shown = DATA.rows;
  if (DATA.diff && DATA.diff.divergedAtSeq !== null) {
    const index = shown.findIndex((r) => r.seq === DATA.diff.divergedAtSeq || r.end === DATA.diff.divergedAtSeq);
    page = Math.max(0, Math.floor(index / DATA.pageSize));
    render();
    const row = shown[index]; const tr = document.querySelector('tr[data-seq="' + row.seq + '"]');
    if (tr) { tr.scrollIntoView({block: "center"}); select(row, tr); }
  } else { render(); }
  const wanted = typeof location !== "undefined" && /^#seq=(\d+)$/.exec(location.hash);
  if (wanted) {
    const seq = Number(wanted[1]);
    const index = shown.findIndex((r) => r.seq === seq || r.end === seq);
    if (index >= 0) { page = Math.floor(index / DATA.pageSize); render();
      const tr = document.querySelector('tr[data-seq="' + shown[index].seq + '"]'); if (tr) { tr.scrollIntoView({block: "center"}); tr.click(); } }
  }
  document.body.dataset.ready = "true";
});
</script></body></html>
"""
