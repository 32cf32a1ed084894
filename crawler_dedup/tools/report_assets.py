"""The report page's style sheet and script (report.py fills in the data). The script builds the
page with textContent only and links http(s) URLs only: crawled content stays inert."""

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#222}
h1{font-size:20px;margin:0 0 4px} .meta{color:#555;margin:0 0 12px}
.plots{display:flex;flex-wrap:wrap;gap:12px} .plot{border:1px solid #ddd;background:#fcfcfc}
.bar{fill:#4a7ab5} .bar:hover{fill:#e07b39} .axis{stroke:#888} .tick{font-size:10px;fill:#444} .ptitle{font-size:13px;font-weight:600}
.controls{margin:16px 0 8px;display:flex;gap:8px;align-items:center} #filter{width:320px;padding:4px}
table{border-collapse:collapse;width:100%} th,td{border-bottom:1px solid #e4e4e4;padding:3px 6px;text-align:left;vertical-align:top}
th{cursor:pointer;background:#f2f2f2;position:sticky;top:0;z-index:1;user-select:none;white-space:nowrap}
td.t{white-space:nowrap} td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.drop{cursor:pointer} tr.drop:hover{background:#f6f9fd} tr.drop:focus{outline:2px solid #4a7ab5;outline-offset:-2px}
tr.sel,tr.sel:hover{background:#fff4d6} tr.sel>td{border-bottom-color:transparent}
td.url{min-width:9em;max-width:26em}
.u{display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:6;overflow:hidden;overflow-wrap:normal;word-break:normal}
.u .seg{white-space:nowrap} .u .host{white-space:nowrap;color:#7a8594}
.u .long{display:inline-block;max-width:20em;overflow:hidden;text-overflow:ellipsis;vertical-align:bottom}
tr.detail>td{padding:0 6px 12px;background:#fff4d6;border-bottom:2px solid #e0c27a}
#detail{box-sizing:border-box;width:0;min-width:100%;border:1px solid #d8c9a0;padding:10px;background:#fff;max-height:70vh;overflow:auto}
#detail h2{font-size:16px;margin:0 0 6px} #detail p{overflow-wrap:anywhere}
#detail .close{float:right;margin-left:8px;cursor:pointer}
.diff{width:100%;table-layout:fixed;font-size:13px} .diff th{position:static;cursor:default} .diff td{border:none;padding:2px 6px;overflow-wrap:anywhere}
.diff .del{background:#fde2e1} .diff .ins{background:#dff5e1} .diff .chg{background:#fff2c6} .diff .mark{width:16px;color:#888}
.diff del{background:#f5a9a3;text-decoration:none;border-radius:2px} .diff ins{background:#8fd99b;text-decoration:none;border-radius:2px}
.note{color:#8a5a00} .fold{color:#777;text-align:center;font-style:italic}
"""

SCRIPT = r"""
(function(){
"use strict";
var data = JSON.parse(document.getElementById("data").textContent);
var cols = data.columns, rows = data.rows, ci = {};
cols.forEach(function(c, i){ ci[c] = i; });
var numeric = {n: 1, similarity: 1, distance: 1};
var shown = ["n", "time", "url", "duplicate_of", "reason", "similarity", "distance", "title"];
var sortCol = "n", sortDir = 1, MAXSHOW = 1000;
var tbody = document.getElementById("rows"), head = document.getElementById("head");
var filterBox = document.getElementById("filter"), reasonSel = document.getElementById("reason");
var countEl = document.getElementById("count");
var open = null;  // the expanded row: {n, tr, row}

function el(tag, text, cls){ var e = document.createElement(tag); if (text !== undefined && text !== null) e.textContent = String(text); if (cls) e.className = cls; return e; }
function link(url){
  // only http(s) URLs become links; anything else (javascript:, data:) stays text
  if (typeof url === "string" && /^https?:\/\//i.test(url)) {
    var a = el("a", url); a.href = url; a.rel = "noopener noreferrer nofollow"; a.target = "_blank"; return a;
  }
  return el("span", url);
}
// A URL cell: scheme and host muted, the rest in unbreakable pieces with a break chance only after
// "/" and before "?", "&", ";", "#" (<wbr>), an over-long piece cut with an ellipsis; the full URL
// stays the text, the link and the tooltip.
var SCHEME_HOST = /^[a-z][a-z0-9+.\-]*:\/\/[^\/?#;&]*/i, LONGSEG = 40;
function urlCell(url){
  var td = el("td", null, "url"), box = link(url), s = url === null || url === undefined ? "" : String(url);
  box.textContent = ""; box.classList.add("u"); box.title = s;
  var m = SCHEME_HOST.exec(s), rest = s;
  if (m) { box.appendChild(el("span", m[0], "host" + (m[0].length > LONGSEG ? " long" : ""))); rest = s.slice(m[0].length); }
  rest.split(/(?<=\/)|(?=[?&;#])/).forEach(function(seg, i){
    if (!seg) return;
    if (i || m) box.appendChild(document.createElement("wbr"));
    box.appendChild(el("span", seg, "seg" + (seg.length > LONGSEG ? " long" : "")));
  });
  td.appendChild(box);
  return td;
}
var reasons = {};
rows.forEach(function(r){ reasons[r[ci.reason]] = 1; });
Object.keys(reasons).sort().forEach(function(r){ var o = el("option", r); o.value = r; reasonSel.appendChild(o); });

shown.forEach(function(c){
  var th = el("th", c); th.dataset.col = c;
  th.addEventListener("click", function(){ sortDir = (sortCol === c) ? -sortDir : 1; sortCol = c; render(); });
  head.appendChild(th);
});

function cmp(a, b){
  var i = ci[sortCol], x = a[i], y = b[i];
  if (x === y) return a[0] - b[0];
  if (x === null || x === undefined) return 1;
  if (y === null || y === undefined) return -1;
  if (numeric[sortCol]) return (x - y) * sortDir;
  return String(x).localeCompare(String(y)) * sortDir;
}
function render(){
  var q = filterBox.value.trim().toLowerCase(), reason = reasonSel.value;
  var list = rows.filter(function(r){
    if (reason && r[ci.reason] !== reason) return false;
    if (!q) return true;
    return [r[ci.url], r[ci.duplicate_of], r[ci.title], r[ci.duplicate_of_title]].some(function(v){
      return typeof v === "string" && v.toLowerCase().indexOf(q) >= 0; });
  });
  list.sort(cmp);
  Array.prototype.forEach.call(head.children, function(th){
    th.textContent = th.dataset.col + (th.dataset.col === sortCol ? (sortDir > 0 ? " \u25b2" : " \u25bc") : "");
  });
  var keep = open ? open.n : null, reopen = null;
  open = null;
  tbody.textContent = "";
  list.slice(0, MAXSHOW).forEach(function(r){
    var tr = document.createElement("tr");
    tr.className = "drop"; tr.tabIndex = 0; tr.setAttribute("aria-expanded", "false");
    shown.forEach(function(c){
      var v = r[ci[c]], td;
      if (c === "url" || c === "duplicate_of") td = urlCell(v);
      else if (c === "time") td = el("td", v, "t");
      else if (c === "similarity") td = el("td", typeof v === "number" ? v.toFixed(3) : v, "num");
      else if (numeric[c]) td = el("td", v, "num");
      else td = el("td", v);
      tr.appendChild(td);
    });
    tr.addEventListener("click", function(ev){
      if (ev.target.closest && ev.target.closest("a")) return;  // a link opens its page, not the diff
      toggle(r, tr);
    });
    tr.addEventListener("keydown", function(ev){
      if (ev.target === tr && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); toggle(r, tr); }
    });
    tbody.appendChild(tr);
    if (r[ci.n] === keep) reopen = [r, tr];
  });
  if (reopen) openDetail(reopen[0], reopen[1], false);  // a sort or filter keeps the open diff under its row
  countEl.textContent = list.length + " of " + rows.length + " rows" + (list.length > MAXSHOW ? " (first " + MAXSHOW + " shown: refine the filter)" : "");
}

function sentences(text){
  var out = [];
  String(text).split(/\n+/).forEach(function(p){
    p = p.replace(/\s+/g, " ").trim();
    if (p) p.split(/(?<=[.!?])\s+(?=\S)/).forEach(function(s){ out.push(s); });
  });
  return out;
}
function diffRows(a, b){
  var n = a.length, m = b.length, out = [];
  if (n * m > 4000000) { return [["chg", a.join(" "), b.join(" ")]]; }
  var L = []; for (var i = 0; i <= n; i++) { L.push(new Uint32Array(m + 1)); }
  for (i = n - 1; i >= 0; i--) for (var j = m - 1; j >= 0; j--)
    L[i][j] = a[i] === b[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  i = 0; j = 0; var dels = [], ins = [];
  function flush(){
    var k; for (k = 0; k < Math.max(dels.length, ins.length); k++) {
      var l = k < dels.length ? dels[k] : null, r = k < ins.length ? ins[k] : null;
      out.push([l !== null && r !== null ? "chg" : (l !== null ? "del" : "ins"), l, r]);
    }
    dels = []; ins = [];
  }
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { flush(); out.push(["eq", a[i], b[j]]); i++; j++; }
    else if (j >= m || (i < n && L[i + 1][j] >= L[i][j + 1])) { dels.push(a[i]); i++; }
    else { ins.push(b[j]); j++; }
  }
  flush();
  return out;
}

// -- words within a changed pair of sentences --
// Tokens: words (with inner ' or -) and single punctuation marks; the spaces between them are
// not compared. wordDiff marks the tokens outside a longest common subsequence. The common head
// and tail are cut off first; past WORDCELLS table cells the whole middle counts as changed (the
// cost stays bounded for huge sentences). A pair with under a quarter in common is marked whole:
// scattered "the" and "," kept between unrelated sentences only add noise.
var WORD = /[\p{L}\p{N}\p{M}_]+(?:['\u2019\-][\p{L}\p{N}\p{M}_]+)*|[^\s\p{L}\p{N}\p{M}_]/gu, WORDCELLS = 250000;
function tokens(s){
  var out = [], m; WORD.lastIndex = 0;
  while ((m = WORD.exec(s)) !== null) out.push({t: m[0], at: m.index});
  return out;
}
function wordDiff(ta, tb){
  var n = ta.length, m = tb.length, ka = new Uint8Array(n).fill(1), kb = new Uint8Array(m).fill(1);
  var p = 0, s = 0, same = 0;
  while (p < n && p < m && ta[p].t === tb[p].t) { ka[p] = kb[p] = 0; p++; }
  while (s < n - p && s < m - p && ta[n - 1 - s].t === tb[m - 1 - s].t) { ka[n - 1 - s] = kb[m - 1 - s] = 0; s++; }
  same = p + s;
  var n2 = n - p - s, m2 = m - p - s, w = m2 + 1, measured = !(n2 && m2) || n2 * m2 <= WORDCELLS;
  if (n2 && m2 && measured) {
    var L = new Uint16Array((n2 + 1) * w), i, j;
    for (i = n2 - 1; i >= 0; i--) for (j = m2 - 1; j >= 0; j--)
      L[i * w + j] = ta[p + i].t === tb[p + j].t ? L[(i + 1) * w + j + 1] + 1 : Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
    i = 0; j = 0;
    while (i < n2 && j < m2) {
      if (ta[p + i].t === tb[p + j].t) { ka[p + i] = kb[p + j] = 0; same++; i++; j++; }
      else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) i++;
      else j++;
    }
  }
  if (measured && same * 4 < Math.max(n, m)) { ka.fill(1); kb.fill(1); }
  return [ka, kb];
}
// One side of a pair: runs of marked tokens (with the spaces inside a run) in one <del>/<ins>.
function wordCell(text, toks, marks, tag){
  var td = document.createElement("td"), pos = 0, i = 0, j;
  while (i < toks.length) {
    for (j = i; j < toks.length && marks[j] === marks[i]; j++);
    var start = toks[i].at, end = toks[j - 1].at + toks[j - 1].t.length;
    if (start > pos) td.appendChild(document.createTextNode(text.slice(pos, start)));
    td.appendChild(marks[i] ? el(tag, text.slice(start, end)) : document.createTextNode(text.slice(start, end)));
    pos = end; i = j;
  }
  if (pos < text.length) td.appendChild(document.createTextNode(text.slice(pos)));
  return td;
}

function fill(box, r){
  var close = el("button", "close \u2715", "close"); close.type = "button"; close.title = "close (Escape)";
  close.addEventListener("click", function(){ var tr = open && open.tr; closeDetail(); if (tr) tr.focus(); });
  box.appendChild(close);
  var what = {unchanged: "unchanged since it was kept at " + r[ci.kept_at], superseded: "superseded by the URL its rel=canonical names (kept at " + r[ci.kept_at] + ")"}[r[ci.reason]] || (r[ci.reason] + " duplicate");
  box.appendChild(el("h2", "Drop #" + r[ci.n] + ": " + what + ", " + (r[ci.measure] || "") + " " + (typeof r[ci.similarity] === "number" ? r[ci.similarity].toFixed(3) : r[ci.similarity]) + ", distance " + r[ci.distance] + " bits"));
  [["dropped", ci.url, ci.title], ["kept", ci.duplicate_of, ci.duplicate_of_title]].forEach(function(s){
    var p = el("p"); p.appendChild(el("b", s[0] + ": ")); p.appendChild(link(r[s[1]]));
    if (r[s[2]]) { p.appendChild(el("span", " \u2014 " + r[s[2]])); }
    box.appendChild(p);
  });
  var dropped = data.texts[String(r[ci.n])], kept = data.kept[r[ci.duplicate_of]];
  if (typeof dropped !== "string" && r[ci.reason] === "unchanged" && r[ci.measure] === "exact") { dropped = kept; }  // same words: not repeated in the line
  if (typeof dropped !== "string" || typeof kept !== "string") {
    box.appendChild(el("p", (typeof dropped !== "string" ? "The dropped page's text is not in this report" : "The kept page's text is not in this report") +
      " (DEDUP_STORE_TEXT off, no --dir index, or beyond the latest " + Object.keys(data.texts).length + " drops with texts); titles and excerpt instead.", "note"));
    box.appendChild(el("p", "excerpt of the dropped page: " + (r[ci.excerpt] || "(none)")));
    return;
  }
  var t = el("table", null, "diff"), hd = document.createElement("tr");
  hd.appendChild(el("th", "kept page")); hd.appendChild(el("th", "", "mark")); hd.appendChild(el("th", "dropped page"));
  t.appendChild(hd);
  var marks = {eq: "", chg: "|", del: "<", ins: ">"}, drows = diffRows(sentences(kept), sentences(dropped));
  function addRow(d){
    var tr2 = document.createElement("tr"); tr2.className = d[0];
    if (d[0] === "chg") {
      var ta = tokens(d[1]), tb = tokens(d[2]), k = wordDiff(ta, tb);
      tr2.appendChild(wordCell(d[1], ta, k[0], "del")); tr2.appendChild(el("td", marks.chg, "mark")); tr2.appendChild(wordCell(d[2], tb, k[1], "ins"));
    } else {
      tr2.appendChild(el("td", d[1])); tr2.appendChild(el("td", marks[d[0]], "mark")); tr2.appendChild(el("td", d[2]));
    }
    t.appendChild(tr2);
  }
  // long runs of equal sentences folded to two on each side
  for (var k = 0; k < drows.length;) {
    var e = k; while (e < drows.length && drows[e][0] === "eq") e++;
    if (e - k > 5) {
      drows.slice(k, k + 2).forEach(addRow);
      var fold = document.createElement("tr"), td = el("td", "\u2026 " + (e - k - 4) + " equal sentences \u2026", "fold");
      td.colSpan = 3; fold.appendChild(td); t.appendChild(fold);
      drows.slice(e - 2, e).forEach(addRow);
      k = e;
    } else if (e > k) { drows.slice(k, e).forEach(addRow); k = e; }
    else { addRow(drows[k]); k++; }
  }
  if (!drows.some(function(d){ return d[0] !== "eq"; })) box.appendChild(el("p", "The two extracted texts are the same.", "note"));
  box.appendChild(t);
}

// -- the diff opens as a row right under the clicked one --
function closeDetail(){
  if (!open) return;
  open.tr.classList.remove("sel"); open.tr.setAttribute("aria-expanded", "false");
  if (open.row.parentNode) open.row.parentNode.removeChild(open.row);
  open = null;
}
function openDetail(r, tr, reveal){
  var was = tr.getBoundingClientRect().top;
  closeDetail();
  // a diff closed above the row pulls it up: scroll back so that it stays where it was clicked
  if (reveal && tr.getBoundingClientRect().top !== was) window.scrollBy(0, tr.getBoundingClientRect().top - was);
  var row = el("tr", null, "detail"), td = document.createElement("td"), box = el("div");
  box.id = "detail"; box.setAttribute("role", "region"); box.setAttribute("aria-label", "diff of drop " + r[ci.n]);
  td.colSpan = shown.length; fill(box, r); td.appendChild(box); row.appendChild(td);
  tr.parentNode.insertBefore(row, tr.nextSibling);
  tr.classList.add("sel"); tr.setAttribute("aria-expanded", "true");
  open = {n: r[ci.n], tr: tr, row: row};
  if (reveal) inView(tr, row);
}
// Scroll just enough that the diff's end is on screen, never so far that the clicked row goes
// under the sticky header (the diff box is at most 70vh high, so both fit).
function inView(tr, row){
  var headH = head.firstChild ? head.firstChild.getBoundingClientRect().height : 0;
  var top = tr.getBoundingClientRect().top, bottom = row.getBoundingClientRect().bottom;
  var down = Math.min(bottom - window.innerHeight + 8, top - headH - 4);
  if (down > 0) window.scrollBy(0, down);
  else if (top < headH) window.scrollBy(0, top - headH - 4);
}
function toggle(r, tr){ if (open && open.tr === tr) closeDetail(); else openDetail(r, tr, true); }
document.addEventListener("keydown", function(ev){
  if (ev.key !== "Escape" || !open) return;
  var tr = open.tr, inside = tbody.contains(document.activeElement);
  closeDetail();
  if (inside) tr.focus();
});
filterBox.addEventListener("input", render);
reasonSel.addEventListener("change", render);
render();
window.reportReady = true;
})();
"""
