// Starts the run page's first metrics request from <head>, so the server reads the headline
// series while plotly.js downloads and parses; run_page.js picks the promise up.
(function () {
  const page = JSON.parse(document.getElementById("run-page-data").textContent);
  const query = new URLSearchParams(location.search);
  const x = query.get("x") === "time" ? "time" : "step";
  // The headline's charted keys, as run_page.js lays them out: a key logged once is no chart.
  const singles = page.singles.map(function (point) { return point.key; });
  const keys = page.headline.filter(function (key) {
    return page.metricKeys.indexOf(key) >= 0 && singles.indexOf(key) < 0;
  });
  if (!keys.length) return;
  const url = page.metricsUrl + "?x=" + x + "&max_points=" + page.maxPoints +
    "&keys=" + keys.map(encodeURIComponent).join(",");
  window.tirlabRunPrefetch = {
    x: x,
    keys: keys,
    response: fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error(url + ": HTTP " + r.status);
      return r.json();
    }),
  };
})();
