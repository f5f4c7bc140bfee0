(function () {
  function cellValue(row, index, type) {
    var cell = row.cells[index];
    if (!cell) return null;
    var raw = cell.getAttribute("data-value");
    if (raw === null) raw = cell.textContent.trim();
    if (type === "number") {
      if (raw === "") return null;
      var n = parseFloat(raw);
      return isNaN(n) ? null : n;
    }
    return raw.toLowerCase();
  }
  function sortTable(table, key, direction) {
    var headers = table.tHead.rows[0].cells, index = -1, type = "text";
    for (var i = 0; i < headers.length; i++) {
      if (headers[i].getAttribute("data-key") === key) { index = i; type = headers[i].getAttribute("data-type") || "text"; }
      if (headers[i].hasAttribute("aria-sort")) headers[i].setAttribute("aria-sort", "none");
    }
    if (index < 0) return false;
    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows), sign = direction === "asc" ? 1 : -1;
    rows.sort(function (a, b) {
      var x = cellValue(a, index, type), y = cellValue(b, index, type);
      if (x === null && y === null) return 0;
      if (x === null) return 1;  // missing values always last
      if (y === null) return -1;
      return x < y ? -sign : x > y ? sign : 0;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    headers[index].setAttribute("aria-sort", direction === "asc" ? "ascending" : "descending");
    table.setAttribute("data-sorted-by", key + ":" + direction);
    return true;
  }
  var tables = document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables, function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      var key = th.getAttribute("data-key");
      if (!key) return;
      var button = document.createElement("button");
      button.type = "button";
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      th.setAttribute("aria-sort", "none");
      button.addEventListener("click", function () {
        var current = th.getAttribute("aria-sort");
        var first = th.getAttribute("data-type") === "number" ? "desc" : "asc";
        var next = current === "none" ? first : (current === "ascending" ? "desc" : "asc");
        sortTable(table, key, next);
      });
    });
    table.setAttribute("data-sortable", "ready");
  });
  var match = /(?:^#|&)sort=([^:&]+):([^:&]+):(asc|desc)/.exec(window.location.hash);
  if (match) {
    var target = document.getElementById(decodeURIComponent(match[1]));
    if (target && target.classList.contains("sortable")) sortTable(target, decodeURIComponent(match[2]), match[3]);
  }
  var toggles = document.querySelectorAll(".toggle[data-target]");
  Array.prototype.forEach.call(toggles, function (group) {
    var buttons = group.querySelectorAll("button[data-show]");
    function show(name) {
      Array.prototype.forEach.call(buttons, function (b) {
        var on = b.getAttribute("data-show") === name;
        b.setAttribute("aria-pressed", on ? "true" : "false");
        var panel = document.getElementById(b.getAttribute("data-show"));
        if (panel) panel.hidden = !on;
      });
    }
    Array.prototype.forEach.call(buttons, function (b) {
      b.addEventListener("click", function () { show(b.getAttribute("data-show")); });
    });
    if (buttons.length) show(buttons[0].getAttribute("data-show"));
    group.hidden = false;
  });
  document.documentElement.setAttribute("data-js", "ready");
})();
