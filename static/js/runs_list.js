// The runs page: "/" focuses the search, ticked runs build the compare link, and the table stays
// live — run.created / run.updated events on /ws/runs/ (or polling while the socket is down)
// re-fetch the server-rendered table fragment for the current filters, at most once a second.
(function () {
  const search = document.getElementById("runs-search");
  const bulk = document.getElementById("runs-bulk");
  const holder = document.getElementById("runs-table");
  const compareLink = document.getElementById("compare-link");
  const compareSubmit = document.getElementById("compare-submit");
  const note = document.getElementById("selection-note");
  const liveState = document.getElementById("live-state");
  if (!bulk || !holder) return;

  // With JavaScript the compare button becomes a plain link (/compare/?runs=1,2).
  compareSubmit.hidden = true;

  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    const tag = target && target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable)) return;
    event.preventDefault();
    search.focus();
    search.select();
  });

  function boxes() {
    return Array.from(holder.querySelectorAll("input[name=runs]"));
  }

  function selectedIds() {
    return boxes().filter(function (box) { return box.checked; }).map(function (box) { return box.value; });
  }

  function updateSelection() {
    const ids = selectedIds();
    note.textContent = ids.length
      ? ids.length + " run" + (ids.length === 1 ? "" : "s") + " selected"
      : "Tick runs to compare, cancel or archive them.";
    compareLink.hidden = ids.length < 2;
    compareLink.href = "/compare/?runs=" + ids.join(",");
    const all = holder.querySelector("#select-all");
    const list = boxes();
    if (all) {
      all.checked = list.length > 0 && ids.length === list.length;
      all.indeterminate = ids.length > 0 && ids.length < list.length;
    }
  }

  holder.addEventListener("change", function (event) {
    if (event.target.id === "select-all") {
      boxes().forEach(function (box) { box.checked = event.target.checked; });
    }
    updateSelection();
  });

  bulk.addEventListener("submit", function (event) {
    const submitter = event.submitter;
    if (submitter && submitter.value === "cancel") {
      const count = selectedIds().length;
      if (count && !window.confirm("Cancel " + count + " run" + (count === 1 ? "" : "s") + "?")) event.preventDefault();
    }
  });

  // The fragment of the table for the filters, sort and page in the address bar.
  function fragmentUrl() {
    const params = new URLSearchParams(location.search);
    params.set("fragment", "1");
    return location.pathname + "?" + params.toString();
  }

  let inFlight = null;
  let lastHtml = null;
  function refresh() {
    if (inFlight) return inFlight;
    inFlight = fetch(fragmentUrl(), { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (response) {
        if (!response.ok) throw new Error("runs table: HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        if (html === lastHtml) return;
        lastHtml = html;
        const keep = new Set(selectedIds());
        // The fragment is our own server-rendered, autoescaped template.
        const next = new DOMParser().parseFromString(html, "text/html").body;
        holder.replaceChildren.apply(holder, Array.from(next.childNodes));
        boxes().forEach(function (box) { box.checked = keep.has(box.value); });
        updateSelection();
      })
      .finally(function () { inFlight = null; });
    return inFlight;
  }

  const redraw = TirlabLive.batch(function () { refresh().catch(function () {}); }, 1000);
  const labels = { live: "● live", polling: "↻ polling", paused: "paused (tab hidden)" };
  TirlabLive.connect("/ws/runs/", {
    onEvent: function (event) {
      if (event.event === "run.created" || event.event === "run.updated") redraw(event.run);
    },
    poll: refresh,
    pollMs: 4000,
    onState: function (state) { liveState.textContent = labels[state] || ""; },
  });
  updateSelection();
})();
