// poolflow UI: the pages read without this script; it makes them live.
// - Regions marked data-live are refreshed from the same URL every couple of seconds (a 304
//   while nothing changed), changing only the elements that differ (morph), so focus, selected
//   text, open details and typed text stay.
// - A running attempt's log (pre[data-log][data-running="1"]) is followed by its new bytes.
// - <time> elements keep their relative text fresh.
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
  function refreshTimes(root) {
    (root || document).querySelectorAll("time[datetime]").forEach(function (el) {
      var t = new Date(el.getAttribute("datetime"));
      if (!isNaN(t)) el.textContent = ago(t);
    });
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
    // A log is followed by followLogs: the fresh copy replaces it only when it has more.
    if (a.tagName === "PRE" && a.hasAttribute("data-log")) {
      var more = +b.getAttribute("data-offset") > +a.getAttribute("data-offset");
      var offset = a.getAttribute("data-offset");
      syncAttrs(a, b);
      if (more && a.textContent !== b.textContent) { a.textContent = b.textContent; } else { a.setAttribute("data-offset", offset); }
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

  function followLogs() {
    document.querySelectorAll('pre[data-log][data-running="1"]').forEach(function (pre) {
      if (pre.dataset.fetching) return;
      pre.dataset.fetching = "1";
      var from = pre.dataset.offset || "0";
      fetch(pre.dataset.log + "?offset=" + encodeURIComponent(from), { credentials: "same-origin" })
        .then(function (r) {
          if (!r.ok) throw new Error(r.status);
          var size = r.headers.get("X-Log-Size"), running = r.headers.get("X-Log-Running");
          return r.text().then(function (text) {
            var cur = document.getElementById(pre.id) || pre;
            // The live refresh may have brought the log further meanwhile: these bytes are in it.
            if ((cur.dataset.offset || "0") !== from) return;
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
    refreshTimes();
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
