/* looptrace's replayer: one run stepped and played in the browser.

   One script for both hosts: the HTML export inlines it in a page, the app's
   Streamlit component (app/panes/replayer_component.py) loads it into a shadow root.
   Python builds the run's JSON once (tracer/replayer/data.py: replay_json);
   this script only picks from it, so a step is a few class changes and a
   message-list edit, with no server round trip.

   createReplayer(host, options) builds the replayer inside ``host`` and
   returns {load, go, play, pause, toggle, setSpeed, setMarkers, setHighlight,
   step, steps, playing, run, destroy}. setMarkers([{step, severity}]) marks
   findings on the tick strip (a triangle below), [{step, kind: "note"}] a
   person's notes (a dot above); step: 0-based. Options:
     layout     the drawing (tracer.read.graph_layout.drawing())
     parts      which parts to show: {controls, caption, messages, inspector}
     keyboard   listen for the replay's keys on the document
     speed      the starting speed (1 = one step every stepMs)
     stepMs     how long a step shows at 1x (1200)
     onStep(i, cause)  after a step is shown; cause: 'load', 'user', 'play',
                'server', 'pause'
     onOpen(runId)  shows "Open subagent" at a tool call that ran one
     onWindow(i)  a run sent as a window (offset/total/kinds): step i is needed

   Trace text (messages, names, ids, captions) reaches the page through
   textContent only: nothing from a trace is ever parsed as HTML.

   Stable hooks for tests (the same in the app and the export): the root
   [data-testid="lt-replayer"] with data-step (0-based index), data-steps,
   data-active-node, data-kind, data-playing ("1"/"0"), data-jump, data-run,
   data-speed; buttons [data-action="first|prev|play|pause|next|last|
   next-model|next-tool|next-error|open-subagent"]; speed buttons
   [data-speed="0.5|1|2|4"] (aria-pressed); .lt-counter ("Step N / M");
   input.lt-scrub (1-based); canvas.lt-ticks; .lt-caption; the graph
   [data-testid="lt-graph"] (data-step, data-active-node, data-shape "agent" or
   "loop") with g.node[data-node] (active, visited, passthrough, unknown, error,
   interrupt), g.edge[data-edge] (taken; jump or move off the standard edges),
   g.wrap[data-hook], g.cond, g.chip[data-tool-call]; messages
   .lt-msg[data-position][data-key] (current, error, omitted), .lt-call
   [data-call-id] (pending); the State view [data-testid="lt-state"] (hidden for a
   run with no state beyond messages; root data-state-keys) with .lt-state-key
   [data-key] (changed) and .lt-state-by, todos li.lt-todo[data-status] (changed,
   data-change added|status|removed), files li.lt-file[data-path] (written: opened on
   pre.lt-diff[data-added][data-removed] with span.lt-dl.lt-add / .lt-del / .lt-hunk),
   the LangGraph store's items (root data-store-items) .lt-state-key[data-key="store"]
   li.lt-store-item[data-ns][data-item] (written). */

