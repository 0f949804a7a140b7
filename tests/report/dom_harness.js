// Runs the inline script of a wop HTML report under node with a small DOM stand-in, clicks like a
// user would, and prints what the page shows as JSON. Used by test_html_report.py when no headless
// browser is installed (a real browser test runs too when `chromium` is on PATH).
"use strict";
const fs = require("fs");
const vm = require("vm");

const html = fs.readFileSync(process.argv[2], "utf8");
const data = html.match(/<script id="wop-data" type="application\/octet-stream">([^<]*)<\/script>/)[1];
const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]);

class Element {
  constructor(tag) { this.tagName = tag.toUpperCase(); this.children = []; this.className = ""; this._text = "";
    this.dataset = {}; this.listeners = {}; this.open = false; this.value = "";
    const self = this;
    this.classList = { add(c) { self.className = (self.className + " " + c).trim(); },
                       remove(c) { self.className = self.className.split(" ").filter((x) => x !== c).join(" "); },
                       contains(c) { return self.className.split(" ").includes(c); } }; }
  get textContent() { return this._text + this.children.map((c) => c.textContent).join(""); }
  set textContent(v) { this._text = String(v); this.children = []; }
  append(...nodes) { for (const n of nodes) this.children.push(typeof n === "string" ? Object.assign(new Element("#text"), {_text: n}) : n); }
  replaceChildren(...nodes) { this.children = []; this.append(...nodes); }
  addEventListener(type, fn) { this.listeners[type] = fn; }
  click() { if (this.listeners.click) this.listeners.click(); }
  scrollIntoView() {}
  *walk() { yield this; for (const c of this.children) yield* c.walk(); }
}

const ids = {};
for (const id of ["title", "meta", "type", "grep", "prev", "next", "pager", "diffinfo", "rows", "detail", "wop-data"]) ids[id] = new Element("div");
ids["wop-data"].textContent = data;
const all = () => Object.values(ids).flatMap((e) => [...e.walk()]);
const document = {
  body: { dataset: {} },
  getElementById: (id) => ids[id],
  createElement: (tag) => new Element(tag),
  querySelectorAll: (selector) => { const [tag, cls] = selector.split("."); return all().filter((e) => e.tagName === tag.toUpperCase() && e.classList.contains(cls)); },
  querySelector: (selector) => { const seq = selector.match(/data-seq="([^"]+)"/)[1]; return ids.rows.children.find((tr) => String(tr.dataset.seq) === seq) || null; },
};
class Option extends Element { constructor(text, value) { super("option"); this.textContent = text; this.value = value; } }

const context = vm.createContext({ document, Option, atob, Blob, Response, DecompressionStream, TextDecoderStream, Uint8Array, JSON, Map, Set,
                                   Math, String, Object, Array, console, setTimeout });
for (const script of scripts) vm.runInContext(script, context);

function wait() {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    (function poll() { if (document.body.dataset.ready) resolve(); else if (Date.now() - started > 20000) reject(new Error("timeout")); else setTimeout(poll, 10); })();
  });
}

wait().then(() => {
  const rows = ids.rows.children;
  const first = rows.find((tr) => tr.classList.contains("first-divergence"));
  const autoSelected = [...ids.detail.walk()].filter((e) => e.className.includes("path-hl")).map((e) => e.textContent);
  const clicked = rows[Math.min(2, rows.length - 1)];
  clicked.click();
  const detail = [...ids.detail.walk()];
  process.stdout.write(JSON.stringify({
    rows: rows.length, pager: ids.pager.textContent, meta: ids.meta.textContent, diffinfo: ids.diffinfo.textContent,
    firstDivergence: first ? first.dataset.seq : null, highlighted: autoSelected,
    diverged: rows.filter((tr) => tr.classList.contains("diverged")).map((tr) => tr.dataset.seq),
    clickedSeq: clicked.dataset.seq, detailHeadings: detail.filter((e) => e.tagName === "H2").map((e) => e.textContent),
    trees: detail.filter((e) => e.tagName === "DETAILS").length,
    sites: detail.filter((e) => e.className.includes("site")).map((e) => e.textContent),
  }));
}).catch((error) => { console.error(error); process.exit(1); });
