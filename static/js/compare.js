// The compare page: the chosen runs overlaid on one chart per metric (one colour per run), with
// smoothing and x-axis controls. Every control change rewrites the URL (history.replaceState), so
// a reload or a shared link restores the view; changing the set of runs reloads the page, whose
// config diff table is rendered on the server.
(function () {
  const C = window.TirlabCharts;
  const page = JSON.parse(document.getElementById("compare-page-data").textContent);
  const MAX_POINTS = 500; // buckets per series: finer than a pixel of a ~400 px chart
  const form = document.getElementById("compare-form");
  const state = { metrics: page.metrics.slice(), smooth: page.smooth, x: page.x, only: page.onlyDifferences };
  let series = {}; // run id -> key -> series, in the current x mode
  const timings = (window.tirlabCompare = { renderedMs: null, draws: 0 });

  function checkedValues(name) {
    return Array.from(form.querySelectorAll('input[name="' + name + '"]:checked')).map(function (box) {
      return box.value;
    });
  }

  function query() {
    return {
      runs: checkedValues("run").join(","), run: null, metrics: state.metrics.join(","), metric: null,
      smooth: String(state.smooth), x: state.x, only_differences: state.only ? "1" : null,
    };
  }

  function saveState() {
    C.replaceQuery(query());
  }

  // --- data and charts --------------------------------------------------------------------------

  async function fetchMissing() {
    const mode = state.x;
    await Promise.all(page.runs.map(async function (run) {
      const have = series[run.id] || {};
      const wanted = state.metrics.filter(function (key) { return !(key in have); });
      if (!wanted.length) return;
      const body = await C.fetchJson(run.metricsUrl + "?x=" + mode + "&max_points=" + MAX_POINTS +
        "&keys=" + wanted.map(encodeURIComponent).join(","));
      if (mode !== state.x) return;
      series[run.id] = Object.assign(series[run.id] || {}, body.series);
    }));
  }

  function chartDivs() {
    const grid = document.getElementById("charts");
    const wanted = new Set(state.metrics);
    Array.from(grid.children).forEach(function (div) { if (!wanted.has(div.dataset.key)) div.remove(); });
    return state.metrics.map(function (key) {
      let div = grid.querySelector('[data-key="' + CSS.escape(key) + '"]');
      if (!div) {
        div = document.createElement("div");
        div.className = "chart";
        div.dataset.key = key;
      }
      grid.appendChild(div); // keeps the order of state.metrics
      return div;
    });
  }

  function draw() {
    if (!document.getElementById("charts")) return Promise.resolve();
    let maxX = 0;
    page.runs.forEach(function (run) {
      Object.values(series[run.id] || {}).forEach(function (s) {
        if (s.x.length && s.x[s.x.length - 1] > maxX) maxX = s.x[s.x.length - 1];
      });
    });
    const unit = C.timeUnit(maxX);
    const divs = chartDivs();
    return Promise.all(state.metrics.map(function (key, i) {
      let traces = [];
      let empty = true;
      page.runs.forEach(function (run, index) {
        const s = (series[run.id] || {})[key];
        if (!s || !s.x.length) return;
        empty = false;
        traces = traces.concat(C.seriesTraces(s, {
          name: "#" + run.id + " " + run.name, group: "run" + run.id, color: C.seriesColor(index),
          smooth: state.smooth, xMode: state.x, unit: unit, showlegend: true,
        }));
      });
      const layout = C.layout(empty ? key + " (no data in these runs)" : key,
        state.x === "time" ? unit.label : "step",
        { showlegend: page.runs.length > 1, legend: { orientation: "h", y: -0.3, font: { size: 10 } }, height: 280 });
      return C.draw(divs[i], traces, layout).then(function () { timings.draws += 1; });
    })).then(function () {
      if (timings.renderedMs === null) timings.renderedMs = performance.now();
      document.body.dataset.chartsRendered = String(timings.draws);
    });
  }

  const redraw = TirlabLive.batch(draw, 250);

  function reload() {
    return fetchMissing().then(draw).catch(function (err) {
      const grid = document.getElementById("charts");
      if (grid) grid.textContent = "Could not load metrics: " + err.message;
    });
  }

  // --- controls ---------------------------------------------------------------------------------

  const smooth = document.getElementById("smooth");
  const smoothValue = document.getElementById("smooth-value");
  const xAxis = document.getElementById("x-axis");
  const only = document.getElementById("only-differences");
  const table = document.getElementById("diff-table");
  const apply = document.getElementById("apply");

  apply.hidden = true; // every control applies at once with JavaScript on
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    saveState();
    location.reload();
  });
  form.querySelectorAll('input[name="run"]').forEach(function (box) {
    box.addEventListener("change", function () { saveState(); location.reload(); });
  });
  form.querySelectorAll('input[name="metric"]').forEach(function (box) {
    box.addEventListener("change", function () {
      const chosen = checkedValues("metric");
      // Keep the order the metrics were chosen in; new ones go last.
      state.metrics = state.metrics.filter(function (key) { return chosen.indexOf(key) >= 0; })
        .concat(chosen.filter(function (key) { return state.metrics.indexOf(key) < 0; }));
      saveState();
      reload();
    });
  });
  smooth.addEventListener("input", function () {
    state.smooth = parseFloat(smooth.value);
    smoothValue.textContent = state.smooth.toFixed(2);
    saveState();
    redraw();
  });
  xAxis.addEventListener("change", function () {
    state.x = xAxis.value;
    series = {};
    saveState();
    reload();
  });
  only.addEventListener("change", function () {
    state.only = only.checked;
    if (table) table.classList.toggle("only-differences", state.only);
    saveState();
  });
  C.onThemeChange(draw);

  if (page.runs.length) {
    saveState();
    reload();
  }
})();
