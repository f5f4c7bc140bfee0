(function () {
  // The verdict viewer: rows from the JSON block, filtered and paged here; every text goes in by textContent.
  var section = document.getElementById("verdicts"), block = document.getElementById("verdict-data");
  if (!section || !block) return;
  var data = JSON.parse(block.textContent), rows = data.rows, texts = data.texts, cut = data.cut || {};
  var OUT = ["win", "tie", "loss"], FLIP = {win: "loss", loss: "win", tie: "tie", failed: "failed"};
  var list = document.getElementById("verdict-list"), status = section.querySelector(".viewer-status");
  var pageLabel = section.querySelector(".viewer-page"), controls = section.querySelector(".viewer-controls");
  var state = {system: "", domain: "", outcome: "", min: "", max: "", qid: "", page: 0, per: 50};
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function fill(select, values) {
    values.forEach(function (v) { var o = el("option", null, v); o.value = v; select.appendChild(o); });
  }
  fill(controls.querySelector('[data-filter="system"]'), data.systems.slice().sort());
  fill(controls.querySelector('[data-filter="domain"]'), data.domains.slice().sort());
  // One row seen from a system's side: "me" is that system (system_a unless the filter names system_b).
  function view(row) {
    var flip = state.system !== "" && data.systems[row[3]] === state.system && data.systems[row[2]] !== state.system;
    var outcome = row[4] < 0 ? "failed" : OUT[row[4]];
    return {flip: flip, me: data.systems[flip ? row[3] : row[2]], other: data.systems[flip ? row[2] : row[3]],
            outcome: flip ? FLIP[outcome] : outcome, wordsMe: row[flip ? 6 : 5], wordsOther: row[flip ? 5 : 6],
            answerMe: row[flip ? 9 : 8], answerOther: row[flip ? 8 : 9]};
  }
  function keep(row) {
    if (state.system && data.systems[row[2]] !== state.system && data.systems[row[3]] !== state.system) return false;
    if (state.domain && data.domains[row[1]] !== state.domain) return false;
    if (state.qid) {
      var wanted = state.qid.split(",").map(function (q) { return q.trim(); }).filter(Boolean);
      if (wanted.indexOf(row[0]) < 0) return false;
    }
    var v = view(row);
    if (state.outcome && v.outcome !== state.outcome) return false;
    if (state.min !== "" || state.max !== "") {
      if (v.wordsMe < 0 || v.wordsOther <= 0) return false;
      var ratio = v.wordsMe / v.wordsOther;
      if (state.min !== "" && ratio < parseFloat(state.min)) return false;
      if (state.max !== "" && ratio > parseFloat(state.max)) return false;
    }
    return true;
  }
  function textBlock(label, index, cls) {
    var box = el("div", "vtext " + (cls || ""));
    box.appendChild(el("div", "vlabel", label));
    if (index < 0 || index === undefined) {
      box.appendChild(el("div", "vmissing", "not available (see the notes above)"));
      return box;
    }
    box.appendChild(el("div", "vbody", texts[index]));
    if (cut[index] !== undefined) {
      box.appendChild(el("div", "vcut", "cut: " + texts[index].length.toLocaleString() + " of " +
                         cut[index].toLocaleString() + " characters shown"));
    }
    return box;
  }
  function render(row) {
    var v = view(row), item = el("article", "verdict");
    item.setAttribute("data-qid", row[0]);
    item.setAttribute("data-system", v.me);
    item.setAttribute("data-opponent", v.other);
    item.setAttribute("data-outcome", v.outcome);
    var head = el("div", "vhead");
    head.appendChild(el("span", "vqid", "qid " + row[0]));
    if (row[1] >= 0) head.appendChild(el("span", "vdomain", data.domains[row[1]]));
    head.appendChild(el("span", "vpair", v.me + " vs " + v.other));
    head.appendChild(el("span", "voutcome o-" + v.outcome, v.outcome));
    var words = (v.wordsMe < 0 ? "?" : v.wordsMe) + " / " + (v.wordsOther < 0 ? "?" : v.wordsOther) + " words";
    if (v.wordsMe >= 0 && v.wordsOther > 0) words += " (ratio " + (v.wordsMe / v.wordsOther).toFixed(2) + ")";
    head.appendChild(el("span", "vwords", words));
    item.appendChild(head);
    if (row[11] >= 0) item.appendChild(textBlock("Why it failed", row[11], "verror"));
    item.appendChild(textBlock("Question", row[7], "vquestion"));
    var pair = el("div", "vpairs");
    pair.appendChild(textBlock(v.me + "'s answer", v.answerMe, "vanswer-me"));
    pair.appendChild(textBlock(v.other + "'s answer", v.answerOther, "vanswer-other"));
    item.appendChild(pair);
    row[10].forEach(function (j) {
      var meFirst = j[1] === null ? null : ((j[1] === 1) !== v.flip);
      var outcome = j[2] < 0 ? "no rating" : (v.flip ? FLIP[OUT[j[2]]] : OUT[j[2]]);
      var label = (j[0] >= 0 ? data.judges[j[0]] : "judge") + ": " + outcome + "; shown first: " +
                  (meFirst === null ? "?" : (meFirst ? v.me : v.other));
      var box = textBlock(label, j[3], "vreply");
      box.setAttribute("data-judge", j[0] >= 0 ? data.judges[j[0]] : "");
      item.appendChild(box);
    });
    return item;
  }
  function readHash() {
    var hash = window.location.hash.replace(/^#/, "");
    hash.split("&").forEach(function (part) {
      var m = /^v(system|domain|outcome|min|max|qid|page|per)=(.*)$/.exec(part);
      if (!m) return;
      var value = decodeURIComponent(m[2].replace(/\+/g, " "));
      if (m[1] === "page") state.page = Math.max(0, (parseInt(value, 10) || 1) - 1);
      else if (m[1] === "per") state.per = Math.min(500, Math.max(1, parseInt(value, 10) || 50));
      else state[m[1]] = value;
    });
  }
  function writeHash() {
    var other = window.location.hash.replace(/^#/, "").split("&").filter(function (p) { return p && !/^v[a-z]+=/.test(p); });
    ["system", "domain", "outcome", "min", "max", "qid"].forEach(function (k) {
      if (state[k] !== "") other.push("v" + k + "=" + encodeURIComponent(state[k]));
    });
    if (state.page) other.push("vpage=" + (state.page + 1));
    if (state.per !== 50) other.push("vper=" + state.per);
    if (window.history && window.history.replaceState) window.history.replaceState(null, "", "#" + other.join("&"));
  }
  function update() {
    var began = performance.now(), shown = rows.filter(keep), pages = Math.max(1, Math.ceil(shown.length / state.per));
    state.page = Math.min(state.page, pages - 1);
    var start = state.page * state.per, slice = shown.slice(start, start + state.per), frag = document.createDocumentFragment();
    slice.forEach(function (row) { frag.appendChild(render(row)); });
    list.textContent = "";
    list.appendChild(frag);
    status.textContent = shown.length.toLocaleString() + " of " + rows.length.toLocaleString() + " verdicts" +
      (shown.length ? ", showing " + (start + 1).toLocaleString() + "–" + (start + slice.length).toLocaleString() : "");
    pageLabel.textContent = "page " + (state.page + 1) + " of " + pages;
    section.setAttribute("data-matches", String(shown.length));
    section.setAttribute("data-update-ms", String(Math.round(performance.now() - began)));
  }
  readHash();
  Array.prototype.forEach.call(controls.querySelectorAll("[data-filter]"), function (input) {
    input.value = state[input.getAttribute("data-filter")];
    input.addEventListener(input.tagName === "SELECT" ? "change" : "input", function () {
      state[input.getAttribute("data-filter")] = input.value;
      state.page = 0;
      update();
      writeHash();
    });
  });
  Array.prototype.forEach.call(section.querySelectorAll("[data-page]"), function (button) {
    button.addEventListener("click", function () {
      state.page = Math.max(0, state.page + parseInt(button.getAttribute("data-page"), 10));
      update();
      writeHash();
    });
  });
  controls.hidden = false;
  update();
  section.setAttribute("data-viewer", "ready");
  section.setAttribute("data-ready-ms", String(Math.round(performance.now())));  // since navigation began
})();
