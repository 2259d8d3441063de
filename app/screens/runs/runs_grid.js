// The Runs page's table (app/screens/runs/runs_grid.py): a <table> of the page's runs, drawn from
// data = {columns: [{key, label, kind, help}], rows: [{column: value}], selected}.
// Sorting is the browser's (a click on a header: ascending, descending, the page's own
// order); a click on a row (or Enter on it) sends its run id ("select"). Every text is
// set with textContent: names and edits are untrusted.
const NUMERIC = new Set(["int", "seconds", "tokens", "cost"]);
// A column sorted by another of the row's values: the cost's text by its dollars.
const SORT_BY = { cost: "cost_usd" };
const INT = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });

function show(kind, v) {
  // (tokens null: no model call of the run reported usage, said as everywhere else)
  if (v === null || v === undefined) return kind === "tokens" ? "not reported" : "";
  if (kind === "seconds") return Number(v).toFixed(2) + " s";
  if (kind === "int" || kind === "tokens") return INT.format(v);
  return String(v);
}

function compare(kind, a, b) {
  const none = (v) => v === null || v === undefined || v === "";
  if (none(a) || none(b)) return none(a) === none(b) ? 0 : none(a) ? 1 : -1;  // empty last
  if (NUMERIC.has(kind)) return a - b;
  return String(a).localeCompare(String(b));
}

function build(host) {
  const wrap = document.createElement("div");
  wrap.className = "lt-runs";
  wrap.setAttribute("data-testid", "lt-runs-table");
  const table = document.createElement("table");
  const head = table.createTHead().insertRow();
  const body = table.createTBody();
  wrap.appendChild(table);
  host.appendChild(wrap);
  return { wrap, head, body, sig: null, data: null, sortKey: null, dir: 0, send: null };
}

function drawHead(S) {
  S.head.replaceChildren();
  for (const c of S.data.columns) {
    const th = document.createElement("th");
    th.dataset.key = c.key;
    th.dataset.kind = c.kind;
    th.setAttribute("aria-sort", c.key !== S.sortKey || !S.dir ? "none"
      : S.dir > 0 ? "ascending" : "descending");
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = c.label;
    if (c.help) b.title = c.help;
    b.addEventListener("click", () => {
      S.dir = c.key === S.sortKey ? (S.dir === 1 ? -1 : S.dir === -1 ? 0 : 1) : 1;
      S.sortKey = S.dir ? c.key : null;
      drawHead(S);
      drawBody(S);
    });
    th.appendChild(b);
    S.head.appendChild(th);
  }
}

function drawBody(S) {
  const cols = S.data.columns;
  let rows = S.data.rows;
  if (S.sortKey && S.dir) {
    const col = cols.find((c) => c.key === S.sortKey);
    // (stable: equal values keep the page's order; empty cells last either way)
    rows = rows.map((r, i) => [r, i]).sort(([a, i], [b, j]) => {
      const k = SORT_BY[col.kind] || col.key;
      const va = a[k], vb = b[k];
      const empty = (v) => v === null || v === undefined || v === "";
      if (empty(va) || empty(vb)) return compare(col.kind, va, vb) || i - j;
      return S.dir * compare(col.kind, va, vb) || i - j;
    }).map(([r]) => r);
  }
  const out = document.createDocumentFragment();
  for (const r of rows) {
    const tr = document.createElement("tr");
    tr.dataset.id = r.id;
    tr.tabIndex = 0;
    for (const c of cols) {
      const td = document.createElement("td");
      td.dataset.key = c.key;
      td.className = "lt-" + c.kind;
      const v = r[c.key];
      if (c.kind === "link") {
        if (v) {
          const a = document.createElement("a");
          a.href = v;
          a.target = "_blank";
          a.rel = "noopener noreferrer";
          a.textContent = "replay ↗";
          td.appendChild(a);
        }
      } else {
        // (an id: its first 12 characters, as the app's pickers show ids; the whole on hover)
        td.textContent = c.kind === "id" ? show(c.kind, v).slice(0, 12) : show(c.kind, v);
        if (c.kind === "id" || c.kind === "run" || c.kind === "text") td.title = show(c.kind, v);
      }
      tr.appendChild(td);
    }
    out.appendChild(tr);
  }
  S.body.replaceChildren(out);
  mark(S);
}

function mark(S) {
  for (const tr of S.body.rows) {
    tr.setAttribute("aria-selected", tr.dataset.id === S.data.selected ? "true" : "false");
  }
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let S = parentElement.__ltRuns;
  if (!S) {
    S = parentElement.__ltRuns = build(parentElement);
    const pick = (e) => {
      if (e.target.closest("a, button")) return;  // (a link opens; a header sorts)
      const tr = e.target.closest("tbody tr");
      if (!tr) return;
      S.data.selected = tr.dataset.id;
      mark(S);
      S.send("select", tr.dataset.id);
    };
    S.wrap.addEventListener("click", pick);
    S.wrap.addEventListener("keydown", (e) => { if (e.key === "Enter") pick(e); });
  }
  S.send = setTriggerValue;
  const sig = JSON.stringify([data.columns, data.rows]);
  if (sig !== S.sig) {  // (the fragment reruns every 2 s: draw only what changed)
    S.sig = sig;
    S.data = data;
    if (S.sortKey && !data.columns.some((c) => c.key === S.sortKey)) { S.sortKey = null; S.dir = 0; }
    drawHead(S);
    drawBody(S);
  } else if (data.selected !== S.data.selected) {
    S.data = data;
    mark(S);
  }
  S.wrap.dataset.rows = String(data.rows.length);
  return () => {
    S.wrap.remove();
    parentElement.__ltRuns = null;
  };
}
