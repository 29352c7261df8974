// poolflow UI: the DAG page's grid of runs × tasks from the keyboard. One cell is a tab stop
// (the server marks the others tabindex -1, so that a 500-task grid is not 5,000 stops); the
// arrow keys move it across a row and down a column, Home and End to a row's ends. Every cell
// stays a link for screen readers. The stop survives the live refresh (poolflow:swap).
(function () {
  "use strict";
  var at = null; // {row, col} of the tab stop, once the reader moved it

  function cells(tr) { return Array.prototype.slice.call(tr.querySelectorAll("td")); }
  function linkIn(td) { return td && td.querySelector("a.cell"); }

  // place makes the cell at (row, col) of table the tab stop.
  function place(table, row, col, focus) {
    var trs = table.tBodies[0] ? table.tBodies[0].rows : [];
    var tr = trs[row], a = tr && linkIn(cells(tr)[col]);
    if (!a) return false;
    table.querySelectorAll('a.cell:not([tabindex="-1"])').forEach(function (o) { o.setAttribute("tabindex", "-1"); });
    a.removeAttribute("tabindex");
    at = { row: row, col: col };
    if (focus) a.focus();
    return true;
  }

  function onKey(ev) {
    var a = ev.target.closest && ev.target.closest("table.grid a.cell");
    if (!a || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    var table = a.closest("table.grid"), td = a.closest("td"), tr = td.parentNode;
    var trs = Array.prototype.slice.call(table.tBodies[0].rows);
    var row = trs.indexOf(tr), col = cells(tr).indexOf(td), n = cells(tr).length;
    var dr = 0, dc = 0;
    switch (ev.key) {
      case "ArrowLeft": dc = -1; break;
      case "ArrowRight": dc = 1; break;
      case "ArrowUp": dr = -1; break;
      case "ArrowDown": dr = 1; break;
      case "Home": dc = -col; break;
      case "End": dc = n - 1 - col; break;
      default: return;
    }
    ev.preventDefault();
    // Skip the cells without a link (a task not in that run) in the direction of travel.
    var step = ev.key === "Home" || ev.key === "End" ? 0 : 1;
    for (var r = row + dr, c = col + dc; r >= 0 && r < trs.length && c >= 0 && c < n; r += dr * step, c += dc * step) {
      if (place(table, r, c, true) || !step) return;
    }
  }

  function init() {
    var table = document.querySelector("table.grid");
    if (!table) return;
    if (at) place(table, at.row, at.col, false);
  }

  document.addEventListener("keydown", onKey);
  document.addEventListener("DOMContentLoaded", init);
  document.addEventListener("poolflow:swap", init);
})();
