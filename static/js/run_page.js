// The run page: charts of every metric (headline first, then by '/' prefix), the metrics logged once
// as values above them, live status, the trainer's phase and logs. Data: GET the metrics API
// (server-side downsampled) at load and on x-axis changes; the run websocket's "metrics", "status",
// "phase" and "logs" events append live; while the socket is down a poll of the run (and the
// metrics API when its last step moved) keeps the page current. The SFT cold start's metrics
// (keys under page.sftPrefix) are on the SFT's own steps: charted by step, never by time, and
// without rollouts to open.
(function () {
  const C = window.TirlabCharts;
  const page = JSON.parse(document.getElementById("run-page-data").textContent);
  const MAX_POINTS = page.maxPoints;
  const query = new URLSearchParams(location.search);
  const state = {
    smooth: Math.min(Math.max(parseFloat(query.get("smooth")) || 0, 0), 0.99),
    x: query.get("x") === "time" ? "time" : "step",
  };
  function isSft(key) {
    return key.indexOf(page.sftPrefix) === 0;
  }
  // A key logged once (HF Trainer's train_runtime, total_flos, …) is a value, not a chart of one
  // point: key -> {step, value}. The server names those it knows; a series read or pushed later with
  // one point joins them, and a key that gets a second point becomes a chart. The SFT's curve is a
  // chart from its first step.
  const singles = {};
  page.singles.forEach(function (point) {
    if (!isSft(point.key)) singles[point.key] = { step: point.step, value: point.value };
  });
  let keys = page.metricKeys.filter(function (key) { return !(key in singles); }); // the charted keys
  let series = {}; // key -> series in the current x mode
  let lastStep = page.lastStep;
  let runStatus = page.status;
  let firstStepTime = page.firstStepTime;
  let lastSftDone = null; // the SFT step the last poll saw, while the cold start runs
  let cancelling = false; // asked to cancel, and the run's status has not said it ended yet
  const charts = {}; // key -> {div, visible, dirty, drawn, stale (its series must be re-read)}
  const timings = (window.tirlabRunPage = { headlineRenderedMs: null, chartsDrawn: 0, polls: 0 });

  // The x axis a key is drawn on: the SFT's keys always by their own step.
  function xModeOf(key) {
    return isSft(key) ? "step" : state.x;
  }

  // --- layout -----------------------------------------------------------------------------------

  const observer = new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      const chart = charts[entry.target.dataset.key];
      if (!chart) return;
      const key = entry.target.dataset.key;
      chart.visible = entry.isIntersecting;
      if (chart.visible && chart.stale) {
        chart.stale = false;
        fetchSeries([key]).then(function () { drawChart(key); });
      } else if (chart.visible && chart.dirty) {
        drawChart(key);
      }
    });
  }, { rootMargin: "300px" });

  function chartDiv(key, parent) {
    const div = document.createElement("div");
    div.className = "chart";
    div.dataset.key = key;
    parent.appendChild(div);
    charts[key] = { div: div, visible: false, dirty: true, drawn: false };
    observer.observe(div);
    return div;
  }

  function buildLayout() {
    const groups = C.groupKeys(keys, page.headline);
    const headline = document.getElementById("headline-charts");
    const sections = document.getElementById("section-charts");
    groups.headline.forEach(function (key) { if (!charts[key]) chartDiv(key, headline); });
    groups.sections.forEach(function (section) {
      let grid = sections.querySelector('.chart-grid[data-section="' + CSS.escape(section.name) + '"]');
      if (!grid) {
        const box = document.createElement("details");
        box.open = true;
        box.className = "metric-section";
        const title = document.createElement("summary");
        title.textContent = section.name;
        grid = document.createElement("div");
        grid.className = "chart-grid";
        grid.dataset.section = section.name;
        box.append(title, grid);
        sections.appendChild(box);
      }
      section.keys.forEach(function (key) { if (!charts[key]) chartDiv(key, grid); });
    });
    document.getElementById("charts-empty").hidden = keys.length + Object.keys(singles).length > 0;
    showChartControls();
  }

  // --- metrics logged once ----------------------------------------------------------------------

  function isSingle(s) {
    return s.step.length === 1 && s.count[0] === 1;
  }

  // Six significant digits; large and tiny magnitudes (total_flos ~ 1e15) in exponent form.
  function formatValue(value) {
    const size = Math.abs(value);
    if (size !== 0 && (size >= 1e6 || size < 1e-3)) {
      const parts = value.toExponential(3).split("e");
      return +parts[0] + "e" + +parts[1];
    }
    return String(+value.toPrecision(6));
  }

  function singleItem(key) {
    const point = singles[key];
    const item = document.createElement("div");
    item.className = "metric-single";
    item.dataset.key = key;
    const name = document.createElement("dt");
    name.textContent = key;
    const value = document.createElement("dd");
    const number = document.createElement("span");
    number.className = "single-value";
    number.textContent = formatValue(point.value);
    number.title = String(point.value);
    const step = document.createElement("small");
    step.className = "single-step";
    step.textContent = "step " + point.step;
    value.append(number, " ", step);
    item.append(name, value);
    return item;
  }

  function showSingles() {
    const names = Object.keys(singles).sort();
    document.getElementById("metric-singles-list").replaceChildren(...names.map(singleItem));
    document.getElementById("metric-singles").hidden = names.length === 0;
    document.getElementById("charts-empty").hidden = keys.length + names.length > 0;
    showChartControls();
  }

  // Smoothing, the x axis and the chart hint mean nothing without a chart: an evaluation's metrics, all at the
  // one step it evaluates, are values.
  function showChartControls() {
    document.querySelectorAll("#charts .js-only").forEach(function (el) { el.hidden = keys.length === 0; });
  }

  function toSingle(key, point) {
    singles[key] = point;
    keys = keys.filter(function (k) { return k !== key; });
    delete series[key];
    const chart = charts[key];
    if (chart) {
      observer.unobserve(chart.div);
      const grid = chart.div.parentElement;
      chart.div.remove();
      delete charts[key];
      // A section left without charts goes too (the headline grid stays: it is the page's).
      const box = grid.closest(".metric-section");
      if (box && !grid.children.length) box.remove();
    }
  }

  function unsingle(key) {
    delete singles[key];
    keys = keys.concat([key]);
    buildLayout();
  }

  // A single's second point came: it becomes a chart, read whole from the API.
  function toChart(key) {
    unsingle(key);
    showSingles();
    return fetchSeries([key]).then(redraw);
  }

  // --- drawing ----------------------------------------------------------------------------------

  function unit() {
    let max = 0;
    Object.keys(series).forEach(function (key) {
      if (isSft(key)) return;
      const xs = series[key].x;
      if (xs.length && xs[xs.length - 1] > max) max = xs[xs.length - 1];
    });
    return C.timeUnit(max);
  }

  function drawChart(key) {
    const chart = charts[key];
    const data = series[key];
    if (!chart || !data) return Promise.resolve();
    chart.dirty = false;
    const u = unit();
    const xMode = xModeOf(key);
    const traces = C.seriesTraces(data, { color: C.seriesColor(0), smooth: state.smooth, xMode: xMode, unit: u });
    const xTitle = isSft(key) ? "SFT step" : xMode === "time" ? u.label : "step";
    // One line a chart: the point under the pointer's column is the one hovered and clicked, however
    // far above or below the line the pointer is.
    const layout = C.layout(key, xTitle, { hovermode: "x" });
    return C.draw(chart.div, traces, layout).then(function (gd) {
      timings.chartsDrawn += 1;
      if (!chart.drawn) {
        chart.drawn = true;
        // The SFT's steps have no rollouts: their points only show their values.
        if (!isSft(key)) {
          gd.on("plotly_click", function (event) {
            const point = event.points && event.points[0];
            if (point && point.customdata) location.href = page.rolloutsUrl + "?step=" + point.customdata[0];
          });
        }
      }
    });
  }

  function markAllDirty() {
    Object.keys(charts).forEach(function (key) { charts[key].dirty = true; });
  }

  // Draw what is on screen (and the headline charts); the rest waits until scrolled to.
  function drawDirty() {
    const jobs = [];
    Object.keys(charts).forEach(function (key) {
      const chart = charts[key];
      if (chart.dirty && series[key] && (chart.visible || page.headline.indexOf(key) >= 0)) jobs.push(drawChart(key));
    });
    return Promise.all(jobs);
  }

  const redraw = TirlabLive.batch(drawDirty, 250); // at most 4 redraws a second

  // --- data -------------------------------------------------------------------------------------

  async function fetchSeries(wanted) {
    // The SFT's keys by step, the others on the page's x axis: one request each.
    await Promise.all([
      fetchSeriesOn("step", wanted.filter(isSft)),
      fetchSeriesOn(state.x, wanted.filter(function (key) { return !isSft(key); })),
    ]);
  }

  async function fetchSeriesOn(mode, wanted) {
    if (!wanted.length) return;
    const asked = state.x;
    const url = page.metricsUrl + "?x=" + mode + "&max_points=" + MAX_POINTS +
      "&keys=" + wanted.map(encodeURIComponent).join(",");
    const body = await C.fetchJson(url);
    if (asked !== state.x) return; // the x axis changed while this was in flight
    takeSeries(body);
  }

  function takeSeries(body) {
    let moved = false;
    Object.keys(body.series).forEach(function (key) {
      const s = body.series[key];
      if (isSingle(s) && !isSft(key)) {
        toSingle(key, { step: s.step[0], value: s.last[0] });
        moved = true;
        return;
      }
      if (key in singles) { // it has more points than when it was listed
        unsingle(key);
        moved = true;
      }
      series[key] = withLaterSteps(s, series[key]);
      if (charts[key]) charts[key].dirty = true;
    });
    if (moved) showSingles();
  }

  // An answer read before the socket's last events must not take their points away: the steps the
  // page holds after the answer's last one (appended while the request was under way) stay.
  const FIELDS = ["x", "step", "min", "max", "last", "count"];
  function withLaterSteps(fetched, held) {
    const n = fetched.step.length;
    if (!held || !held.step.length) return fetched;
    if (!n) return held;
    const lastFetched = fetched.step[n - 1];
    held.step.forEach(function (step, i) {
      if (step > lastFetched) FIELDS.forEach(function (f) { fetched[f].push(held[f][i]); });
    });
    return fetched;
  }

  async function loadAll() {
    const groups = C.groupKeys(keys, page.headline);
    const prefetch = window.tirlabRunPrefetch;
    if (prefetch && prefetch.x === state.x && prefetch.keys.join() === groups.headline.join()) {
      const body = await prefetch.response;
      if (prefetch.x === state.x) takeSeries(body); // unless the x axis changed meanwhile
    } else {
      await fetchSeries(groups.headline);
    }
    await drawDirty();
    if (timings.headlineRenderedMs === null) {
      timings.headlineRenderedMs = performance.now();
      document.dispatchEvent(new CustomEvent("tirlab:headline-rendered"));
    }
    const rest = keys.filter(function (key) { return groups.headline.indexOf(key) < 0; });
    // One request: the server reads all keys of a run in one pass over its rows.
    await fetchSeries(rest);
    await drawDirty();
    timings.allLoadedMs = performance.now();
    document.dispatchEvent(new CustomEvent("tirlab:charts-loaded"));
  }

  function addKeys(newKeys) {
    const fresh = newKeys.filter(function (key) { return keys.indexOf(key) < 0 && !(key in singles); });
    if (!fresh.length) return;
    keys = keys.concat(fresh);
    buildLayout();
    fetchSeries(fresh).then(redraw);
  }

  // One websocket "metrics" event: each new step becomes an exact point after the buckets.
  function appendSteps(steps) {
    const fresh = {}; // a key new to the page -> its points in this event
    const charted = [];
    steps.forEach(function (row) {
      // The SFT's steps come before the RL steps and count apart: they move neither the last step
      // nor the time axis' 0.
      if (Object.keys(row.values).some(function (key) { return !isSft(key); })) {
        if (firstStepTime === null) firstStepTime = row.time;
        if (lastStep === null || row.step > lastStep) lastStep = row.step;
      }
      Object.keys(row.values).forEach(function (key) {
        const value = row.values[key];
        if (typeof value !== "number") return;
        if (key in singles) {
          if (row.step === singles[key].step) singles[key].value = value; // a re-sent step
          else if (charted.indexOf(key) < 0) charted.push(key);
          return;
        }
        if (keys.indexOf(key) < 0) { (fresh[key] = fresh[key] || []).push({ step: row.step, value: value }); return; }
        const s = series[key];
        if (!s) return;
        const n = s.step.length;
        const x = xModeOf(key) === "time" ? row.time - firstStepTime : row.step;
        if (n && row.step === s.step[n - 1] && s.count[n - 1] === 1) {
          s.min[n - 1] = s.max[n - 1] = s.last[n - 1] = value; // a re-sent step
        } else if (!n || row.step > s.step[n - 1]) {
          s.x.push(x); s.step.push(row.step); s.min.push(value); s.max.push(value); s.last.push(value); s.count.push(1);
        } else {
          return;
        }
        charts[key].dirty = true;
      });
    });
    setText("run-last-step", lastStep === null ? "—" : String(lastStep));
    showPhase();
    // A new key with one point in this event is a single until a second one comes (and the API,
    // which may know points the socket missed, confirms it); the others get charts.
    const many = [];
    Object.keys(fresh).forEach(function (key) {
      if (fresh[key].length === 1 && !isSft(key)) singles[key] = fresh[key][0];
      else many.push(key);
    });
    showSingles();
    charted.forEach(toChart);
    addKeys(many);
    const lone = Object.keys(fresh).filter(function (key) { return key in singles; });
    fetchSeries(lone).then(redraw);
    redraw();
  }

  // --- the trainer's phase ----------------------------------------------------------------------

  // Before the first metric the phase line says what the trainer is doing (loading the model, the
  // SFT cold start) and how far it has got; once metrics arrive the steps beside "Last step" do.
  const phaseLabels = { loading: "Loading the model…", sft: "Cold start (SFT)", rl: "Training (RL)", eval: "Evaluating…" };
  let phase = JSON.parse(document.getElementById("run-phase-data").textContent);

  function count(n) {
    return Number(n).toLocaleString("en-US");
  }

  function timeLeft(seconds) {
    if (seconds === null || seconds === undefined) return "";
    if (seconds < 10) return "a few seconds left";
    if (seconds < 60) return "about " + Math.round(seconds / 5) * 5 + " s left";
    if (seconds < 3600) return "about " + Math.round(seconds / 60) + " min left";
    const minutes = Math.round(seconds / 60);
    return "about " + Math.floor(minutes / 60) + " h " + String(minutes % 60).padStart(2, "0") + " min left";
  }

  // A newer phase replaces the one shown; a poll answered after a websocket event may bring an older one.
  function takePhase(next) {
    if (next && (!phase || next.at >= phase.at)) phase = next;
  }

  function showPhase() {
    const active = page.activeStatuses.indexOf(runStatus) >= 0;
    const box = document.getElementById("run-phase");
    box.hidden = !(active && phase && (phase.name !== "rl" || lastStep === null));
    const eta = phase ? timeLeft(phase.eta_s) : "";
    let steps = "";
    if (active && phase && phase.name === "rl" && lastStep !== null) {
      steps = "· " + count(phase.done) + " of " + count(phase.total) + " steps done" + (eta ? " · " + eta : "");
    }
    setText("run-step-progress", steps);
    if (box.hidden) return;
    setText("phase-label", phaseLabels[phase.name] || phase.name);
    const bar = document.getElementById("phase-progress");
    if (phase.name === "loading" || (phase.name === "eval" && phase.done < phase.total)) {
      // Indeterminate: loading has no steps to count, and an evaluation is one pass over its prompts (the
      // detail says how many).
      setText("phase-text", "");
      bar.removeAttribute("value");
    } else if (phase.name === "eval") {
      setText("phase-text", "· done");
      bar.max = phase.total;
      bar.value = phase.done;
    } else {
      setText("phase-text", "· step " + count(phase.done) + " of " + count(phase.total) + (eta ? " · " + eta : ""));
      bar.max = phase.total;
      bar.value = phase.done;
    }
    setText("phase-detail", phase.detail || "");
  }

  // --- status and logs --------------------------------------------------------------------------

  function setText(id, text) {
    const el = document.getElementById(id);
    if (el) el.textContent = text;
  }

  function when(iso) {
    return iso ? iso.replace("T", " ").slice(0, 19) : "—";
  }

  // The run's timings as last heard (ISO strings or null): status events, heartbeats, polls and the
  // snapshot update them; Duration counts on from started_at by the server's clock while it runs.
  const timing = Object.assign({}, page.timings);
  // The server's clock minus the browser's: page.now is the server's time as it answered, which is
  // when the answer's first byte came (not when this script runs, after the page has loaded).
  const navigation = performance.getEntriesByType("navigation")[0];
  const answeredAt = navigation ? performance.timeOrigin + navigation.responseStart : Date.now();
  const clockOffsetMs = Date.parse(page.now) - answeredAt;

  // The same format as the server's (run_views._duration).
  function duration() {
    if (!timing.started_at) return timing.finished_at ? "never started" : "not started yet";
    const end = timing.finished_at ? Date.parse(timing.finished_at) : Date.now() + clockOffsetMs;
    const total = Math.max(0, Math.floor((end - Date.parse(timing.started_at)) / 1000));
    const h = Math.floor(total / 3600), m = Math.floor((total % 3600) / 60), s = String(total % 60).padStart(2, "0");
    return h ? h + " h " + String(m).padStart(2, "0") + " min " + s + " s" : m + " min " + s + " s";
  }

  function showDuration() {
    setText("run-duration", duration());
  }

  setInterval(function () { if (timing.started_at && !timing.finished_at) showDuration(); }, 1000);

  function showStatus(run) {
    if (run.status) {
      runStatus = run.status;
      const active = page.activeStatuses.indexOf(run.status) >= 0;
      showLiveState();
      showPhase();
      const badge = document.getElementById("run-status");
      // Asked to cancel: "cancelling…" until the run's status says it has ended.
      if (!(cancelling && active)) {
        badge.textContent = run.status;
        badge.className = "status " + run.status;
      }
      // A status only moves forward, so a new one means the run has left the queue (if it was in it).
      if (run.status !== page.status) { const q = document.getElementById("queue-position"); if (q) q.remove(); }
      if (!active) {
        const cancel = document.getElementById("cancel-confirm");
        if (cancel) cancel.remove();
        cancelling = false;
      }
    }
    ["started_at", "finished_at", "heartbeat_at"].forEach(function (name) {
      if (name in run) timing[name] = run[name];
    });
    setText("run-started", when(timing.started_at));
    setText("run-finished", when(timing.finished_at));
    setText("run-heartbeat", when(timing.heartbeat_at));
    showDuration();
    if (run.error) {
      setText("run-error-text", run.error);
      document.getElementById("run-error").hidden = false;
    }
  }

  // --- cancel -----------------------------------------------------------------------------------

  // "Cancel run…" opens a question in the page (a <details>, so it works without JavaScript too: the
  // form then posts and the page reloads). Here the answer is posted in the background: the page
  // says "cancelling…" at once and shows the run's status when it comes, without reloading.
  const cancelBox = document.getElementById("cancel-confirm");

  function note(text, kind) {
    let line = document.getElementById("run-note");
    if (!line) {
      line = document.createElement("p");
      line.id = "run-note";
      line.setAttribute("role", "status");
      document.querySelector(".run-head").after(line);
    }
    line.className = "message " + kind;
    line.textContent = text;
  }

  function showCancelling(on) {
    cancelling = on;
    const yes = document.getElementById("cancel-yes");
    yes.disabled = on;
    yes.textContent = on ? "Cancelling…" : "Yes, cancel the run";
    document.getElementById("cancel-no").hidden = on;
    setText("cancel-progress", on ? "Asking to cancel; the status shows here when the run has stopped." : "");
    const badge = document.getElementById("run-status");
    badge.textContent = on ? "cancelling…" : runStatus;
    badge.className = "status " + (on ? "cancelling" : runStatus);
  }

  if (cancelBox) {
    const form = document.getElementById("cancel-form");
    document.getElementById("cancel-no").addEventListener("click", function (event) {
      event.preventDefault();
      cancelBox.open = false;
    });
    form.addEventListener("submit", async function (event) {
      event.preventDefault();
      if (cancelling) return;
      showCancelling(true);
      try {
        const response = await fetch(form.action, {
          method: "POST", body: new FormData(form), credentials: "same-origin", headers: { Accept: "application/json" },
        });
        const type = response.headers.get("Content-Type") || "";
        if (type.indexOf("application/json") < 0) throw new Error("HTTP " + response.status);
        const run = await response.json();
        if (response.ok) {
          showStatus(run);
          note(run.message, "success");
        } else {
          showCancelling(false);
          showStatus(run); // it had ended meanwhile: its status says how
          note(run.message, "error");
        }
      } catch (err) {
        showCancelling(false);
        note("The run could not be cancelled: " + err.message + ". Try again.", "error");
      }
    });
  }

  const logList = document.getElementById("log-lines");
  const seenLines = new Set();
  let lastLogId = page.lastLogId;

  function lineKey(line) {
    return Date.parse(line.time) + "|" + line.source + "|" + line.message;
  }

  logList.querySelectorAll("li[data-time]").forEach(function (li) {
    seenLines.add(Date.parse(li.dataset.time) + "|" + li.dataset.source + "|" + li.querySelector(".log-message").textContent);
  });
  // Open on the newest lines (a log is read from its tail); appendLines then keeps following them.
  logList.scrollTop = logList.scrollHeight;

  function appendLines(lines) {
    lines.forEach(function (line) {
      if (line.id && line.id > lastLogId) lastLogId = line.id;
      const key = lineKey(line);
      if (seenLines.has(key)) return;
      seenLines.add(key);
      const empty = logList.querySelector(".log-empty");
      if (empty) empty.remove();
      const li = document.createElement("li");
      li.className = "log-" + line.level;
      const time = document.createElement("time");
      time.textContent = new Date(line.time).toISOString().slice(11, 19);
      const source = document.createElement("span");
      source.className = "log-source";
      source.textContent = line.source;
      const message = document.createElement("span");
      message.className = "log-message";
      message.textContent = line.message;
      li.append(time, " ", source, " ", message);
      const atBottom = logList.scrollTop + logList.clientHeight >= logList.scrollHeight - 4;
      logList.appendChild(li);
      if (atBottom) logList.scrollTop = logList.scrollHeight;
    });
  }

  async function pollLogs() {
    const body = await C.fetchJson(page.logsUrl + "?after=" + lastLogId + "&page_size=500");
    appendLines(body.results);
  }

  // --- live -------------------------------------------------------------------------------------

  async function poll() {
    const run = await C.fetchJson(page.runUrl);
    timings.polls += 1;
    takePhase(run.phase);
    showStatus(run);
    addKeys(run.metric_keys || []);
    // While the cold start runs, its metrics grow but the last step does not: re-read them as it goes.
    const sftDone = run.phase && run.phase.name === "sft" ? run.phase.done : null;
    if (sftDone !== null && sftDone !== lastSftDone) {
      lastSftDone = sftDone;
      await fetchSeries(keys.filter(isSft));
      redraw();
    }
    // Only forward: the websocket may have brought later steps while this request was under way.
    if (run.last_step !== null && (lastStep === null || run.last_step > lastStep)) {
      lastStep = run.last_step;
      setText("run-last-step", String(lastStep));
      showPhase();
      // Re-read what is on screen; charts further down re-read when scrolled to.
      const onScreen = keys.filter(function (key) {
        const chart = charts[key];
        if (!chart || chart.visible || page.headline.indexOf(key) >= 0) return true;
        chart.stale = true;
        return false;
      });
      // The singles too: one may have got its second point while the socket was down.
      await fetchSeries(onScreen.concat(Object.keys(singles)));
      redraw();
    }
    await pollLogs();
  }

  function onEvent(event) {
    if (event.event === "metrics") appendSteps(event.data.steps || []);
    else if (event.event === "status" || event.event === "heartbeat") showStatus(event.data);
    else if (event.event === "logs") appendLines(event.data.lines || []);
    else if (event.event === "phase") { takePhase(event.data); showPhase(); }
    else if (event.event === "snapshot") {
      takePhase(event.data.phase);
      showStatus(event.data);
      // Steps reported while the socket was down (RL's, or the cold start's): read them from the API.
      const sft = event.data.phase && event.data.phase.name === "sft";
      if (sft || (event.data.last_step !== null && (lastStep === null || event.data.last_step > lastStep))) poll();
    }
  }

  const liveLabels = { live: "live", polling: "live (polling)", paused: "paused while the tab is hidden" };
  let socketState = "";

  // A finished run sends nothing more: its page is not "live", whatever the socket does.
  function showLiveState() {
    const finished = page.activeStatuses.indexOf(runStatus) < 0;
    setText("live-state", finished ? "" : liveLabels[socketState] || socketState);
  }

  // --- controls ---------------------------------------------------------------------------------

  const smooth = document.getElementById("smooth");
  const smoothValue = document.getElementById("smooth-value");
  const xAxis = document.getElementById("x-axis");
  smooth.value = state.smooth;
  smoothValue.textContent = state.smooth.toFixed(2);
  xAxis.value = state.x;

  smooth.addEventListener("input", function () {
    state.smooth = parseFloat(smooth.value);
    smoothValue.textContent = state.smooth.toFixed(2);
    C.replaceQuery({ smooth: state.smooth || null });
    markAllDirty();
    redraw();
  });
  xAxis.addEventListener("change", function () {
    state.x = xAxis.value;
    C.replaceQuery({ x: state.x === "step" ? null : state.x });
    series = {};
    markAllDirty();
    fetchSeries(keys).then(drawDirty);
  });
  C.onThemeChange(function () { markAllDirty(); drawDirty(); });

  // The page's figures (render times, draws) and its event handler, for benchmarks and tests.
  timings.handleEvent = onEvent;
  showPhase();
  buildLayout();
  showSingles();
  loadAll().catch(function (err) { setText("live-state", "could not load metrics: " + err.message); });
  TirlabLive.connect(page.wsPath, {
    onEvent: onEvent,
    poll: poll,
    pollMs: 3000,
    onState: function (s) { socketState = s; showLiveState(); },
  });
})();
