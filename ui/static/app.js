// poolflow UI: the pages read without this script; it makes them live.
// - Regions marked data-live are refreshed from the same URL every couple of seconds (a 304
//   while nothing changed), changing only the elements that differ (morph), so focus, selected
//   text, open details and typed text stay.
// - A running attempt's log (pre[data-log][data-running="1"]) is followed by its new bytes;
//   "Load earlier" pages back through a big log; the log's search box highlights its matches.
// - <time> elements show their absolute time in the reader's time zone or in UTC (the switch
//   in the header, remembered in localStorage), the relative time on hover.
// - Forms marked data-action are sent in the background and answer next to the button; a
//   clear or a mark (data-preview) shows the API's dry run in a dialog first.
// - A select marked data-autosubmit sends its form when it changes (the Code tab's versions).
(function () {
  "use strict";
  var REFRESH_MS = 2000, LOG_MS = 1000;
  var live = document.getElementById("live");
  var busy = false, lastHTML = "", refreshes = 0, every = REFRESH_MS, lastAt = 0;

  function ago(t) {
    var d = (Date.now() - t.getTime()) / 1000, future = d < 0, s;
    if (future) d = -d;
    if (d < 2) return "just now";
    if (d < 60) s = Math.floor(d) + "s";
    else if (d < 3600) s = Math.floor(d / 60) + " min";
    else if (d < 172800) s = Math.floor(d / 3600) + " h";
    else s = Math.floor(d / 86400) + " days";
    return future ? "in " + s : s + " ago";
  }
  // Times: absolute, in the reader's zone ("local", the default) or in UTC.
  var TZ_KEY = "poolflow.tz";
  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  function zone() {
    try { return localStorage.getItem(TZ_KEY) === "utc" ? "utc" : "local"; } catch (e) { return "local"; }
  }
  function zoneName() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || "local"; } catch (e) { return "local"; }
  }
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function parts(t, utc) {
    return utc ? [t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate(), t.getUTCHours(), t.getUTCMinutes(), t.getUTCSeconds()]
      : [t.getFullYear(), t.getMonth(), t.getDate(), t.getHours(), t.getMinutes(), t.getSeconds()];
  }
  // full is "2026-12-02 13:20:05"; short leaves out what today shares with it.
  function full(t, utc) {
    var p = parts(t, utc);
    return p[0] + "-" + pad(p[1] + 1) + "-" + pad(p[2]) + " " + pad(p[3]) + ":" + pad(p[4]) + ":" + pad(p[5]);
  }
  function short(t, utc) {
    var p = parts(t, utc), n = parts(new Date(), utc), clock = pad(p[3]) + ":" + pad(p[4]) + ":" + pad(p[5]);
    if (p[0] === n[0] && p[1] === n[1] && p[2] === n[2]) return clock;
    if (p[0] === n[0]) return MONTHS[p[1]] + " " + p[2] + ", " + clock;
    return p[0] + "-" + pad(p[1] + 1) + "-" + pad(p[2]) + " " + pad(p[3]) + ":" + pad(p[4]);
  }
  function refreshTimes(root) {
    var utc = zone() === "utc", here = zoneName();
    document.documentElement.dataset.tz = utc ? "utc" : "local";
    (root || document).querySelectorAll("time[datetime]").forEach(function (el) {
      var t = new Date(el.getAttribute("datetime"));
      if (isNaN(t)) return;
      var text = short(t, utc), title = ago(t) + " · " + full(t, false) + " " + here + " · " + full(t, true) + " UTC";
      if (el.textContent !== text) el.textContent = text;
      if (el.title !== title) el.title = title;
    });
    // A chart's tick (data-time): its clock (with seconds: hms), or its day at midnight and on
    // a week's axis (md).
    (root || document).querySelectorAll("[data-time]").forEach(function (el) {
      var t = new Date(el.getAttribute("data-time"));
      if (isNaN(t)) return;
      var p = parts(t, utc), day = MONTHS[p[1]] + " " + p[2];
      var f = el.getAttribute("data-fmt"), text = f === "hms" ? pad(p[3]) + ":" + pad(p[4]) + ":" + pad(p[5]) :
        f === "md" || (p[3] === 0 && p[4] === 0) ? day : pad(p[3]) + ":" + pad(p[4]);
      if (el.textContent !== text) el.textContent = text;
    });
    var sw = document.getElementById("tz-toggle");
    if (sw) {
      sw.hidden = false;
      sw.textContent = utc ? "Times: UTC" : "Times: local (" + here + ")";
      sw.title = "Show times in " + (utc ? "your time zone, " + here : "UTC");
      sw.setAttribute("aria-pressed", utc ? "true" : "false");
    }
  }
  function bindZone() {
    var sw = document.getElementById("tz-toggle");
    if (!sw) return;
    sw.addEventListener("click", function () {
      try { localStorage.setItem(TZ_KEY, zone() === "utc" ? "local" : "utc"); } catch (e) {}
      refreshTimes();
    });
    // Another tab switched: follow it.
    window.addEventListener("storage", function (ev) { if (ev.key === TZ_KEY) refreshTimes(); });
  }

  // Bring every live region up to date by changing, in place, only what differs from its fresh
  // copy (morph): an element the reader is on — a focused button, a log with selected text, an
  // open <details>, a field being typed into — is kept as it is, not replaced.
  function swap(doc) {
    document.querySelectorAll("[data-live][id]").forEach(function (old) {
      var fresh = doc.getElementById(old.id);
      if (!fresh) return;
      morph(old, fresh);
      bind(old);
    });
    refreshTimes();
    bindEarlier(document);
    bindSearch(document);
    document.dispatchEvent(new CustomEvent("poolflow:swap"));
  }

  // Attributes the script sets on the page's elements, which the server's copy never has.
  var OWN_ATTRS = { "data-bound": 1, "data-fetching": 1, "data-scroll": 1 };

  // same reports whether a fresh node can update an old one in place: the same kind of node,
  // tag and id (a form about queue entry 81 is never reused for entry 82: its message stays its own).
  function same(a, b) {
    if (a.nodeType !== b.nodeType) return false;
    if (a.nodeType !== 1) return true;
    return a.tagName === b.tagName && a.id === b.id && a.getAttribute("data-key") === b.getAttribute("data-key");
  }

  function syncAttrs(a, b) {
    var i, n;
    for (i = a.attributes.length - 1; i >= 0; i--) {
      n = a.attributes[i].name;
      if (!b.hasAttribute(n) && !OWN_ATTRS[n] && !(n === "open" && a.tagName === "DETAILS")) a.removeAttribute(n);
    }
    for (i = 0; i < b.attributes.length; i++) {
      n = b.attributes[i].name;
      if (n === "open" && a.tagName === "DETAILS") continue; // the reader opens and closes it
      if (a.getAttribute(n) !== b.attributes[i].value) a.setAttribute(n, b.attributes[i].value);
    }
  }

  // ahead reports whether one of the next few nodes of list (from i) is n's counterpart: the
  // same element by tag, id, key and class, or the same text.
  function ahead(n, list, i) {
    for (var j = i; j < Math.min(list.length, i + 4); j++) {
      var m = list[j];
      if (!same(n, m)) continue;
      if (n.nodeType !== 1) { if (n.nodeValue === m.nodeValue) return true; continue; }
      if (n.getAttribute("class") === m.getAttribute("class") && n.getAttribute("name") === m.getAttribute("name")) return true;
    }
    return false;
  }

  function morph(a, b) {
    // An element the script owns once it is shown (a log's tools: its "load earlier" link
    // moves back, its search box counts) is left as the script made it.
    if (a.nodeType === 1 && a.hasAttribute("data-own")) return;
    // A field keeps what the reader typed or ticked; untouched, it takes the fresh value.
    if (a.tagName === "INPUT" || a.tagName === "TEXTAREA" || a.tagName === "SELECT") {
      var touched = a.type === "checkbox" || a.type === "radio" ? a.checked !== a.defaultChecked :
        a.tagName === "SELECT" ? false : a.value !== a.defaultValue;
      syncAttrs(a, b);
      if (a.tagName === "TEXTAREA" && !touched && a.defaultValue !== b.defaultValue) { a.defaultValue = b.defaultValue; a.value = b.defaultValue; }
      if (!touched && (a.type === "checkbox" || a.type === "radio")) a.checked = b.hasAttribute("checked");
      return;
    }
    // A message beside a button says what the last click did: it stays until the next click.
    if (a.hasAttribute("data-msg")) { if (!a.textContent) { syncAttrs(a, b); a.textContent = b.textContent; } return; }
    // A log's text, once shown, is only added to — followLogs appends what the file gains,
    // "Load earlier" puts earlier pages before it — so text selected in it stays selected: the
    // fresh copy only says whether it still runs and how far the file reaches (data-size).
    if (a.tagName === "PRE" && a.hasAttribute("data-log")) {
      if (a.getAttribute("data-running") !== b.getAttribute("data-running")) a.setAttribute("data-running", b.getAttribute("data-running"));
      if (+b.getAttribute("data-offset") > +a.getAttribute("data-offset")) a.setAttribute("data-size", b.getAttribute("data-offset"));
      return;
    }
    syncAttrs(a, b);
    var fresh = Array.prototype.slice.call(b.childNodes);
    for (var i = 0; i < fresh.length; i++) {
      var x = a.childNodes[i], y = fresh[i];
      if (!x) { a.appendChild(y); continue; }
      if (!same(x, y)) {
        // A node added or removed shifts the rest: realign on the next few nodes rather than
        // replace everything after it (the focused button, a message, would go with it).
        if (ahead(x, fresh, i + 1)) { a.insertBefore(y, x); continue; }
        if (ahead(y, a.childNodes, i + 1)) { a.removeChild(x); i--; continue; }
        a.replaceChild(y, x);
        continue;
      }
      if (x.nodeType === 1) morph(x, y);
      else if (x.nodeValue !== y.nodeValue) x.nodeValue = y.nodeValue;
    }
    while (a.childNodes.length > fresh.length) a.removeChild(a.lastChild);
  }

  function refresh() {
    if (busy || document.hidden || !document.querySelector("[data-live]") || document.querySelector("dialog[open]")) {
      return Promise.resolve();
    }
    busy = true;
    return fetch(location.href, { headers: { "X-Poolflow-Live": "1" }, credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) throw new Error(r.status);
        // A big page refreshes less often: about 15 KB a second at most (a 304 costs nothing).
        var size = +r.headers.get("Content-Length") || 0;
        every = Math.min(30000, Math.max(REFRESH_MS, size / 15));
        return r.text();
      })
      .then(function (html) {
        if (html !== lastHTML) {
          lastHTML = html;
          swap(new DOMParser().parseFromString(html, "text/html"));
        }
        document.documentElement.dataset.refreshes = ++refreshes;
        if (live) { live.hidden = false; live.classList.remove("stale"); live.textContent = "live"; }
      })
      .catch(function () {
        if (live) { live.hidden = false; live.classList.add("stale"); live.textContent = "offline"; }
      })
      .finally(function () { busy = false; });
  }

  // followLogs fetches the bytes a shown log lacks — a running attempt's new output, or what
  // the file gained before the live refresh saw it end (data-size) — as HTML (the server
  // renders its colours) and appends them: the text already shown is never touched.
  function followLogs() {
    document.querySelectorAll("pre[data-log]").forEach(function (pre) {
      var from = pre.dataset.offset || "0";
      if (pre.dataset.fetching || (pre.dataset.running !== "1" && !(+pre.dataset.size > +from))) return;
      pre.dataset.fetching = "1";
      fetch(pre.dataset.log + "?format=html&offset=" + encodeURIComponent(from), { credentials: "same-origin" })
        .then(function (r) {
          if (!r.ok) throw new Error(r.status);
          var size = r.headers.get("X-Log-Size"), running = r.headers.get("X-Log-Running");
          return r.text().then(function (html) {
            var cur = document.getElementById(pre.id) || pre;
            if ((cur.dataset.offset || "0") !== from) return;
            var atEnd = cur.scrollHeight - cur.scrollTop - cur.clientHeight < 24;
            if (html) cur.insertAdjacentHTML("beforeend", html);
            if (size) cur.dataset.offset = size;
            if (+cur.dataset.size <= +cur.dataset.offset) delete cur.dataset.size;
            if (running === "0" && cur.dataset.running === "1") { cur.dataset.running = "0"; refresh(); }
            if (atEnd) cur.scrollTop = cur.scrollHeight;
            if (html) logChanged(cur);
          });
        })
        .catch(function () {})
        .finally(function () { delete pre.dataset.fetching; });
    });
  }

  // logChanged tells the log's search that its text grew.
  function logChanged(pre) { pre.dispatchEvent(new CustomEvent("poolflow:log")); }

  // "Load earlier": the piece of the log before the shown text, put before it, the reader's
  // place (and selection) kept; the link moves back, and goes once the log's start is shown.
  function bindEarlier(root) {
    root.querySelectorAll("a[data-earlier]").forEach(function (a) {
      if (a.dataset.bound) return;
      a.dataset.bound = "1";
      a.addEventListener("click", function (ev) { ev.preventDefault(); earlier(a); });
    });
  }
  // earlier loads the piece before a log's shown text (a: its "Load earlier" link).
  function earlier(a) {
        var pre = document.getElementById(a.dataset.earlier);
        if (!pre || a.dataset.fetching) return Promise.resolve();
        a.dataset.fetching = "1";
        a.setAttribute("aria-busy", "true");
        return fetch(a.href + "&format=html", { credentials: "same-origin" })
          .then(function (r) {
            if (!r.ok) throw new Error("HTTP " + r.status);
            var start = r.headers.get("X-Log-Start");
            return r.text().then(function (html) {
              var h = pre.scrollHeight;
              pre.insertAdjacentHTML("afterbegin", html);
              pre.scrollTop += pre.scrollHeight - h;
              pre.dataset.start = start;
              var shown = document.getElementById(a.id.replace("log-earlier-", "log-shown-"));
              if (+start > 0) {
                a.href = a.href.replace(/before=\d+/, "before=" + start);
                if (shown) shown.textContent = "showing from byte " + (+start).toLocaleString("en") + " of " + (+shown.dataset.size).toLocaleString("en");
              } else {
                a.remove();
                if (shown) shown.textContent = "showing the whole log";
              }
              logChanged(pre);
            });
          })
          .catch(function (e) { a.textContent = "Load earlier (failed: " + e.message + ")"; throw e; })
          .finally(function () { delete a.dataset.fetching; a.removeAttribute("aria-busy"); });
  }
  // loadUntil loads earlier pieces of a log until byte offset is shown.
  function loadUntil(pre, offset) {
    var a = document.querySelector('a[data-earlier="' + pre.id + '"]');
    if (!a || +pre.dataset.start <= offset) return Promise.resolve();
    return earlier(a).then(function () { return loadUntil(pre, offset); });
  }

  // Search in a log: every match of the box's text (any case) is highlighted — with the CSS
  // Custom Highlight API, which marks ranges without changing the log's elements, so the live
  // updates and a selection are not disturbed — and Enter, Shift+Enter and the arrows move
  // between them, the current one scrolled into view.
  var HL = window.CSS && CSS.highlights && window.Highlight;
  var allMatches = HL ? new Highlight() : null, currentMatch = HL ? new Highlight() : null;
  if (HL) { CSS.highlights.set("log-match", allMatches); CSS.highlights.set("log-current", currentMatch); }
  var MAX_MATCHES = 5000;

  function findIn(pre, needle) {
    var nodes = [], starts = [], text = "", w = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT), n;
    while ((n = w.nextNode())) { nodes.push(n); starts.push(text.length); text += n.nodeValue; }
    var hay = text.toLowerCase(), want = needle.toLowerCase(), out = [];
    function at(i) { // the text node and offset of character i
      var lo = 0, hi = nodes.length - 1;
      while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (starts[mid] <= i) lo = mid; else hi = mid - 1; }
      return [nodes[lo], i - starts[lo]];
    }
    for (var i = hay.indexOf(want); want && i >= 0 && out.length < MAX_MATCHES; i = hay.indexOf(want, i + want.length)) {
      var s = at(i), e = at(i + want.length - 1), r = document.createRange();
      r.setStart(s[0], s[1]); r.setEnd(e[0], e[1] + 1);
      out.push(r);
    }
    return out;
  }

  // A pool timeline's slices link to who held the slots at their peak: the answer replaces the
  // chart (its marker) and the holders' list in place, and the address says it.
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest && ev.target.closest("svg.window-chart a.hit");
    if (!a || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
    ev.preventDefault();
    var href = a.getAttribute("href");
    fetch(href, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        ["tl-chart", "holders"].forEach(function (id) {
          var old = document.getElementById(id), fresh = doc.getElementById(id);
          if (old && fresh) old.replaceWith(fresh);
        });
        history.replaceState(null, "", href);
        refreshTimes();
      })
      .catch(function () { location.assign(href); });
  });

  function bindSearch(root) {
    root.querySelectorAll(".log-tools").forEach(function (tools) {
      var box = tools.querySelector(".log-search"), pre = document.getElementById(tools.dataset.for);
      if (!box || !pre || tools.dataset.bound) return;
      tools.dataset.bound = "1";
      box.hidden = false;
      var input = box.querySelector("input"), count = box.querySelector(".log-count");
      var whole = box.querySelector("[data-find=whole]"), finds = tools.querySelector(".log-finds");
      var matches = [], cur = -1, timer = 0;
      function paint() {
        if (!HL) return;
        allMatches.clear(); currentMatch.clear();
        matches.forEach(function (r, i) { (i === cur ? currentMatch : allMatches).add(r); });
      }
      function show() {
        if (whole) whole.hidden = !input.value || !(+pre.dataset.start > 0);
        count.textContent = !input.value ? "" : matches.length === 0 ? "no match" :
          (cur + 1) + " of " + matches.length + (matches.length >= MAX_MATCHES ? "+" : "");
        pre.dataset.matches = matches.length;
        pre.dataset.current = cur;
        paint();
        if (cur < 0) return;
        var r = matches[cur], box = r.getBoundingClientRect(), p = pre.getBoundingClientRect();
        if (box.top < p.top || box.bottom > p.bottom) pre.scrollTop += box.top - p.top - pre.clientHeight / 2;
        var left = box.left - p.left;
        if (left < 0 || left > pre.clientWidth) pre.scrollLeft += left - pre.clientWidth / 2;
        var vr = pre.getBoundingClientRect();
        if (vr.bottom > window.innerHeight || vr.top < 0) pre.scrollIntoView({ block: "nearest" });
        if (!HL) { var s = getSelection(); s.removeAllRanges(); s.addRange(r); }
      }
      function search(keep) {
        var was = cur;
        matches = input.value ? findIn(pre, input.value) : [];
        cur = matches.length ? (keep && was >= 0 ? Math.min(was, matches.length - 1) : matches.length - 1) : -1;
        show();
      }
      function step(d) {
        if (!matches.length) { search(false); return; }
        cur = (cur + d + matches.length) % matches.length;
        show();
      }
      input.addEventListener("input", function () { if (finds) finds.hidden = true; clearTimeout(timer); timer = setTimeout(function () { search(false); }, 120); });
      input.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter") {
          ev.preventDefault();
          clearTimeout(timer);
          if (!matches.length) search(false); else step(ev.shiftKey ? -1 : 1);
        }
        else if (ev.key === "Escape") { input.value = ""; search(false); }
      });
      box.querySelectorAll("button[data-find=prev], button[data-find=next]").forEach(function (b) {
        b.addEventListener("click", function () { step(b.dataset.find === "prev" ? -1 : 1); });
      });
      // The whole log, searched on the server: its matching lines, each a button that loads
      // the log back to it and moves the search there.
      if (whole && finds) whole.addEventListener("click", function () {
        var text = input.value;
        if (!text) return;
        whole.disabled = true;
        fetch(pre.dataset.log + "?find=" + encodeURIComponent(text), { credentials: "same-origin" })
          .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
          .then(function (res) {
            finds.textContent = "";
            var p = document.createElement("p");
            p.className = "muted small";
            p.textContent = res.matches.length === 0 ? "No line of the whole log holds it." :
              (res.more ? "The first " : "") + res.matches.length + (res.matches.length === 1 ? " line" : " lines") +
              " of the whole log " + (res.matches.length === 1 ? "holds" : "hold") + " it; pick one to go there:";
            finds.appendChild(p);
            var ol = document.createElement("ol");
            res.matches.forEach(function (m, i) {
              var li = document.createElement("li"), b = document.createElement("button");
              b.type = "button"; b.className = "link log-find-line"; b.dataset.offset = m.offset;
              var at = document.createElement("span");
              at.className = "muted"; at.textContent = "byte " + m.offset.toLocaleString("en") + " ";
              b.appendChild(at);
              b.appendChild(document.createTextNode(m.line));
              b.addEventListener("click", function () {
                loadUntil(pre, m.offset).then(function () {
                  matches = findIn(pre, text);
                  // The line in the shown text: the k-th of the lines that read the same from
                  // where the shown text begins.
                  var k = 0, start = +pre.dataset.start;
                  for (var j = 0; j < i; j++) if (res.matches[j].offset >= start && res.matches[j].line === m.line) k++;
                  var lines = findIn(pre, m.line.replace(/…$/, "")), line = lines[Math.min(k, lines.length - 1)];
                  cur = matches.length - 1;
                  for (var n = 0; line && n < matches.length; n++) {
                    if (matches[n].compareBoundaryPoints(Range.START_TO_START, line) >= 0) { cur = n; break; }
                  }
                  show();
                });
              });
              li.appendChild(b);
              ol.appendChild(li);
            });
            finds.appendChild(ol);
            finds.hidden = false;
          })
          .catch(function (e) { finds.hidden = false; finds.textContent = "The search failed: " + e.message; })
          .finally(function () { whole.disabled = false; });
      });
      // New text (followed, or loaded earlier) is searched too; the current match stays.
      pre.addEventListener("poolflow:log", function () {
        if (!input.value) return;
        var r = cur >= 0 ? matches[cur] : null;
        matches = findIn(pre, input.value);
        cur = -1;
        for (var i = 0; r && i < matches.length; i++) {
          if (matches[i].compareBoundaryPoints(Range.START_TO_START, r) === 0) { cur = i; break; }
        }
        if (cur < 0 && matches.length) cur = matches.length - 1;
        count.textContent = (cur + 1) + " of " + matches.length;
        pre.dataset.matches = matches.length;
        pre.dataset.current = cur;
        paint();
      });
    });
  }

  // Action forms: send in the background, show the answer beside the button, refresh.
  // data-confirm asks first; data-preview posts once for the API's dry run, shows its preview
  // in a dialog and posts again with confirm=1 when the user confirms; data-go follows the
  // answer's location (a deleted run's page is gone).
  function post(action, body) {
    return fetch(action, {
      method: "POST", body: body, credentials: "same-origin",
      headers: { "X-Poolflow-Fetch": "1", "Accept": "application/json" }
    }).then(function (r) { return r.json().catch(function () { return { ok: false, message: "HTTP " + r.status }; }); });
  }

  function say(form, res) {
    // The live refresh may have swapped the form for a fresh copy while it was sent.
    if (form.id && !document.contains(form)) form = document.getElementById(form.id) || form;
    var msg = form.querySelector("[data-msg]");
    if (!msg) return;
    msg.className = "form-msg " + (res.ok ? "ok" : "err");
    msg.textContent = res.message || (res.ok ? "Done." : "Refused.");
    if (res.ok && res.location && res.location !== location.pathname && form.id === "trigger-form") {
      var a = document.createElement("a");
      a.href = res.location; a.textContent = " Open the run →";
      msg.appendChild(a);
    }
  }

  // ask shows a preview (HTML from the server's template) in a modal dialog and resolves to
  // whether the user confirmed. Escape and Cancel say no; focus returns to the form's button.
  function ask(html, label, danger, back) {
    return new Promise(function (resolve) {
      var dlg = document.createElement("dialog");
      dlg.className = "dialog";
      dlg.id = "confirm-dialog";
      dlg.innerHTML = '<div class="dialog-body"></div><div class="dialog-buttons">' +
        '<button type="button" class="button ghost" data-answer="no">Cancel</button>' +
        '<button type="button" class="button" data-answer="yes" id="dialog-confirm"></button></div>';
      dlg.querySelector(".dialog-body").innerHTML = html;
      var yes = dlg.querySelector("[data-answer=yes]"), no = dlg.querySelector("[data-answer=no]");
      var title = dlg.querySelector(".preview-title");
      if (title) { title.id = "dialog-title"; dlg.setAttribute("aria-labelledby", "dialog-title"); }
      if (label) yes.textContent = label; else yes.remove();
      if (danger) yes.classList.add("danger");
      if (!label) no.textContent = "Close";
      var answer = false;
      yes.addEventListener("click", function () { answer = true; dlg.close(); });
      no.addEventListener("click", function () { dlg.close(); });
      dlg.addEventListener("close", function () {
        dlg.remove();
        if (back && document.contains(back)) back.focus();
        resolve(answer);
      });
      document.body.appendChild(dlg);
      dlg.showModal();
      (danger || !label ? no : yes).focus();
    });
  }

  function bind(root) {
    root.querySelectorAll("form[data-action]").forEach(function (form) {
      if (form.dataset.bound) return;
      form.dataset.bound = "1";
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var confirmText = form.dataset.confirm;
        if (confirmText && !window.confirm(confirmText)) return;
        var submitter = ev.submitter;
        var action = (submitter && submitter.getAttribute("formaction")) || form.action;
        var body = new URLSearchParams(new FormData(form));
        if (submitter && submitter.name) body.set(submitter.name, submitter.value);
        var buttons = form.querySelectorAll("button");
        var msg = form.querySelector("[data-msg]");
        if (msg) { msg.textContent = ""; msg.className = "form-msg"; }
        buttons.forEach(function (b) { b.disabled = true; });
        var step = Promise.resolve(null);
        if (form.hasAttribute("data-preview")) {
          step = post(action, body).then(function (res) {
            if (!res.ok || !res.preview) return res;
            buttons.forEach(function (b) { b.disabled = false; });
            return ask(res.preview, res.confirm, submitter && submitter.classList.contains("danger"), submitter)
              .then(function (yes) {
                if (!yes) return { cancelled: true };
                buttons.forEach(function (b) { b.disabled = true; });
                body.set("confirm", "1");
                return null;
              });
          });
        }
        step
          .then(function (res) { return res || post(action, body); })
          .then(function (res) {
            if (res.cancelled) return;
            if (res.ok && res.location && form.hasAttribute("data-go")) {
              location.assign(res.location);
              return;
            }
            say(form, res);
            return refresh();
          })
          .catch(function (e) {
            if (msg) { msg.className = "form-msg err"; msg.textContent = "Could not reach the server: " + e.message; }
          })
          .finally(function () { buttons.forEach(function (b) { b.disabled = false; }); });
      });
    });
  }

  // A picker (select[data-autosubmit], the Code tab's versions) shows its choice at once.
  function autosubmit(root) {
    root.querySelectorAll("select[data-autosubmit]").forEach(function (sel) {
      sel.addEventListener("change", function () { if (sel.form) sel.form.submit(); });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    bind(document);
    autosubmit(document);
    bindZone();
    refreshTimes();
    bindEarlier(document);
    bindSearch(document);
    // A log opens at its end, where a reader looks first.
    document.querySelectorAll("pre[data-log]").forEach(function (pre) { pre.scrollTop = pre.scrollHeight; });
    if (document.querySelector("[data-live]")) {
      if (live) live.hidden = false;
      setInterval(function () { if (Date.now() - lastAt >= every - 50) { lastAt = Date.now(); refresh(); } }, REFRESH_MS / 2);
      document.addEventListener("visibilitychange", function () { if (!document.hidden) refresh(); });
    }
    setInterval(followLogs, LOG_MS);
    followLogs();
    setInterval(function () { refreshTimes(); }, 10000);
  });
})();
