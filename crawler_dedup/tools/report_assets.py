"""The report page's style sheet and script (report.py fills in the data). The script builds the
page with textContent only and links http(s) URLs only: crawled content stays inert."""

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#222}
h1{font-size:20px;margin:0 0 4px} .meta{color:#555;margin:0 0 12px}
.plots{display:flex;flex-wrap:wrap;gap:12px} .plot{border:1px solid #ddd;background:#fcfcfc}
.bar{fill:#4a7ab5} .bar:hover{fill:#e07b39} .axis{stroke:#888} .tick{font-size:10px;fill:#444} .ptitle{font-size:13px;font-weight:600}
.controls{margin:16px 0 8px;display:flex;gap:8px;align-items:center} #filter{width:320px;padding:4px}
table{border-collapse:collapse;width:100%} th,td{border-bottom:1px solid #e4e4e4;padding:3px 6px;text-align:left;vertical-align:top}
th{cursor:pointer;background:#f2f2f2;position:sticky;top:0;user-select:none} td.url{max-width:340px;overflow-wrap:anywhere}
td.t{white-space:nowrap} td.num{text-align:right;font-variant-numeric:tabular-nums} tr.sel{background:#fff4d6}
#detail{border:1px solid #ccc;padding:10px;margin:12px 0;background:#fafafa} #detail h2{font-size:16px;margin:0 0 6px}
.diff{width:100%;table-layout:fixed;font-size:13px} .diff th{position:static} #detail{max-height:70vh;overflow:auto} .diff td{border:none;padding:2px 6px}
.diff .del{background:#fde2e1} .diff .ins{background:#dff5e1} .diff .chg{background:#fff2c6} .diff .mark{width:16px;color:#888}
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
var countEl = document.getElementById("count"), detail = document.getElementById("detail");

function el(tag, text, cls){ var e = document.createElement(tag); if (text !== undefined && text !== null) e.textContent = String(text); if (cls) e.className = cls; return e; }
function link(url){
  // only http(s) URLs become links; anything else (javascript:, data:) stays text
  if (typeof url === "string" && /^https?:\/\//i.test(url)) {
    var a = el("a", url); a.href = url; a.rel = "noopener noreferrer nofollow"; a.target = "_blank"; return a;
  }
  return el("span", url);
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
  tbody.textContent = "";
  list.slice(0, MAXSHOW).forEach(function(r){
    var tr = document.createElement("tr");
    shown.forEach(function(c){
      var v = r[ci[c]], td;
      if (c === "url" || c === "duplicate_of") { td = el("td", null, "url"); td.appendChild(link(v)); }
      else if (c === "time") td = el("td", v, "t");
      else if (c === "similarity") td = el("td", typeof v === "number" ? v.toFixed(3) : v, "num");
      else if (numeric[c]) td = el("td", v, "num");
      else td = el("td", v);
      tr.appendChild(td);
    });
    tr.addEventListener("click", function(){ select(r, tr); });
    tbody.appendChild(tr);
  });
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
function select(r, tr){
  Array.prototype.forEach.call(tbody.querySelectorAll("tr.sel"), function(x){ x.classList.remove("sel"); });
  tr.classList.add("sel");
  detail.textContent = "";
  detail.hidden = false;
  var what = {unchanged: "unchanged since it was kept at " + r[ci.kept_at], superseded: "superseded by the URL its rel=canonical names (kept at " + r[ci.kept_at] + ")"}[r[ci.reason]] || (r[ci.reason] + " duplicate");
  detail.appendChild(el("h2", "Drop #" + r[ci.n] + ": " + what + ", " + (r[ci.measure] || "") + " " + (typeof r[ci.similarity] === "number" ? r[ci.similarity].toFixed(3) : r[ci.similarity]) + ", distance " + r[ci.distance] + " bits"));
  [["dropped", ci.url, ci.title], ["kept", ci.duplicate_of, ci.duplicate_of_title]].forEach(function(s){
    var p = el("p"); p.appendChild(el("b", s[0] + ": ")); p.appendChild(link(r[s[1]]));
    if (r[s[2]]) { p.appendChild(el("span", " \u2014 " + r[s[2]])); }
    detail.appendChild(p);
  });
  var dropped = data.texts[String(r[ci.n])], kept = data.kept[r[ci.duplicate_of]];
  if (typeof dropped !== "string" && r[ci.reason] === "unchanged" && r[ci.measure] === "exact") { dropped = kept; }  // same words: not repeated in the line
  if (typeof dropped !== "string" || typeof kept !== "string") {
    detail.appendChild(el("p", (typeof dropped !== "string" ? "The dropped page's text is not in this report" : "The kept page's text is not in this report") +
      " (DEDUP_STORE_TEXT off, no --dir index, or beyond the latest " + Object.keys(data.texts).length + " drops with texts); titles and excerpt instead.", "note"));
    detail.appendChild(el("p", "excerpt of the dropped page: " + (r[ci.excerpt] || "(none)")));
    return;
  }
  var t = el("table", null, "diff"), hd = document.createElement("tr");
  hd.appendChild(el("th", "kept page")); hd.appendChild(el("th", "", "mark")); hd.appendChild(el("th", "dropped page"));
  t.appendChild(hd);
  var marks = {eq: "", chg: "|", del: "<", ins: ">"}, drows = diffRows(sentences(kept), sentences(dropped));
  function addRow(d){
    var tr2 = document.createElement("tr"); tr2.className = d[0];
    tr2.appendChild(el("td", d[1])); tr2.appendChild(el("td", marks[d[0]], "mark")); tr2.appendChild(el("td", d[2]));
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
  if (!drows.some(function(d){ return d[0] !== "eq"; })) detail.appendChild(el("p", "The two extracted texts are the same.", "note"));
  detail.appendChild(t);
}
filterBox.addEventListener("input", render);
reasonSel.addEventListener("change", render);
render();
window.reportReady = true;
})();
"""
