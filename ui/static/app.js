// poolflow UI: the pages read without this script; it makes them live.
// - Regions marked data-live are refreshed from the same URL every couple of seconds.
// - A running attempt's log (pre[data-log][data-running="1"]) is followed by its new bytes.
// - <time> elements keep their relative text fresh.
// - Forms marked data-action are sent in the background and answer next to the button; a
//   clear or a mark (data-preview) shows the API's dry run in a dialog first.
// - A select marked data-autosubmit sends its form when it changes (the Code tab's versions).
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
      keepInput(old, fresh);
      old.replaceWith(fresh);
      fresh.querySelectorAll("pre[data-scroll]").forEach(function (p) { p.scrollTop = +p.dataset.scroll; });
      bind(fresh);
    });
    refreshTimes();
    document.dispatchEvent(new CustomEvent("poolflow:swap"));
  }

  // keepInput carries what the reader changed in a form (a ticked box, a note being written)
  // into the fresh copy of its region; untouched fields take the fresh values.
  function keepInput(old, fresh) {
    old.querySelectorAll("form[id] [name]").forEach(function (el) {
      var f = fresh.querySelector("#" + CSS.escape(el.form.id));
      if (!f) return;
      var sel = '[name="' + CSS.escape(el.name) + '"]';
      if (el.type === "checkbox" || el.type === "radio") {
        if (el.checked === el.defaultChecked) return;
        var n = f.querySelector(sel + '[value="' + CSS.escape(el.value) + '"]');
        if (n) n.checked = el.checked;
      } else if ("defaultValue" in el && el.value !== el.defaultValue) {
        var m = f.querySelector(sel);
        if (m) m.value = el.value;
      }
    });
  }

  function refresh() {
    if (busy || document.hidden || !document.querySelector("[data-live]") || document.querySelector("dialog[open]")) {
      return Promise.resolve();
    }
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
      setInterval(refresh, REFRESH_MS);
      document.addEventListener("visibilitychange", function () { if (!document.hidden) refresh(); });
    }
    setInterval(followLogs, LOG_MS);
    followLogs();
    setInterval(function () { refreshTimes(); }, 10000);
  });
})();
