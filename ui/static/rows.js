// poolflow UI: a long list of rows from the keyboard (the run page's tasks). One row's link
// is a tab stop (the server marks the others tabindex -1, so that a 500-task run is not 500
// stops before the rest of the page); the up and down arrows move it from row to row, Page Up
// and Page Down by ten, Home and End to the first and last. Every link stays a link for screen
// readers and for a click. The stop survives the live refresh (poolflow:swap).
(function () {
  "use strict";
  var at = {}; // table id -> the row index of its tab stop, once the reader moved it

  function links(table) { return Array.prototype.slice.call(table.querySelectorAll("a[data-row]")); }

  // place makes the i-th row link of table the tab stop.
  function place(table, i, focus) {
    var as = links(table);
    if (!as.length) return;
    i = Math.max(0, Math.min(i, as.length - 1));
    as.forEach(function (a, k) {
      if (k === i) a.removeAttribute("tabindex");
      else if (a.getAttribute("tabindex") !== "-1") a.setAttribute("tabindex", "-1");
    });
    at[table.id] = i;
    if (focus) as[i].focus();
  }

  function onKey(ev) {
    var a = ev.target.closest && ev.target.closest("table[data-rove] a[data-row]");
    if (!a || ev.altKey || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
    var table = a.closest("table[data-rove]"), as = links(table), i = as.indexOf(a);
    var to;
    switch (ev.key) {
      case "ArrowUp": to = i - 1; break;
      case "ArrowDown": to = i + 1; break;
      case "PageUp": to = i - 10; break;
      case "PageDown": to = i + 10; break;
      case "Home": to = 0; break;
      case "End": to = as.length - 1; break;
      default: return;
    }
    ev.preventDefault();
    place(table, to, true);
  }

  function init() {
    document.querySelectorAll("table[data-rove]").forEach(function (table) {
      if (table.id in at) place(table, at[table.id], false);
    });
  }

  document.addEventListener("keydown", onKey);
  document.addEventListener("DOMContentLoaded", init);
  document.addEventListener("poolflow:swap", init);
})();
