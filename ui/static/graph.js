// poolflow UI: the DAG graph's pan, zoom and search (the page reads without it: the picture is
// then drawn at its natural size in a scrolling box).
// - Drag or the arrow keys move it; the wheel, + and − zoom (at the pointer); 0 fits it to the
//   box, 1 draws it at its natural size; / goes to the search.
// - The search finds a task by name (exact, else the first containing the text), outlines it and
//   centres it at a readable size; a task inside a closed group opens that group first.
// - The view survives the live refresh, which replaces the graph's card (app.js says so with a
//   poolflow:swap event).
(function () {
  "use strict";
  var MIN_K = 0.05, MAX_K = 4, READABLE_K = 1; // 13 px names stay ≥ 11 px at k ≥ 0.85
  var SMALL_DAG = 16; // nodes drawn, up to which a graph is fitted on load however small its names
  var saved = null; // {x, y, k, hit} across live swaps
  var relayout = null, found = false;

  function init() {
    var view = document.getElementById("graph-view");
    if (!view || view.dataset.ready) return;
    var svg = view.querySelector("svg.graph");
    if (!svg) return;
    view.dataset.ready = "1";
    var vb = svg.viewBox.baseVal, W0 = vb.width, H0 = vb.height;
    var tools = document.getElementById("graph-tools");
    if (tools) tools.hidden = false;
    view.classList.add("zoomable");
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    // The box: as tall as the picture at natural size, within [180 px, 70% of the window].
    view.style.height = Math.round(Math.max(180, Math.min(H0 + 2, window.innerHeight * 0.7))) + "px";
    var s = { x: 0, y: 0, k: 1 };

    function size() { return { w: view.clientWidth || 1, h: view.clientHeight || 1 }; }
    function apply() {
      var z = size();
      svg.setAttribute("viewBox", [s.x, s.y, z.w / s.k, z.h / s.k].map(function (n) { return n.toFixed(2); }).join(" "));
      saved = { x: s.x, y: s.y, k: s.k, hit: saved && saved.hit };
      view.dataset.zoom = s.k.toFixed(3);
    }
    function fitK() { var z = size(); return Math.min(z.w / W0, z.h / H0); }
    function fit() {
      var z = size();
      s.k = Math.max(MIN_K, Math.min(MAX_K, fitK()));
      s.x = (W0 - z.w / s.k) / 2;
      s.y = (H0 - z.h / s.k) / 2;
      apply();
    }
    function zoomAt(k, px, py) { // px, py: a point of the box, in CSS pixels
      k = Math.max(MIN_K, Math.min(MAX_K, k));
      s.x += px / s.k - px / k;
      s.y += py / s.k - py / k;
      s.k = k;
      apply();
    }
    function zoomBy(f) { var z = size(); zoomAt(s.k * f, z.w / 2, z.h / 2); }
    function pan(dx, dy) { s.x += dx / s.k; s.y += dy / s.k; apply(); }
    function centre(g, k) {
      var m = g.transform.baseVal.consolidate(), box = g.querySelector("rect.box:not(.stack)");
      if (!m || !box) return;
      var z = size(), bw = box.width.baseVal.value, bh = box.height.baseVal.value;
      s.k = Math.max(s.k, k);
      s.x = m.matrix.e + bw / 2 - z.w / (2 * s.k);
      s.y = m.matrix.f + bh / 2 - z.h / (2 * s.k);
      apply();
    }

    // Start where the reader was (a live swap), else at natural size when it fits or nearly,
    // else fitted if that stays readable, or if there are few nodes (a phone's box is too
    // narrow for even four tasks at their size: the whole shape and its states' colours, one
    // tap of + from any node, beat the first node or two), else at natural size from the top
    // left.
    var small = svg.querySelectorAll("g.node").length <= SMALL_DAG;
    if (saved) { s.x = saved.x; s.y = saved.y; s.k = saved.k; apply(); }
    else if (fitK() >= 0.6 || small) {
      // A box narrower than the picture draws it smaller: as tall as it then is, not taller.
      var kw = size().w / W0;
      if (kw < 1) view.style.height = Math.round(Math.max(120, Math.min(view.clientHeight, H0 * kw + 24))) + "px";
      fit();
      if (s.k > 1) { s.k = 1; s.x = 0; s.y = 0; apply(); }
    }
    else { apply(); }

    view.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var r = view.getBoundingClientRect();
      var d = ev.deltaMode === 1 ? ev.deltaY * 16 : ev.deltaY;
      zoomAt(s.k * Math.exp(-d * 0.0015), ev.clientX - r.left, ev.clientY - r.top);
    }, { passive: false });

    var drag = null;
    view.addEventListener("pointerdown", function (ev) {
      if (ev.button !== 0) return;
      drag = { x: ev.clientX, y: ev.clientY, moved: false, id: ev.pointerId };
    });
    view.addEventListener("pointermove", function (ev) {
      if (!drag) return;
      var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 5) return;
      if (!drag.moved) { drag.moved = true; view.setPointerCapture(drag.id); view.classList.add("dragging"); }
      drag.x = ev.clientX; drag.y = ev.clientY;
      pan(-dx, -dy);
    });
    function endDrag() {
      if (drag && drag.moved) {
        view.classList.remove("dragging");
        // The click that ends a drag must not follow the link under it.
        view.addEventListener("click", function (e) { e.preventDefault(); e.stopPropagation(); }, { capture: true, once: true });
      }
      drag = null;
    }
    view.addEventListener("pointerup", endDrag);
    view.addEventListener("pointercancel", endDrag);

    // The nodes: one is a tab stop (the server marks the others tabindex -1); the arrow keys
    // move the focus to the nearest node that way, and the view follows it.
    function nodeOf(a) { return a && a.querySelector("g.node"); }
    function middle(g) {
      var m = g.transform.baseVal.consolidate(), box = g.querySelector("rect.box:not(.stack)");
      return { x: m.matrix.e + box.width.baseVal.value / 2, y: m.matrix.f + box.height.baseVal.value / 2 };
    }
    function nearest(from, dx, dy) {
      var p = middle(nodeOf(from)), best = null, bestD = Infinity;
      svg.querySelectorAll("a").forEach(function (a) {
        var g = nodeOf(a);
        if (a === from || !g) return;
        var q = middle(g), vx = q.x - p.x, vy = q.y - p.y, along = vx * dx + vy * dy, across = Math.abs(vx * dy - vy * dx);
        if (along <= 0) return;
        var d = along + 3 * across; // straight ahead first
        if (d < bestD) { bestD = d; best = a; }
      });
      return best;
    }
    function focusNode(a) {
      svg.querySelectorAll('a:not([tabindex="-1"])').forEach(function (o) { o.setAttribute("tabindex", "-1"); });
      a.removeAttribute("tabindex");
      a.focus({ preventScroll: true });
      var g = nodeOf(a), m = g.transform.baseVal.consolidate(), box = g.querySelector("rect.box:not(.stack)");
      var z = size(), x = (m.matrix.e - s.x) * s.k, y = (m.matrix.f - s.y) * s.k;
      if (x < 0 || y < 0 || x + box.width.baseVal.value * s.k > z.w || y + box.height.baseVal.value * s.k > z.h) centre(g, s.k);
    }
    var DIRS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };

    view.addEventListener("keydown", function (ev) {
      if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
      var on = ev.target.closest && ev.target.closest("svg.graph a");
      if (on && DIRS[ev.key]) {
        var next = nearest(on, DIRS[ev.key][0], DIRS[ev.key][1]);
        if (next) focusNode(next);
        ev.preventDefault();
        return;
      }
      var step = 80, done = true;
      switch (ev.key) {
        case "ArrowLeft": pan(-step, 0); break;
        case "ArrowRight": pan(step, 0); break;
        case "ArrowUp": pan(0, -step); break;
        case "ArrowDown": pan(0, step); break;
        case "+": case "=": zoomBy(1.25); break;
        case "-": case "_": zoomBy(0.8); break;
        case "0": fit(); break;
        case "1": zoomBy(1 / s.k); break;
        case "/": // focus after this key, so that its character is not typed into the search
          var q = document.getElementById("graph-search");
          if (q) setTimeout(function () { q.focus(); q.select(); }, 0);
          break;
        default: done = false;
      }
      if (done) ev.preventDefault();
    });

    if (tools) {
      tools.querySelectorAll("[data-zoom]").forEach(function (b) {
        b.addEventListener("click", function () {
          var z = b.dataset.zoom;
          if (z === "in") zoomBy(1.25);
          else if (z === "out") zoomBy(0.8);
          else if (z === "fit") fit();
          else zoomBy(1 / s.k);
        });
      });
    }

    // Search.
    var list = document.getElementById("graph-list");
    var items = list ? list.querySelectorAll("li[data-task]") : [];
    var dl = document.getElementById("graph-tasks");
    if (dl && !dl.options.length) {
      var frag = document.createDocumentFragment();
      items.forEach(function (li) { var o = document.createElement("option"); o.value = li.dataset.task; frag.appendChild(o); });
      dl.appendChild(frag);
    }
    var said = document.getElementById("graph-found");
    function say(t) { if (said) said.textContent = t; }
    function lookup(q) {
      q = q.trim().replace(/^\//, ""); // the "/" of the shortcut, should it reach the field
      if (!q) return null;
      var lower = q.toLowerCase(), part = null;
      for (var i = 0; i < items.length; i++) {
        var t = items[i].dataset.task;
        if (t === q) return items[i];
        if (!part && t.toLowerCase().indexOf(lower) >= 0) part = items[i];
      }
      return part;
    }
    function show(task, li) {
      svg.querySelectorAll(".node.hit").forEach(function (n) { n.classList.remove("hit"); });
      var g = svg.querySelector('g.node[data-task="' + CSS.escape(task) + '"]');
      if (!g && li && li.dataset.group) {
        var grp = svg.querySelector('g.node[data-group="' + CSS.escape(li.dataset.group) + '"]');
        var a = grp && grp.closest("a");
        if (a) { // open the group, then find the task in it
          var u = new URL(a.getAttribute("href"), location.href); // an SVG a: href is not a string
          u.hash = "find=" + encodeURIComponent(task);
          location.assign(u.toString());
          return;
        }
      }
      if (!g) { say("No task " + task + " in the graph."); return; }
      g.classList.add("hit");
      saved.hit = task;
      centre(g, READABLE_K);
      say(task + (g.dataset.state ? ": " + g.dataset.state.replace(/_/g, " ") : ""));
    }
    var form = document.getElementById("graph-find");
    if (form) {
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var q = document.getElementById("graph-search").value.replace(/^\//, "");
        var li = lookup(q);
        if (!li) { say(q.trim() ? "No task matches “" + q.trim() + "”." : ""); return; }
        show(li.dataset.task, li);
      });
    }
    var m = /^#find=(.+)$/.exec(location.hash);
    if (m && !found) {
      found = true;
      var task = decodeURIComponent(m[1]);
      show(task, lookup(task));
    } else if (saved && saved.hit) {
      var h = svg.querySelector('g.node[data-task="' + CSS.escape(saved.hit) + '"]');
      if (h) h.classList.add("hit");
    }
    relayout = apply;
    follow(view, svg, items);
  }

  // follow keeps the nodes' states fresh while the run may change: it reads the run's states
  // (compact JSON, a 304 while nothing changed) and touches only the nodes whose state moved, so
  // the view, the search and the focus stay as they are.
  var WORST = ["failed", "upstream_failed", "up_for_retry", "awaiting_approval", "running", "scheduled",
    "up_for_reschedule", "none", "skipped", "success"];
  var POLL_MS = 2000;
  function words(s) { return s.replace(/_/g, " "); }
  function setState(el, state) {
    if (el.dataset.state === state) return false;
    el.dataset.state = state;
    el.setAttribute("class", el.getAttribute("class").replace(/\bst-[a-z-]+/, "st-" + state.replace(/_/g, "-")));
    return true;
  }
  function follow(view, svg, items) {
    var url = view.dataset.states;
    if (!url || view.dataset.open !== "1") return;
    var last = "", timer = null;
    var byTask = {};
    items.forEach(function (li) { byTask[li.dataset.task] = li; });
    function tick() {
      if (!document.contains(view)) return;
      if (document.hidden) { timer = setTimeout(tick, POLL_MS); return; }
      fetch(url, { credentials: "same-origin", cache: "no-cache" })
        .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
        .then(function (text) {
          if (text !== last) { last = text; update(JSON.parse(text)); }
          if (JSON.parse(last).open) timer = setTimeout(tick, POLL_MS);
        })
        .catch(function () { timer = setTimeout(tick, POLL_MS * 3); });
    }
    function update(data) {
      var groups = {};
      Object.keys(data.tasks).forEach(function (task) {
        var t = data.tasks[task], state = t[0];
        var li = byTask[task];
        if (li) {
          var w = li.querySelector(".muted");
          if (w) w.textContent = words(state);
          if (li.dataset.group) (groups[li.dataset.group] = groups[li.dataset.group] || []).push(state);
        }
        var g = svg.querySelector('g.node[data-task="' + CSS.escape(task) + '"]');
        if (!g || !setState(g, state)) return;
        var sub = g.querySelector("text.sub"), tip = g.querySelector("title");
        if (sub) { var rest = sub.textContent.split(" · ").slice(1); sub.textContent = [words(state)].concat(rest).join(" · "); }
        var label = task + ": " + words(state) + (t[2] ? "\n" + t[2] : "");
        if (tip) tip.textContent = label; // the node link's accessible name too
      });
      Object.keys(groups).forEach(function (id) {
        var g = svg.querySelector('g.node[data-group="' + CSS.escape(id) + '"]');
        if (!g) return;
        var n = {}, states = groups[id];
        states.forEach(function (st) { n[st] = (n[st] || 0) + 1; });
        var order = WORST.filter(function (st) { return n[st]; });
        Object.keys(n).forEach(function (st) { if (order.indexOf(st) < 0) order.push(st); });
        if (!setState(g, order[0]) && g.dataset.counts === JSON.stringify(n)) return;
        g.dataset.counts = JSON.stringify(n);
        var sub = g.querySelector("text.sub");
        if (sub) sub.textContent = order.map(function (st) { return n[st] + " " + words(st); }).join(" · ");
        // Redraw the bar of the members' states.
        var segs = g.querySelectorAll("rect.seg"), box = g.querySelector("rect.box:not(.stack)");
        segs.forEach(function (r) { r.remove(); });
        var x = 10, bw = box.width.baseVal.value - 16, h = box.height.baseVal.value;
        order.forEach(function (st) {
          var r = document.createElementNS("http://www.w3.org/2000/svg", "rect"), cw = bw * n[st] / states.length;
          r.setAttribute("class", "seg st-" + st.replace(/_/g, "-"));
          r.setAttribute("x", x.toFixed(1)); r.setAttribute("y", h - 7);
          r.setAttribute("width", cw.toFixed(1)); r.setAttribute("height", 4);
          g.appendChild(r);
          x += cw;
        });
      });
      var badge = document.querySelector("#graph-run-state .badge");
      if (badge && data.run) setState(badge, data.run) && (badge.textContent = words(data.run));
    }
    timer = setTimeout(tick, POLL_MS);
  }

  document.addEventListener("DOMContentLoaded", init);
  window.addEventListener("resize", function () { if (relayout) relayout(); });
  document.addEventListener("poolflow:swap", init);
})();