function createReplayer(host, options) {
  "use strict";
  const opts = options || {};
  const L = opts.layout;
  const parts = Object.assign({ controls: true, caption: true, messages: true, inspector: false },
    opts.parts || {});
  const SPEEDS = [0.5, 1, 2, 4];
  const STEP_MS = opts.stepMs || 1200;  // tracer.replayer.STEP_MS
  const NS = "http://www.w3.org/2000/svg";
  // The drawing of a run's shape: "agent" (the create_agent graph, L itself) or "loop"
  // (a run without middleware hooks: L.loop replaces the nodes, edges and boxes).
  function layoutOf(shape) { return shape === "loop" && L.loop ? Object.assign({}, L, L.loop) : L; }
  let LY = L, HOOK_OF = {};

  function h(tag, cls, text, attrs) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = String(text);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  }
  function s(tag, attrs, parent) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (parent) parent.appendChild(e);
    return e;
  }
  function setText(e, t) { e.textContent = t == null ? "" : String(t); }

  // -- the page ----------------------------------------------------------------------
  const root = h("div", "lt-replayer" + (opts.className ? " " + opts.className : ""), null,
    { "data-testid": "lt-replayer", "data-step": 0, "data-steps": 0, "data-playing": "0" });
  const ui = {};
  if (parts.controls) {
    const bar = h("div", "lt-bar", null, { role: "toolbar", "aria-label": "Replay controls" });
    // Icons are inline SVG shapes, not characters: media symbols are missing from the
    // fonts of many systems (an empty box in Debian's Chromium).
    const ICONS = { first: "M3 2h2v12H3z M14 2v12L6 8z", prev: "M12 2v12L4 8z",
      play: "M4 2v12l10-6z", pause: "M3 2h4v12H3z M9 2h4v12H9z", next: "M4 2v12l8-6z",
      last: "M2 2v12l8-6z M11 2h2v12h-2z" };
    const btn = (action, label, title) => {
      const b = h("button", "lt-btn lt-" + action, null, { type: "button", "data-action": action,
        title: title, "aria-label": title });
      if (ICONS[action]) {
        const svg = s("svg", { viewBox: "0 0 16 16", class: "lt-icon", "aria-hidden": "true" }, b);
        s("path", { d: ICONS[action] }, svg);
      }
      if (label) b.appendChild(h("span", "", label));
      bar.appendChild(b);
      return b;
    };
    ui.first = btn("first", "", "First step (Home)");
    ui.prev = btn("prev", "", "Step back (Left arrow)");
    ui.play = btn("play", "Play", "Play (Space)");
    ui.pause = btn("pause", "Pause", "Pause (Space)");
    ui.next = btn("next", "", "Step forward (Right arrow)");
    ui.last = btn("last", "", "Last step (End)");
    ui.counter = h("span", "lt-counter", "Step 0 / 0", { "aria-live": "polite" });
    bar.appendChild(ui.counter);
    ui.nextModel = btn("next-model", "Next model call", "Jump to the next model call");
    ui.nextTool = btn("next-tool", "Next tool call", "Jump to the next tool call");
    ui.nextError = btn("next-error", "Next error", "Jump to the next error");
    ui.speed = h("span", "lt-speed", null, { role: "group", "aria-label": "Speed" });
    for (const sp of SPEEDS) {
      ui.speed.appendChild(h("button", "lt-btn", sp + "x",
        { type: "button", "data-speed": sp, "aria-pressed": "false", title: "Play at " + sp + "x" }));
    }
    bar.appendChild(ui.speed);
    root.appendChild(bar);
    const scrub = h("div", "lt-scrubber");
    ui.ticks = h("canvas", "lt-ticks", null, { height: 14, "aria-hidden": "true" });
    ui.scrub = h("input", "lt-scrub", null, { type: "range", min: 1, max: 1, value: 1,
      "aria-label": "Step" });
    scrub.appendChild(ui.ticks);
    scrub.appendChild(ui.scrub);
    root.appendChild(scrub);
  }
  if (parts.caption) {
    ui.caption = h("div", "lt-caption-box", null, { "aria-live": "polite" });
    ui.kind = h("span", "lt-kind");
    ui.captionText = h("span", "lt-caption");
    ui.caption.appendChild(ui.kind);
    ui.caption.appendChild(ui.captionText);
    root.appendChild(ui.caption);
  }
  ui.open = h("button", "lt-btn lt-open", "", { type: "button", "data-action": "open-subagent",
    hidden: "" });
  root.appendChild(ui.open);
  const panes = h("div", "lt-panes" + (parts.messages ? "" : " lt-graph-only"));
  root.appendChild(panes);
  const graphBox = h("section", "lt-pane lt-graph-pane", null, { "aria-label": "The loop as a graph" });
  panes.appendChild(graphBox);
  if (parts.messages) {
    const mp = h("section", "lt-pane lt-messages-pane", null, { "aria-label": "Messages" });
    ui.system = h("details", "lt-system", null, { hidden: "" });
    ui.system.appendChild(h("summary", "", "System prompt"));
    ui.systemText = h("pre", "lt-text");
    ui.system.appendChild(ui.systemText);
    mp.appendChild(ui.system);
    // The State view (tracer/replayer/state_view.py): every other state key at the step.
    ui.state = h("details", "lt-state", null, { open: "", hidden: "", "data-testid": "lt-state" });
    ui.state.appendChild(h("summary", "", "State"));
    ui.stateBody = h("div", "lt-state-body");
    ui.state.appendChild(ui.stateBody);
    mp.appendChild(ui.state);
    ui.list = h("div", "lt-messages");
    mp.appendChild(ui.list);
    panes.appendChild(mp);
  }
  if (parts.inspector) {
    ui.inspector = h("details", "lt-inspector");
    ui.inspector.appendChild(h("summary", "", "Step inspector"));
    ui.inspectorText = h("pre", "lt-text");
    ui.inspector.appendChild(ui.inspectorText);
    root.appendChild(ui.inspector);
  }
  host.appendChild(root);

  // -- the graph ---------------------------------------------------------------------
  let G = buildGraph(graphBox, "agent");
  function buildGraph(parent, shape) {
    const L = layoutOf(shape);
    LY = L;
    HOOK_OF = Object.fromEntries(L.nodes.map((n) => [n.id, n.hook]));
    const box = h("div", "lt-graph", null, { "data-testid": "lt-graph", "data-step": 0,
      "data-active-node": "START", "data-shape": shape });
    const svg = s("svg", { viewBox: L.viewBox.join(" "), role: "img", "aria-label": "agent loop graph" }, null);
    box.appendChild(svg);
    const defs = s("defs", {}, svg);
    for (const [id, cls] of [["lt-arrow", ""], ["lt-arrow-hot", "hot"], ["lt-arrow-jump", "jump"]]) {
      const m = s("marker", { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
        markerHeight: 7, orient: "auto-start-reverse", class: cls }, defs);
      s("path", { d: "M0 0 L10 5 L0 10 z" }, m);
    }
    const g = { box, shape, nodes: {}, wraps: {}, edges: {}, mw: {} };
    for (const w of L.wraps) {
      const wg = s("g", { class: "wrap", "data-hook": w.id }, svg);
      s("rect", { x: w.x, y: w.y, width: w.w, height: w.h, rx: 10 }, wg);
      s("text", { x: w.x + 8, y: w.y + 15 }, wg).textContent = w.id;
      g.wraps[w.id] = wg;
    }
    for (const e of L.edges) {
      const eg = s("g", { class: "edge" + (e.back ? " back" : ""), "data-edge": e.id }, svg);
      s("path", { d: e.d, "marker-end": "url(#lt-arrow)" }, eg);
      g.edges[e.id] = eg;
    }
    g.jumps = s("g", { class: "jumps" }, svg);
    const [cx, cy, half] = L.cond;
    g.cond = s("g", { class: "cond", "data-node": "conditional" }, svg);
    s("polygon", { points: `${cx},${cy - half} ${cx + half},${cy} ${cx},${cy + half} ${cx - half},${cy}` }, g.cond);
    s("text", { x: cx - half - 6, y: cy + 4, "text-anchor": "end" }, g.cond).textContent = "tool calls?";
    for (const lb of L.labels || []) {
      s("text", { x: lb.x, y: lb.y, class: "branch" }, g.cond).textContent = lb.text;
    }
    for (const n of L.nodes) {
      const ng = s("g", { class: "node", "data-node": n.id }, svg);
      s("rect", { x: n.x - n.w / 2, y: n.y - n.h / 2, width: n.w, height: n.h,
        rx: n.shape === "pill" ? n.h / 2 : 8 }, ng);
      s("circle", { cx: n.x, cy: n.y, r: 7, class: "dot" }, ng);
      s("text", { x: n.x, y: n.y }, ng).textContent = n.label;
      g.nodes[n.id] = ng;
    }
    const ml = s("g", { class: "mw-labels" }, svg);
    for (const [hook, m] of Object.entries(L.mw)) {
      const lg = s("g", { "data-hook": hook }, ml);
      s("text", { class: hook.startsWith("wrap_") ? "mw halo" : "mw", x: m.x, y: m.y,
        "text-anchor": m.anchor }, lg);
      s("title", {}, lg);
      g.mw[hook] = lg;
    }
    g.chips = s("g", { class: "chips" }, svg);
    g.lap = s("text", { class: "lap", x: 452, y: 24, "text-anchor": "end" }, svg);
    g.backPath = g.edges[L.back.id].querySelector("path");
    g.cond_edges = L.edges.filter((e) => e.cond).map((e) => e.id);
    parent.appendChild(box);
    return g;
  }

  // The run's own drawing: which hooks are points, unknown, which middleware sits where.
  function drawRun() {
    const shape = R.shape || "agent";
    if (G.shape !== shape) {  // another shape of run: its own drawing
      G.box.remove();
      G = buildGraph(graphBox, shape);
    }
    const L = LY;
    const pass = new Set(R.passthrough || []), unknown = new Set(R.unknown || []), mw = R.mw || {};
    for (const n of L.nodes) {
      const g = G.nodes[n.id];
      const isPass = !!(n.hook && pass.has(n.hook)), isUnknown = !!(n.hook && unknown.has(n.hook));
      g.classList.toggle("passthrough", isPass);
      g.classList.toggle("unknown", isUnknown);
      const text = g.querySelector("text");
      text.textContent = isUnknown ? n.label + " ?" : n.label;
      text.setAttribute("x", isPass ? n.x - 16 : n.x);
      text.style.textAnchor = isPass ? "end" : "";
      const m = n.hook && !isPass ? mw[n.hook] : null;
      const lg = n.hook && G.mw[n.hook];
      if (lg) {
        setText(lg.querySelector("text"), m ? m.text : "");
        setText(lg.querySelector("title"), m ? m.title : "");
        text.setAttribute("y", m ? n.y - L.lift : n.y);
      }
    }
    for (const w of L.wraps) {
      const g = G.wraps[w.id];
      g.classList.toggle("passthrough", pass.has(w.id));
      g.classList.toggle("unknown", unknown.has(w.id));
      const m = mw[w.id], lg = G.mw[w.id];
      if (lg) {
        setText(lg.querySelector("text"), m ? m.text : "");
        setText(lg.querySelector("title"), m ? m.title : "");
      }
    }
    G.backPath.setAttribute("d", R.back || L.back.box);
  }

  function drawStep(st) {
    const L = LY;
    const node = st ? st.n : "START", vis = st ? st.v : 0;
    const err = !!(st && st.x), intr = !!(st && st.k === "interrupt");
    L.nodeOrder.forEach((id, b) => {
      const g = G.nodes[id];
      if (!g) return;
      const on = id === node;
      g.classList.toggle("active", on);
      g.classList.toggle("visited", !on && !!(vis & (1 << b)));
      g.classList.toggle("error", on && err);
      g.classList.toggle("interrupt", on && intr);
      const lg = HOOK_OF[id] && G.mw[HOOK_OF[id]];
      if (lg) lg.classList.toggle("on", on);
    });
    const pass = new Set(R.passthrough || []);
    for (const w of L.wraps) {
      G.wraps[w.id].classList.toggle("active", node === (w.id === "wrap_model_call" ? "model" : "tools")
        && !pass.has(w.id));
    }
    const hot = new Set((st && st.r) || []);
    for (const [id, g] of Object.entries(G.edges)) {
      const on = hot.has(id);
      if (g.classList.contains("taken") !== on) {
        g.classList.toggle("taken", on);
        g.firstChild.setAttribute("marker-end", on ? "url(#lt-arrow-hot)" : "url(#lt-arrow)");
      }
    }
    // Jump edges (a step that skipped nodes): drawn only while their step shows.
    const jumps = [...hot].filter((id) => !G.edges[id]);
    const key = jumps.join(" ");
    if (G.jumps.getAttribute("data-ids") !== key) {
      G.jumps.replaceChildren();
      // A jump only where an event says one happened (st.j); any other move off the
      // standard edges is drawn as a plain move.
      const jump = !!(st && st.j);
      for (const id of jumps) {
        const d = (R.jumps || {})[id];
        if (!d) continue;
        const g = s("g", { class: "edge " + (jump ? "jump" : "move") + " taken", "data-edge": id }, G.jumps);
        s("path", { d, "marker-end": jump ? "url(#lt-arrow-jump)" : "url(#lt-arrow-hot)" }, g);
        s("title", {}, g).textContent = (jump ? "jump: " : "") + id.replace(">", " \u2192 ");
      }
      G.jumps.setAttribute("data-ids", key);
    }
    G.cond.classList.toggle("taken", G.cond_edges.some((id) => hot.has(id)));
    // Tool calls in flight, each in its call's colour.
    G.chips.replaceChildren();
    const tools = (st && st.t) || [], max = 5, [cx0, cy0] = L.chips || [292, 446];
    tools.slice(0, max).forEach((id, i) => {
      const g = s("g", { class: "chip", "data-tool-call": id }, G.chips);
      const y = cy0 + i * 22;
      s("rect", { x: cx0, y: y - 9, width: 12, height: 18, rx: 3, fill: colourOf(id) }, g);
      const full = ((R.names || {})[id] || "tool") + "  " + id;
      s("text", { x: cx0 + 18, y }, g).textContent = full.length > 20 ? full.slice(0, 19) + "\u2026" : full;
      s("title", {}, g).textContent = full;
    });
    if (tools.length > max) {
      s("text", { x: cx0 + 18, y: cy0 + max * 22, class: "chip" }, G.chips).textContent = `+${tools.length - max} more`;
    }
    setText(G.lap, st && st.l ? "lap " + st.l : "");
    const b = G.box;
    b.setAttribute("data-step", String(cur));
    b.setAttribute("data-active-node", node);
    b.setAttribute("data-kind", st ? st.k : "run");
    root.setAttribute("data-jump", jumps.length && st && st.j ? "1" : "0");
  }

  const FALLBACK = "#6c757d";
  function colourOf(id) { return (id && (R.colours || {})[id]) || FALLBACK; }

  // -- messages ----------------------------------------------------------------------
  // The list a step shows is Python's Replay.messages_at, given per step as an edit of
  // the step before's ("mv"): applied forward from the last step shown.
  // Going back rebuilds from the nearest checkpoint (a copy of the list every 128 steps),
  // not from the first step. The edits are applied in place (push, length), never with
  // Array.prototype.concat: a page that sets Symbol.isConcatSpreadable (Streamlit's
  // Arrow code does) makes concat 7-20 times slower.
  let viewAt = -1, view = [], marks = new Map();
  function messagesAt(i) {
    if (!N) return (R.view0 || []);
    if (i < viewAt || viewAt < off - 1) {
      let k = off - 1;
      for (const at of marks.keys()) if (at <= i && at > k) k = at;
      viewAt = k; view = k >= off ? marks.get(k).slice() : [];
    }
    for (let j = viewAt + 1; j <= i; j++) {
      const op = steps[j - off].mv;
      if (op && op.f) view = op.f.slice();
      else if (op) {
        if (view.length > op.b) view.length = op.b;
        for (const [at, x] of op.x || []) view[at] = x;
        for (const x of op.a || []) view.push(x);
      }
      if ((j & 127) === 0 && !marks.has(j)) marks.set(j, view.slice());
    }
    viewAt = i;
    return view;
  }

  let cache = [], callEls = {}, shown = [], current = [], pendingNow = {}, omittedNow = [];
  const TYPE = { human: "Human", ai: "AI", tool: "Tool result", system: "System" };
  function msgEl(x) {
    if (cache[x]) return cache[x];
    const m = msgs[x];
    const e = h("div", "lt-msg lt-msg-" + (m.type || "message"), null,
      { "data-position": m.pos, "data-key": m.key });
    const head = h("div", "lt-msg-head");
    head.appendChild(h("span", "lt-type", TYPE[m.type] || m.type || "message"));
    if (m.name && m.type !== "ai") head.appendChild(h("span", "", m.name));
    if (m.type === "tool") {
      e.style.setProperty("--call", colourOf(m.tcid));
      head.appendChild(h("span", "lt-badge", "answers " + (m.tcid || "?")));
      if (m.status === "error") {
        e.classList.add("error");
        head.appendChild(h("span", "lt-tag lt-error", "error"));
      }
      if (m.given) head.appendChild(h("span", "lt-tag lt-given", "given in the debugger"));
    }
    head.appendChild(h("span", "lt-pos", "#" + m.pos));
    e.appendChild(head);
    e.appendChild(h("div", "lt-tag lt-omitted", "not sent to the model: the loop never appended it"));
    if (m.vn) e.appendChild(h("div", "lt-tag lt-note", m.vn));  // which version, who changed it
    if (m.text) e.appendChild(h("pre", "lt-text", m.text));
    for (const c of m.calls || []) {
      const ce = h("div", "lt-call" + (c.invalid ? " invalid" : ""), null, { "data-call-id": c.id || "" });
      if (c.id) (callEls[c.id] = callEls[c.id] || []).push(ce);
      ce.style.setProperty("--call", colourOf(c.id));
      const line = h("div", "lt-call-head");
      line.appendChild(h("span", "lt-name", c.name));
      line.appendChild(h("span", "lt-badge", c.id || "no id"));
      line.appendChild(h("span", "lt-tag lt-pending", "pending: no result yet"));
      // (at the last step of a run that has ended, no result is coming)
      line.appendChild(h("span", "lt-tag lt-pending lt-never", "no result: the run ended"));
      ce.appendChild(line);
      ce.appendChild(h("pre", "lt-text lt-args",
        typeof c.args === "string" ? c.args : JSON.stringify(c.args, null, 1)));
      e.appendChild(ce);
    }
    cache[x] = e;
    return e;
  }

  // Scroll the list so ``target`` shows. Off-screen messages skip rendering
  // (content-visibility), so the ones a scroll brings into view take their real size
  // only at the next frame and may move the target: check again then (a few frames).
  let revealing = null;
  function reveal(box, target, frames) {
    revealing = target;
    const br = box.getBoundingClientRect(), fr = target.getBoundingClientRect();
    const want = Math.min(fr.bottom - fr.top, br.bottom - br.top - 16);
    if (fr.top < br.top || fr.top + want > br.bottom) box.scrollTop += fr.top - br.top - 8;
    if (frames > 0) requestAnimationFrame(() => {
      if (revealing === target && target.isConnected) reveal(box, target, frames - 1);
    });
  }

  function drawMessages(i) {
    const idx = messagesAt(i), box = ui.list;
    const els = idx.map(msgEl);
    // Only the change is applied: steps mostly add (or, going back, drop) the last messages.
    let p = 0;
    const n = Math.min(shown.length, els.length);
    while (p < n && shown[p] === els[p]) p++;
    if (p === shown.length) { for (let k = p; k < els.length; k++) box.appendChild(els[k]); }
    else if (p === els.length) { for (let r = shown.length - 1; r >= p; r--) shown[r].remove(); }
    else box.replaceChildren(...els);
    shown = els;
    // Calls asked for and not answered yet are pending.
    const asked = new Set(), answered = new Set(), pend = {};
    for (const x of idx) {
      const m = msgs[x];
      for (const c of m.calls || []) if (c.id && !c.invalid) asked.add(c.id);
      if (m.tcid) answered.add(m.tcid);
    }
    for (const id of asked) if (!answered.has(id)) pend[id] = 1;
    for (const id of Object.keys(pendingNow)) {
      if (!pend[id]) for (const ce of callEls[id] || []) ce.classList.remove("pending");
    }
    for (const id of Object.keys(pend)) {
      if (!pendingNow[id]) for (const ce of callEls[id] || []) ce.classList.add("pending");
    }
    pendingNow = pend;
    // The messages this step added (or replaced) are highlighted and scrolled into view;
    // recorded messages the model never received are marked.
    for (const e of current) e.classList.remove("current");
    for (const e of omittedNow) e.classList.remove("omitted");
    current = []; omittedNow = [];
    const st = stepAt(i);
    const hot = new Set((st && st.nk) || []), om = new Set((st && st.om) || []);
    if (extra.step === i) for (const k of extra.keys) hot.add(k);
    idx.forEach((x, k) => {
      const key = msgs[x].key;
      if (hot.has(key)) { els[k].classList.add("current"); current.push(els[k]); }
      if (om.has(key)) { els[k].classList.add("omitted"); omittedNow.push(els[k]); }
    });
    if (current[0]) reveal(box, current[0], 6);
    else if (i >= N - 1 && els.length) reveal(box, els[els.length - 1], 6);  // the end: the last
    root.setAttribute("data-messages", String(idx.length));
  }

  // -- the State view ----------------------------------------------------------------
  // The state at step i, folded from the window's first step (which carries the whole
  // state there): {now, before, changed}: key -> value index now and at the step
  // before, and the keys changed at this step with who changed them.
  function stateAt(i) {
    const S = R && R.state;
    if (!S || !inWindow(i)) return null;
    let now = new Map(), before = new Map(), changed = new Map();
    for (let j = off; j <= i; j++) {
      const row = S.steps[j - off];
      before = new Map(now); changed = new Map();
      for (const c of row || []) {
        if (c.length === 1) { now.clear(); continue; }  // ["*"]: the whole state follows
        if (c[1] < 0) now.delete(c[0]); else now.set(c[0], c[1]);
        if (c.length > 2) changed.set(c[0], { by: c[2], tc: c[3], gone: c[1] < 0 });
      }
    }
    return { now, before, changed };
  }

  // A line diff of two texts (a longest common subsequence, after the common head and
  // tail): [[" " | "-" | "+", line]]. Past 4M cells the middle is shown as replaced.
  function linesOf(t) {
    if (t == null) return [];
    const x = String(t);
    return (x.endsWith("\n") ? x.slice(0, -1) : x).split("\n");  // (a last newline ends a line)
  }
  function lineDiff(a, b) {
    const A = linesOf(a), B = linesOf(b);
    let p = 0;
    while (p < A.length && p < B.length && A[p] === B[p]) p++;
    let q = 0;
    while (q < A.length - p && q < B.length - p && A[A.length - 1 - q] === B[B.length - 1 - q]) q++;
    const a2 = A.slice(p, A.length - q), b2 = B.slice(p, B.length - q);
    const n = a2.length, m = b2.length;
    let mid = [];
    if (n * m > 4e6) {
      mid = a2.map((x) => ["-", x]).concat(b2.map((x) => ["+", x]));
    } else {
      const L = new Uint32Array((n + 1) * (m + 1)), w = m + 1;
      for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--)
        L[i * w + j] = a2[i] === b2[j] ? L[(i + 1) * w + j + 1] + 1 : Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
      let i = 0, j = 0;
      while (i < n || j < m) {
        if (i < n && j < m && a2[i] === b2[j]) { mid.push([" ", a2[i]]); i++; j++; }
        else if (i < n && (j >= m || L[(i + 1) * w + j] >= L[i * w + j + 1])) { mid.push(["-", a2[i]]); i++; }
        else { mid.push(["+", b2[j]]); j++; }
      }
    }
    return A.slice(0, p).map((x) => [" ", x]).concat(mid, A.slice(A.length - q).map((x) => [" ", x]));
  }
  // The unified diff of ``before`` (null: a new text, every line added) and ``after``
  // (null: removed), as text only: pre.lt-diff (data-added, data-removed) with a line
  // span.lt-dl per line (.lt-add, .lt-del, .lt-hunk for "@@ -a,b +c,d @@").
  function diffEl(before, after) {
    const ops = after == null ? linesOf(before).map((x) => ["-", x])
      : (before == null ? linesOf(after).map((x) => ["+", x]) : lineDiff(before, after));
    const CTX = 3, show = new Uint8Array(ops.length);
    ops.forEach((o, k) => { if (o[0] !== " ") for (let d = -CTX; d <= CTX; d++) if (ops[k + d]) show[k + d] = 1; });
    let added = 0, removed = 0;
    const pre = h("pre", "lt-diff");
    let ol = 1, nl = 1, k = 0, lines = 0;
    while (k < ops.length) {
      if (!show[k]) { if (ops[k][0] !== "+") ol++; if (ops[k][0] !== "-") nl++; k++; continue; }
      let e = k;
      while (e < ops.length && show[e]) e++;
      const hunk = ops.slice(k, e);
      const oc = hunk.filter((o) => o[0] !== "+").length, nc = hunk.filter((o) => o[0] !== "-").length;
      pre.appendChild(h("span", "lt-dl lt-hunk", "@@ -" + (oc ? ol : ol - 1) + "," + oc + " +" + (nc ? nl : nl - 1) + "," + nc + " @@"));
      for (const [op, line] of hunk) {
        if (lines++ < 2000) pre.appendChild(h("span", "lt-dl" + (op === "+" ? " lt-add" : op === "-" ? " lt-del" : ""), op + line));
        if (op === "+") added++; else if (op === "-") removed++;
        if (op !== "+") ol++;
        if (op !== "-") nl++;
      }
      k = e;
    }
    if (lines > 2000) pre.appendChild(h("span", "lt-dl lt-muted", "... " + (lines - 2000) + " more lines"));
    pre.setAttribute("data-added", String(added));
    pre.setAttribute("data-removed", String(removed));
    return pre;
  }

  const STATUS_MARK = { completed: "done", in_progress: "doing", pending: "to do" };
  function todoText(t) { return t && typeof t === "object" ? String(t.content) : String(t); }
  function todoStatus(t) { return t && typeof t === "object" ? String(t.status || "") : ""; }
  // The plan as a checklist; with ``prev`` (the plan at the step before) each item
  // added, whose status changed, or removed at this step is marked (data-change).
  function todosEl(v, prev) {
    const ul = h("ul", "lt-todos");
    const was = new Map();
    if (Array.isArray(prev)) for (const t of prev) was.set(todoText(t), todoStatus(t));
    const item = (t, change) => {
      const st = todoStatus(t);
      const li = h("li", "lt-todo" + (change ? " changed" : ""), null, { "data-status": st });
      if (change) li.setAttribute("data-change", change);
      li.appendChild(h("span", "lt-check", null, { "aria-hidden": "true" }));
      li.appendChild(h("span", "lt-todo-text", todoText(t)));
      li.appendChild(h("span", "lt-tag lt-todo-status", STATUS_MARK[st] || st));
      if (change === "status") li.appendChild(h("span", "lt-tag lt-todo-change", "was " + (STATUS_MARK[was.get(todoText(t))] || was.get(todoText(t)) || "?")));
      else if (change) li.appendChild(h("span", "lt-tag lt-todo-change", change));
      return li;
    };
    const now = new Set();
    for (const t of v.slice(0, 200)) {
      now.add(todoText(t));
      const change = !Array.isArray(prev) ? "" : !was.has(todoText(t)) ? "added"
        : was.get(todoText(t)) !== todoStatus(t) ? "status" : "";
      ul.appendChild(item(t, change));
    }
    if (Array.isArray(prev)) for (const t of prev) if (!now.has(todoText(t))) ul.appendChild(item(t, "removed"));
    return ul;
  }
  function fileText(f) {
    const c = f && typeof f === "object" && !Array.isArray(f) ? f.content : f;
    return Array.isArray(c) ? c.join("\n") : (typeof c === "string" ? c : JSON.stringify(c, null, 1));
  }
  // One file (or store item): written at this step, it opens with its diff against the
  // version before (a new one: every line added; a deleted one: every line removed).
  function fileEl(cls, name, attrs, v, pv, had, gone, who) {
    const changed = gone || !had || JSON.stringify(pv) !== JSON.stringify(v);
    const li = h("li", cls + (changed ? " written" : ""), null, attrs);
    const d = h("details", "", null, changed ? { open: "" } : {});
    const sum = h("summary", "", null);
    sum.appendChild(h("span", "lt-name", name));
    if (changed) sum.appendChild(h("span", "lt-tag lt-written", gone ? "deleted here" : had ? "changed here" : "written here"));
    if (changed && who) sum.appendChild(h("span", "lt-tag lt-state-by", who));
    d.appendChild(sum);
    if (changed) {
      d.appendChild(diffEl(had ? fileText(pv) : null, gone ? null : fileText(v)));
      if (!gone && had) {
        const whole = h("details", "lt-whole");
        whole.appendChild(h("summary", "", "whole text"));
        whole.appendChild(h("pre", "lt-text", fileText(v)));
        d.appendChild(whole);
      }
    } else d.appendChild(h("pre", "lt-text", fileText(v)));
    li.appendChild(d);
    return li;
  }
  // (``prev``: the files at the step before; null: all of them new here)
  function filesEl(v, prev) {
    const ul = h("ul", "lt-files");
    for (const path of Object.keys(v).sort()) {
      const had = !!prev && typeof prev === "object" && path in prev;
      ul.appendChild(fileEl("lt-file", path, { "data-path": path }, v[path], had ? prev[path] : null,
        had, false, ""));
    }
    if (prev && typeof prev === "object") for (const path of Object.keys(prev).sort()) {
      if (!(path in v)) ul.appendChild(fileEl("lt-file", path, { "data-path": path }, null, prev[path], true, true, ""));
    }
    return ul;
  }
  function treeEl(v, depth) {
    if (v === null || typeof v !== "object") return h("span", "lt-leaf", JSON.stringify(v));
    if (depth > 6) return h("span", "lt-leaf", JSON.stringify(v).slice(0, 200));
    const ul = h("ul", "lt-tree");
    const entries = Array.isArray(v) ? v.map((x, k) => [k, x]) : Object.entries(v);
    for (const [k, x] of entries.slice(0, 200)) {
      const li = h("li");
      li.appendChild(h("span", "lt-tkey", String(k)));
      li.appendChild(treeEl(x, depth + 1));
      ul.appendChild(li);
    }
    if (entries.length > 200) ul.appendChild(h("li", "lt-muted", "... " + (entries.length - 200) + " more"));
    return ul;
  }
  function whoChanged(c, verb) {
    return (c.gone ? "removed by " : verb + " by ") + (c.by || "a hook before this step") +
      (c.tc ? " (tool call " + c.tc + ")" : "");
  }
  // The writes to the LangGraph store (keys "@store:[namespace, key]"): one "store"
  // branch, an item per key, those written at this step marked and opened on a diff.
  const STORE = "@store:";
  function storeName(key) {
    try { const [ns, k] = JSON.parse(key.slice(STORE.length)); return [ns.join("/"), String(k)]; }
    catch (e) { return ["", key.slice(STORE.length)]; }
  }
  function storeEl(keys, S, at) {
    const { now, before, changed } = at;
    const e = h("div", "lt-state-key lt-store", null, { "data-key": "store" });
    const head = h("div", "lt-state-head");
    head.appendChild(h("span", "lt-name", "store"));
    const n = keys.filter((k) => changed.has(k)).length;
    if (n) { e.classList.add("changed"); head.appendChild(h("span", "lt-tag lt-state-by", n + " written here")); }
    e.appendChild(head);
    const ul = h("ul", "lt-files lt-store-items");
    for (const key of keys) {
      const [ns, item] = storeName(key), c = changed.get(key);
      const had = before.has(key), v = now.has(key) ? S.values[now.get(key)] : null;
      const pv = had ? S.values[before.get(key)] : null;
      const attrs = { "data-ns": ns, "data-item": item };
      if (!c) {
        if (now.has(key)) ul.appendChild(fileEl("lt-store-item", ns + ": " + item, attrs, v, v, true, false, ""));
        continue;
      }
      // (a write of the value it held is a write: marked, with an empty diff)
      const li = fileEl("lt-store-item", ns + ": " + item, attrs, v, pv, had, c.gone, whoChanged(c, "written"));
      li.classList.add("written");
      ul.appendChild(li);
    }
    e.appendChild(ul);
    return e;
  }
  function drawState(i) {
    if (!ui.state) return;
    const S = R && R.state, at = stateAt(i);
    if (!S || !at) { ui.state.setAttribute("hidden", ""); root.setAttribute("data-state-keys", "0"); return; }
    ui.state.removeAttribute("hidden");
    const { now, before, changed } = at;
    const all = [...new Set([...now.keys(), ...changed.keys()])].sort();
    const keys = all.filter((k) => !k.startsWith(STORE)), stored = all.filter((k) => k.startsWith(STORE));
    const els = [];
    for (const key of keys) {
      const c = changed.get(key);
      const e = h("div", "lt-state-key" + (c ? " changed" : ""), null, { "data-key": key });
      const head = h("div", "lt-state-head");
      head.appendChild(h("span", "lt-name", key));
      if (c) head.appendChild(h("span", "lt-tag lt-state-by", whoChanged(c, "changed")));
      e.appendChild(head);
      const pv = before.has(key) ? S.values[before.get(key)] : null;
      if (now.has(key)) {
        const v = S.values[now.get(key)];
        e.appendChild(key === "todos" && Array.isArray(v) ? todosEl(v, c ? (Array.isArray(pv) ? pv : []) : null)
          : key === "files" && v && typeof v === "object" && !Array.isArray(v) ? filesEl(v, c ? pv : v)
          : c && typeof v === "string" ? diffEl(typeof pv === "string" ? pv : null, v)
          : treeEl(v, 0));
      } else if (c && typeof pv === "string") e.appendChild(diffEl(pv, null));
      els.push(e);
    }
    if (stored.length) els.push(storeEl(stored, S, at));
    ui.stateBody.replaceChildren(...els);
    root.setAttribute("data-state-keys", String(keys.filter((k) => now.has(k)).length));
    root.setAttribute("data-store-items", String(stored.filter((k) => now.has(k)).length));
  }

  // Messages the host asks to highlight at one step (a finding's messages).
  let extra = { keys: [], step: -1 };
  function setHighlight(keys, step) {
    const k = (keys || []).join("\u0000");
    if (k === extra.keys.join("\u0000") && step === extra.step) return;
    extra = { keys: keys || [], step: keys && keys.length ? step : -1 };
    // (a step outside the window held is drawn when its window arrives)
    if (ui.list && R && (!N || inWindow(cur))) drawMessages(cur);
  }

  // -- the scrubber's tick strip ----------------------------------------------------
  let markers = [];
  // The tick strip is drawn once a frame however often it is asked for (a load, the
  // markers and the first resize come together), one tick a pixel column: a 5,000-step
  // run drew 5,000 overlapping ticks three times before its first paint (issue 29).
  const TICK_RANK = { error: 4, interrupt: 3, tool: 2, model: 1 };
  let ticksAsked = false;
  function drawTicks() {
    if (ticksAsked) return;
    ticksAsked = true;
    requestAnimationFrame(() => { ticksAsked = false; paintTicks(); });
  }
  function paintTicks() {
    const c = ui.ticks;
    if (!c) return;
    const w = c.clientWidth || 600, hgt = 14, dpr = window.devicePixelRatio || 1;
    c.width = w * dpr; c.height = hgt * dpr;
    const ctx = c.getContext("2d");
    if (!ctx) return;
    ctx.scale(dpr, dpr);
    ctx.clearRect(0, 0, w, hgt);
    const cs = getComputedStyle(root);
    const col = { model: cs.getPropertyValue("--lt-model"), tool: cs.getPropertyValue("--lt-tool"),
      error: cs.getPropertyValue("--lt-error"), interrupt: cs.getPropertyValue("--lt-interrupt") };
    // The range input's thumb runs from half a thumb in from each end.
    const pad = 8, x = (i) => (N <= 1 ? w / 2 : pad + (i / (N - 1)) * (w - 2 * pad));
    const tw = Math.max(1.5, Math.min(6, ((w - 2 * pad) / Math.max(N, 1)) * 0.8));
    // Per pixel column, the step of the weightiest kind there (an error over a tool call
    // over a model call; the first of equals): what the eye could tell apart.
    const best = new Map();
    for (let i = 0; i < kinds.length; i++) {
      const k = KIND_OF[kinds[i]];
      const r = TICK_RANK[k];
      if (!r || !col[k]) continue;
      const px = Math.round(x(i)), was = best.get(px);
      if (was === undefined || r > TICK_RANK[KIND_OF[kinds[was]]]) best.set(px, i);
    }
    for (const i of best.values()) {
      const k = KIND_OF[kinds[i]];
      ctx.fillStyle = col[k];
      const tall = k === "error" || k === "interrupt";
      ctx.fillRect(x(i) - tw / 2, tall ? 0 : 3, tw, tall ? 10 : 6);
    }
    for (const f of markers) {
      if (f.kind === "note") {  // a person's note on this step: a dot above the ticks
        ctx.fillStyle = "#8250df";
        ctx.beginPath(); ctx.arc(x(f.step), 2.5, 2.5, 0, 2 * Math.PI); ctx.fill();
        continue;
      }
      ctx.fillStyle = f.severity === "error" ? col.error : (f.severity === "warning" ? "#f59f00" : "#3b82f6");
      const fx = x(f.step);
      ctx.beginPath(); ctx.moveTo(fx - 4, hgt); ctx.lineTo(fx + 4, hgt); ctx.lineTo(fx, hgt - 5); ctx.fill();
    }
  }

  // -- one run -----------------------------------------------------------------------
  // A run too big to send at once comes as a window of its steps: ``offset`` is the
  // first step held, ``total`` the run's length, ``kinds`` a letter per step of the
  // whole run (the tick strip, the jumps). A step outside the window is asked of the
  // host (``onWindow``), which loads the window around it; playback asks ahead.
  const LETTER = { model: "m", tool: "t", error: "e", interrupt: "i", hook: "h", run: "r" };
  const KIND_OF = Object.fromEntries(Object.entries(LETTER).map(([k, v]) => [v, k]));
  let R = null, steps = [], msgs = [], N = 0, cur = 0, kids = {}, off = 0, kinds = "";
  let waiting = null, wantPlay = false, asked = -1;
  function inWindow(i) { return i >= off && i < off + steps.length; }
  function stepAt(i) { return inWindow(i) ? steps[i - off] : null; }
  function load(data, how) {
    const o = how || {};
    const same = R && data && R.run.id === data.run.id;
    const atEnd = same && cur >= N - 1;
    const resume = same && wantPlay;
    pause("load");
    R = data; steps = R.steps || []; msgs = R.messages || [];
    off = R.offset || 0; N = R.total != null ? R.total : steps.length;
    // (an error step that is no error of its own, the same exception seen again further
    // up, is no stop of "Next error": "h")
    kinds = R.kinds != null ? R.kinds : steps.map((st) => (st.x ? "e" : st.k === "error" ? "h"
      : LETTER[st.k] || "h")).join("");
    viewAt = off - 1; view = []; marks = new Map(); asked = -1;
    root.setAttribute("data-offset", String(off));
    root.setAttribute("data-held", String(steps.length));
    cache = []; callEls = {}; shown = []; current = []; pendingNow = {}; omittedNow = [];
    if (ui.list) ui.list.replaceChildren();
    kids = {};
    for (const c of R.children || []) {
      if (c.parent_tool_call_id) (kids[c.parent_tool_call_id] = kids[c.parent_tool_call_id] || []).push(c);
    }
    if (ui.system) {
      if (R.system) ui.system.removeAttribute("hidden"); else ui.system.setAttribute("hidden", "");
      setText(ui.systemText, R.system || "");
    }
    if (ui.scrub) ui.scrub.max = Math.max(N, 1);
    root.setAttribute("data-run", R.run.id);
    root.setAttribute("data-steps", String(N));
    drawRun();
    drawTicks();
    // A run still being recorded, shown at its last step, follows the steps that arrive.
    let to = o.step != null ? o.step : (waiting != null ? waiting : (same ? cur : 0));
    if (o.follow && atEnd) to = N - 1;
    waiting = null;
    root.setAttribute("data-loading", "0");
    go(to, o.cause || "load");
    if (resume && inWindow(cur)) play();
  }

  function find(kind, from) {
    const i = kinds.indexOf(LETTER[kind], from + 1);
    return i < 0 ? null : i;
  }

  function clamp(i) {
    const x = parseInt(i, 10);
    return Math.max(0, Math.min(isNaN(x) ? 0 : x, Math.max(N - 1, 0)));
  }

  function childrenAt(st) {
    const ids = (st.t || []).slice();
    if (st.tc) ids.push(st.tc);
    const out = [];
    for (const id of ids) for (const c of kids[id] || []) if (!out.includes(c)) out.push(c);
    return out;
  }

  const KIND_LABEL = { model: "model call", tool: "tool call", error: "error", interrupt: "interrupt",
    hook: "hook", run: "run" };
  function go(i, cause) {
    if (!R) return;  // (nothing loaded yet: a key pressed while the run is on its way)
    cur = clamp(i);
    if (N && !inWindow(cur) && opts.onWindow) {
      // Not held: shown once the host has sent the window around it.
      waiting = cur;
      root.setAttribute("data-loading", "1");
      if (ui.counter) { setText(ui.counter, "Step " + (cur + 1) + " / " + N); ui.scrub.value = String(cur + 1); }
      if (asked !== cur) { asked = cur; opts.onWindow(cur); }
      return;
    }
    const st = stepAt(cur);
    drawStep(st);
    if (ui.list) drawMessages(cur);
    drawState(cur);
    if (ui.caption) {
      const kind = st ? (st.x ? "error" : st.k) : "run";
      ui.kind.setAttribute("data-kind", kind);
      setText(ui.kind, st ? (st.x && st.k === "tool" ? "tool error" : KIND_LABEL[kind] || kind) : "");
      setText(ui.captionText, st ? st.c : "This run has no recorded steps.");
    }
    if (ui.counter) {
      setText(ui.counter, "Step " + (N ? cur + 1 : 0) + " / " + N);
      ui.scrub.value = String(cur + 1);
      ui.first.disabled = ui.prev.disabled = cur <= 0;
      ui.next.disabled = ui.last.disabled = cur >= N - 1;
      ui.nextModel.disabled = find("model", cur) == null;
      ui.nextTool.disabled = find("tool", cur) == null;
      ui.nextError.disabled = find("error", cur) == null;
      // (a run with no error may still have findings of severity error: say where they are)
      const errTitle = !ui.nextError.disabled ? "Jump to the next error"
        : kinds.indexOf("e") < 0 ? "No error in this run (no exception, no error result);"
          + " what the checks found is listed under Findings" : "No error after this step";
      ui.nextError.title = errTitle; ui.nextError.setAttribute("aria-label", errTitle);
      ui.play.disabled = N < 2;
    }
    if (ui.inspectorText) {
      ui.inspectorText.textContent = st ? JSON.stringify({ step: cur + 1, hook: st.h, phase: st.p,
        lap: st.l, middleware: st.mw, duration_ms: st.d, tool_call_id: st.tc, kind: st.k,
        payload: st.pl }, null, 2) : "";
    }
    const ch = opts.onOpen && st ? childrenAt(st) : [];
    if (ch.length) {
      ui.open.removeAttribute("hidden");
      setText(ui.open, "Open subagent: " + (ch[0].name || ch[0].id));
      ui.open.setAttribute("data-target", ch[0].id);
    } else ui.open.setAttribute("hidden", "");
    root.setAttribute("data-step", String(cur));
    // (a run paused in the debugger has not ended: its calls still wait, app/screens/replay/page.py)
    root.setAttribute("data-final", cur >= N - 1 && R.run.status !== "running" &&
      !String(R.run.status).startsWith("paused") ? "1" : "0");
    root.setAttribute("data-active-node", st ? st.n : "START");
    root.setAttribute("data-kind", st ? st.k : "run");
    if (opts.onStep) opts.onStep(cur, cause || "user");
  }

  // -- playback: each step is due at start + k * interval, so the rate holds whatever a
  // step takes to draw (a late step is shown late, the next one is not put off).
  let speed = SPEEDS.includes(opts.speed) ? opts.speed : 1, timer = null, t0 = 0, k0 = 0;
  function interval() { return STEP_MS / speed; }
  function schedule() {
    const due = t0 + (cur - k0 + 1) * interval();
    timer = setTimeout(() => {
      timer = null;
      if (cur >= N - 1) { pause("pause"); return; }
      go(cur + 1, "play");
      if (waiting != null) return;  // (the window is on its way: playback resumes with it)
      // Ask for the next window while a good stretch of this one is left to play.
      // (200 steps ahead of the edge: a minute at 4x; a quarter of a small window)
      const ahead = Math.min(200, Math.floor(steps.length / 4));
      if (opts.onWindow && off + steps.length < N && off + steps.length - cur < ahead && asked < off) {
        asked = off; opts.onWindow(cur);
      }
      if (cur >= N - 1) pause("pause"); else schedule();
    }, Math.max(0, due - performance.now()));
  }
  function play() {
    if (!R || timer || N < 2) return;
    if (cur >= N - 1) go(0, "user");
    t0 = performance.now(); k0 = cur; wantPlay = true;
    root.setAttribute("data-playing", "1");
    schedule();
  }
  // cause "pause": playback stopped where it is (the host hears of the step);
  // any other: a step of the user's or the host's follows and is reported itself.
  function pause(cause) {
    const was = !!timer || (wantPlay && waiting != null);
    if (timer) clearTimeout(timer);
    timer = null; wantPlay = false;
    root.setAttribute("data-playing", "0");
    if (was && cause === "pause" && opts.onStep) opts.onStep(cur, "pause");
  }
  function toggle() { if (timer) pause("pause"); else play(); }
  function setSpeed(x) {
    const v = parseFloat(x);
    if (!SPEEDS.includes(v)) return;
    speed = v;
    root.setAttribute("data-speed", String(v));
    if (ui.speed) {
      for (const b of ui.speed.children) b.setAttribute("aria-pressed", String(parseFloat(b.dataset.speed) === v));
    }
    if (timer) { clearTimeout(timer); t0 = performance.now(); k0 = cur; schedule(); }
    if (opts.onSpeed) opts.onSpeed(v);
  }
  setSpeed(speed);

  // -- input -------------------------------------------------------------------------
  function act(action) {
    if (action === "play") return play();
    if (action === "pause") return pause("pause");
    if (action === "toggle") return toggle();
    if (action === "open-subagent") {
      const id = ui.open.getAttribute("data-target");
      if (id && opts.onOpen) { pause("step"); opts.onOpen(id); }
      return;
    }
    pause("step");
    if (action === "first") go(0, "user");
    else if (action === "last") go(N - 1, "user");
    else if (action === "prev") go(cur - 1, "user");
    else if (action === "next") go(cur + 1, "user");
    else if (action.startsWith("next-")) {
      const to = find(action.slice(5), cur);
      if (to != null) go(to, "user");
    }
  }
  root.addEventListener("click", (ev) => {
    const b = ev.target.closest && ev.target.closest("button");
    if (!b || !root.contains(b) || b.disabled) return;
    if (b.dataset.speed) setSpeed(b.dataset.speed);
    else if (b.dataset.action) act(b.dataset.action);
    else return;
    b.blur();
  });
  if (ui.scrub) ui.scrub.addEventListener("input", () => { pause("step"); go(parseInt(ui.scrub.value, 10) - 1, "user"); });
  if (ui.ticks) ui.ticks.addEventListener("click", (ev) => {
    const r = ui.ticks.getBoundingClientRect(), pad = 8;
    const f = Math.min(1, Math.max(0, (ev.clientX - r.left - pad) / Math.max(1, r.width - 2 * pad)));
    pause("step");
    go(Math.round(f * (N - 1)), "user");
  });
  const KEYS = { ArrowRight: "next", ArrowLeft: "prev", " ": "toggle", Spacebar: "toggle",
    Home: "first", End: "last" };
  const NAVIGABLE = new Set(["radio", "tab", "option", "menuitem", "menuitemradio", "gridcell",
    "slider", "combobox", "listbox", "textbox", "spinbutton"]);
  function onKey(ev) {
    const action = KEYS[ev.key];
    if (!action || ev.ctrlKey || ev.metaKey || ev.altKey || !root.isConnected) return;
    // The element the key was pressed in (inside a shadow root too).
    const t = (ev.composedPath && ev.composedPath()[0]) || ev.target;
    const tag = (t && t.tagName) || "";
    const role = (t && t.getAttribute && t.getAttribute("role")) || "";
    if (tag === "TEXTAREA" || tag === "SELECT" || (t && t.isContentEditable)) return;
    if (tag === "INPUT" && !(t === ui.scrub && action === "toggle")) return;
    if (NAVIGABLE.has(role) && action !== "toggle") return;
    ev.preventDefault();
    if (tag === "BUTTON" && t.blur) t.blur();
    act(action);
  }
  // The capture phase: widgets (a speed control, a button) can stop a key's bubbling.
  if (opts.keyboard) document.addEventListener("keydown", onKey, true);
  let resize = null;
  if (ui.ticks && window.ResizeObserver) {
    resize = new ResizeObserver(() => drawTicks());
    resize.observe(ui.ticks);
  }

  return {
    root,
    load,
    go: (i, cause) => { pause("load"); go(i, cause || "server"); },
    play, pause: () => pause("pause"), toggle, setSpeed,
    setMarkers(list) { markers = list || []; drawTicks(); },
    setHighlight,
    step: () => cur,
    steps: () => N,
    playing: () => !!timer || (wantPlay && waiting != null),
    run: () => (R ? R.run.id : null),
    destroy() {
      pause("load");
      if (opts.keyboard) document.removeEventListener("keydown", onKey, true);
      if (resize) resize.disconnect();
      root.remove();
    },
  };
}
