// Metric charts shared by the run page and the compare page (Plotly from static/vendor).
//
// A series is the metrics API's shape: parallel arrays x, step, min, max, last, count — one entry
// per server-side bucket (or per step when the series is short). Each is drawn as a min–max band
// and a line through the (optionally EMA-smoothed) last value of each bucket.
(function () {
  function cssVar(name, fallbackName) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || (fallbackName ? cssVar(fallbackName) : "");
  }

  function theme() {
    return { fg: cssVar("--fg"), muted: cssVar("--muted"), line: cssVar("--line"), panel: cssVar("--panel") };
  }

  // Series colours come from CSS (--series-1 … --series-8 in charts.css, one set per theme).
  function seriesColor(index) {
    return cssVar("--series-" + ((index % 8) + 1), "--accent");
  }

  // A colour with alpha, for the band; works for #rrggbb and rgb()/rgba() values.
  function withAlpha(color, alpha) {
    const hex = /^#([0-9a-f]{6})$/i.exec(color);
    if (hex) {
      const n = parseInt(hex[1], 16);
      return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + alpha + ")";
    }
    const rgb = /^rgba?\(([^)]+)\)$/.exec(color);
    if (rgb) return "rgba(" + rgb[1].split(",").slice(0, 3).join(",") + "," + alpha + ")";
    return color;
  }

  // Exponential moving average with TensorBoard's debiasing (the first points are not pulled to 0).
  function ema(values, weight) {
    if (!weight) return values.slice();
    const out = new Array(values.length);
    let last = 0;
    let n = 0;
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (v === null || v === undefined || !isFinite(v)) { out[i] = null; continue; }
      last = last * weight + (1 - weight) * v;
      n += 1;
      // 12 significant digits: a constant series must stay constant, not wobble in the last bits.
      out[i] = +(last / (1 - Math.pow(weight, n))).toPrecision(12);
    }
    return out;
  }

  // Relative time in seconds, shown in the unit that suits the run's length.
  function timeUnit(maxSeconds) {
    if (maxSeconds >= 2 * 3600) return { div: 3600, label: "hours since first step" };
    if (maxSeconds >= 120) return { div: 60, label: "minutes since first step" };
    return { div: 1, label: "seconds since first step" };
  }

  function xValues(series, xMode, unit) {
    return xMode === "time" ? series.x.map(function (x) { return x / unit.div; }) : series.x;
  }

  // Markers on the line while its points are far enough apart to tell (at most MARKED_POINTS): they
  // show where a click lands, and widen the target (a marker's radius counts as near). Denser lines
  // have a point every few pixels anyway.
  const MARKED_POINTS = 150;

  function markerSize(points) {
    if (points < 2) return 7; // a lone point (a final summary such as train_runtime) draws no line: a dot
    return points <= 40 ? 6 : 4;
  }

  // Band (min, then max filled to it) and the line, for one series of one run.
  function seriesTraces(series, opts) {
    const color = opts.color;
    const x = xValues(series, opts.xMode, opts.unit);
    const smooth = ema(series.last, opts.smooth);
    const custom = series.step.map(function (step, i) {
      return [step, series.last[i], series.min[i], series.max[i], series.count[i]];
    });
    const group = opts.group || opts.name;
    return [
      { type: "scatter", mode: "lines", x: x, y: series.min, line: { width: 0, color: color }, hoverinfo: "skip",
        showlegend: false, legendgroup: group },
      { type: "scatter", mode: "lines", x: x, y: series.max, line: { width: 0, color: color }, fill: "tonexty",
        fillcolor: withAlpha(color, 0.18), hoverinfo: "skip", showlegend: false, legendgroup: group },
      { type: "scatter", mode: series.step.length <= MARKED_POINTS ? "lines+markers" : "lines", x: x, y: smooth,
        name: opts.name, line: { width: 1.6, color: color }, marker: { size: markerSize(series.step.length), color: color },
        customdata: custom, legendgroup: group, showlegend: !!opts.showlegend,
        hovertemplate: (opts.name ? "<b>%{fullData.name}</b><br>" : "") +
          "step %{customdata[0]}<br>value %{customdata[1]:.5g}" +
          (opts.smooth ? " (smoothed %{y:.5g})" : "") +
          "<br>bucket min %{customdata[2]:.5g} · max %{customdata[3]:.5g} · %{customdata[4]} steps<extra></extra>" },
    ];
  }

  function layout(title, xTitle, opts) {
    const t = theme();
    const axis = { gridcolor: t.line, zerolinecolor: t.line, linecolor: t.line, color: t.muted, automargin: true };
    return Object.assign({
      title: { text: title, font: { size: 13, color: t.fg }, x: 0.01, xanchor: "left" },
      paper_bgcolor: t.panel, plot_bgcolor: t.panel, font: { color: t.fg, size: 11 },
      // A point is hovered (and clicked) from up to 30 px away, not Plotly's default 20.
      margin: { l: 50, r: 12, t: 30, b: 36 }, height: 240, hovermode: "closest", hoverdistance: 30,
      xaxis: Object.assign({ title: { text: xTitle, font: { size: 11 } } }, axis),
      yaxis: Object.assign({}, axis), showlegend: false,
      hoverlabel: { bgcolor: t.panel, bordercolor: t.line, font: { color: t.fg } },
    }, opts || {});
  }

  const CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"] };

  function draw(div, traces, plotLayout) {
    return Plotly.react(div, traces, plotLayout, CONFIG);
  }

  // The headline metrics (the page's data names them, from trainer.contract) first, in their order,
  // then every other one grouped by its '/' prefix.
  function groupKeys(keys, headlineNames) {
    const headline = headlineNames.filter(function (key) { return keys.indexOf(key) >= 0; });
    const sections = {};
    keys.slice().sort().forEach(function (key) {
      if (headlineNames.indexOf(key) >= 0) return;
      const prefix = key.indexOf("/") >= 0 ? key.split("/")[0] : "other";
      (sections[prefix] = sections[prefix] || []).push(key);
    });
    return { headline: headline, sections: Object.keys(sections).sort().map(function (name) {
      return { name: name, keys: sections[name] };
    }) };
  }

  // Re-theme charts when the light/dark toggle flips data-theme on <html>.
  function onThemeChange(fn) {
    new MutationObserver(fn).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  }

  // A page's view state in its URL, so a reload or a shared link restores it.
  function replaceQuery(params) {
    const url = new URL(location.href);
    Object.keys(params).forEach(function (name) {
      const value = params[name];
      if (value === null || value === undefined || value === "") url.searchParams.delete(name);
      else url.searchParams.set(name, value);
    });
    history.replaceState(null, "", url.pathname + "?" + url.searchParams.toString().replace(/%2C/g, ","));
  }

  async function fetchJson(url) {
    const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    if (!response.ok) throw new Error(url + ": HTTP " + response.status);
    return response.json();
  }

  window.TirlabCharts = {
    ema, timeUnit, seriesTraces, layout, draw, groupKeys, seriesColor, onThemeChange, replaceQuery,
    fetchJson,
  };
})();
