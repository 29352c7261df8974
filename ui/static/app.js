// poolflow UI: the pages read without this script; it makes them live.
// - Regions marked data-live are refreshed from the same URL every couple of seconds.
// - A running attempt's log (pre[data-log][data-running="1"]) is followed by its new bytes.
// - <time> elements keep their relative text fresh.
// - Forms marked data-action are sent in the background and answer next to the button.
(function () {
  "use strict";
  var REFRESH_MS = 2000, LOG_MS = 1000;
  var live = document.getElementById("live");
  var busy = false;

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
  function refreshTimes(root) {
    (root || document).querySelectorAll("time[datetime]").forEach(function (el) {
      var t = new Date(el.getAttribute("datetime"));
      if (!isNaN(t)) el.textContent = ago(t);
    });
  }

  // Swap every live region for its fresh copy, keeping what the reader has open and the log
  // text already followed.
  function swap(doc) {
    document.querySelectorAll("[data-live][id]").forEach(function (old) {
      var fresh = doc.getElementById(old.id);
      if (!fresh) return;
      old.querySelectorAll("details[id]").forEach(function (d) {
        var n = fresh.querySelector("#" + CSS.escape(d.id));
        if (n) n.open = d.open;
      });
      old.querySelectorAll("pre[data-log][id]").forEach(function (p) {
        var n = fresh.querySelector("#" + CSS.escape(p.id));
        if (n && +p.dataset.offset > +n.dataset.offset) {
          n.textContent = p.textContent;
          n.dataset.offset = p.dataset.offset;
        }
        if (n && p.scrollTop) n.dataset.scroll = p.scrollTop;
      });
      old.querySelectorAll("[data-msg]").forEach(function (m, i) {
        var all = fresh.querySelectorAll("[data-msg]");
        if (m.textContent && all[i]) { all[i].textContent = m.textContent; all[i].className = m.className; }
      });
      old.replaceWith(fresh);
      fresh.querySelectorAll("pre[data-scroll]").forEach(function (p) { p.scrollTop = +p.dataset.scroll; });
      bind(fresh);
    });
    refreshTimes();
  }

  function refresh() {
    if (busy || document.hidden || !document.querySelector("[data-live]")) return Promise.resolve();
    busy = true;
    return fetch(location.href, { headers: { "X-Poolflow-Live": "1" }, credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) throw new Error(r.status);
        return r.text();
      })
      .then(function (html) {
        var active = document.activeElement;
        if (active && active.closest && active.closest("[data-live]") && active.matches("input, textarea")) return;
        swap(new DOMParser().parseFromString(html, "text/html"));
        if (live) { live.hidden = false; live.classList.remove("stale"); live.textContent = "live"; }
      })
      .catch(function () {
        if (live) { live.hidden = false; live.classList.add("stale"); live.textContent = "offline"; }
      })
      .finally(function () { busy = false; });
  }

  function followLogs() {
    document.querySelectorAll('pre[data-log][data-running="1"]').forEach(function (pre) {
      if (pre.dataset.fetching) return;
      pre.dataset.fetching = "1";
      fetch(pre.dataset.log + "?offset=" + encodeURIComponent(pre.dataset.offset || "0"), { credentials: "same-origin" })
        .then(function (r) {
          if (!r.ok) throw new Error(r.status);
          var size = r.headers.get("X-Log-Size"), running = r.headers.get("X-Log-Running");
          return r.text().then(function (text) {
            var cur = document.getElementById(pre.id) || pre;
            var atEnd = cur.scrollHeight - cur.scrollTop - cur.clientHeight < 24;
            if (text) cur.appendChild(document.createTextNode(text));
            if (size) cur.dataset.offset = size;
            if (running === "0") { cur.dataset.running = "0"; refresh(); }
            if (atEnd) cur.scrollTop = cur.scrollHeight;
          });
        })
        .catch(function () {})
        .finally(function () { delete pre.dataset.fetching; });
    });
  }

  // Action forms: send in the background, show the answer beside the button, refresh.
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
        var msg = form.querySelector("[data-msg]");
        var buttons = form.querySelectorAll("button");
        buttons.forEach(function (b) { b.disabled = true; });
        fetch(action, {
          method: "POST", body: body, credentials: "same-origin",
          headers: { "X-Poolflow-Fetch": "1", "Accept": "application/json" }
        })
          .then(function (r) { return r.json().catch(function () { return { ok: false, message: "HTTP " + r.status }; }); })
          .then(function (res) {
            if (msg) {
              msg.className = "form-msg " + (res.ok ? "ok" : "err");
              msg.textContent = res.message || (res.ok ? "Done." : "Refused.");
              if (res.ok && res.location && res.location !== location.pathname && form.id === "trigger-form") {
                var a = document.createElement("a");
                a.href = res.location; a.textContent = " Open the run →";
                msg.appendChild(a);
              }
            }
            return refresh();
          })
          .catch(function (e) {
            if (msg) { msg.className = "form-msg err"; msg.textContent = "Could not reach the server: " + e.message; }
          })
          .finally(function () { buttons.forEach(function (b) { b.disabled = false; }); });
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    bind(document);
    refreshTimes();
    if (document.querySelector("[data-live]")) {
      if (live) live.hidden = false;
      setInterval(refresh, REFRESH_MS);
      document.addEventListener("visibilitychange", function () { if (!document.hidden) refresh(); });
    }
    setInterval(followLogs, LOG_MS);
    followLogs();
    setInterval(function () { refreshTimes(); }, 10000);
  });
})();
