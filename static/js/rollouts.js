// The rollouts page (templates/ui/rollouts.html), enhanced: ←/→ change step, the slider moves to a
// step, code is highlighted, "link" copies a deep link, the linked trajectory is opened and scrolled
// to, and a notice offers the newest step while the run is live.
//
// Model output is untrusted: everything here builds DOM nodes with textContent / createTextNode,
// never HTML strings.
(function () {
  const root = document.getElementById("rollouts");
  if (!root) return;

  // ---- step navigation -------------------------------------------------------------------
  function typingIn(target) {
    return target && (target.isContentEditable || /^(INPUT|SELECT|TEXTAREA)$/.test(target.tagName));
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || typingIn(event.target)) return;
    const rel = event.key === "ArrowLeft" ? "prev" : event.key === "ArrowRight" ? "next" : null;
    if (!rel) return;
    const link = root.querySelector('a[rel="' + rel + '"]');
    if (link) {
      event.preventDefault();
      location.href = link.href;
    }
  });

  const form = document.getElementById("rollout-form");
  const range = document.getElementById("step-range");
  const output = document.getElementById("step-value");

  // The URL of the form as it stands, without empty fields.
  function formUrl() {
    const params = new URLSearchParams();
    for (const [name, value] of new FormData(form)) {
      if (value !== "") params.append(name, value);
    }
    return "?" + params.toString();
  }

  if (range) {
    range.addEventListener("input", function () { output.textContent = range.value; });
    range.addEventListener("change", function () {
      const params = new URLSearchParams(formUrl().slice(1));
      params.delete("q");
      params.delete("regex");
      location.href = "?" + params.toString();
    });
  }

  // ---- code highlighting ------------------------------------------------------------------
  const PY_KEYWORDS = new Set(("False None True and as assert async await break class continue def del elif else except " +
    "finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case").split(" "));
  const PY_BUILTINS = new Set(("abs all any bin bool dict divmod enumerate filter float format frozenset int isinstance " +
    "len list map max min next open pow print range repr reversed round set sorted str sum tuple type zip " +
    "math numpy np sympy sp self").split(" "));
  const PY_TOKEN = new RegExp([
    "(#[^\\n]*)", // 1 comment
    "((?:[rRbBuUfF]{1,2})?(?:\"\"\"[\\s\\S]*?(?:\"\"\"|$)|'''[\\s\\S]*?(?:'''|$)|\"(?:\\\\.|[^\"\\\\\\n])*\"?|'(?:\\\\.|[^'\\\\\\n])*'?))", // 2 string
    "(\\b(?:0[xXoObB][0-9a-fA-F_]+|\\d[\\d_]*(?:\\.[\\d_]*)?(?:[eE][+-]?\\d+)?j?)|\\.\\d+(?:[eE][+-]?\\d+)?)", // 3 number
    "([A-Za-z_][A-Za-z0-9_]*)", // 4 name
  ].join("|"), "g");
  const JSON_TOKEN = /("(?:\\.|[^"\\\n])*"?)|(-?\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b)|\b(true|false|null)\b/g;

  function span(cls, text) {
    const node = document.createElement("span");
    node.className = cls;
    node.textContent = text;
    return node;
  }

  function tokenize(text, pattern, classify) {
    const fragment = document.createDocumentFragment();
    let last = 0;
    let previousName = "";
    pattern.lastIndex = 0;
    let match;
    while ((match = pattern.exec(text)) !== null) {
      if (match[0] === "") { pattern.lastIndex++; continue; }
      if (match.index > last) fragment.appendChild(document.createTextNode(text.slice(last, match.index)));
      const cls = classify(match, previousName);
      fragment.appendChild(cls ? span(cls, match[0]) : document.createTextNode(match[0]));
      previousName = match[4] || "";
      last = pattern.lastIndex;
    }
    if (last < text.length) fragment.appendChild(document.createTextNode(text.slice(last)));
    return fragment;
  }

  function classifyPython(match, previousName) {
    if (match[1]) return "hl-comment";
    if (match[2]) return "hl-string";
    if (match[3]) return "hl-number";
    const name = match[4];
    if (previousName === "def" || previousName === "class") return "hl-def";
    if (PY_KEYWORDS.has(name)) return "hl-keyword";
    if (PY_BUILTINS.has(name)) return "hl-builtin";
    return "";
  }

  function classifyJson(match) {
    if (match[1]) return "hl-string";
    if (match[2]) return "hl-number";
    if (match[3]) return "hl-keyword";
    return "";
  }

  for (const code of root.querySelectorAll("code[data-lang]")) {
    const lang = code.dataset.lang;
    if (lang !== "python" && lang !== "json") continue;
    const text = code.textContent;
    code.replaceChildren(lang === "python" ? tokenize(text, PY_TOKEN, classifyPython) : tokenize(text, JSON_TOKEN, classifyJson));
    code.classList.add("highlighted");
  }

  // ---- deep links ---------------------------------------------------------------------------
  // The linked trajectory: the server opened it when the query named it; a bare #t-P-S opens here.
  function openFromHash() {
    const match = /^#(t-\d+-\d+)$/.exec(location.hash);
    const row = match && document.getElementById(match[1]);
    if (row && row.tagName === "DETAILS") row.open = true;
    return row;
  }
  const target = root.querySelector(".trajectory.is-target") || openFromHash();
  if (target) target.scrollIntoView({ block: "start" });
  window.addEventListener("hashchange", function () {
    const row = openFromHash();
    if (row) row.scrollIntoView({ block: "start" });
  });

  root.addEventListener("click", async function (event) {
    const link = event.target.closest("a.copy-link");
    if (!link) return;
    event.preventDefault();
    const url = new URL(link.getAttribute("href"), location.href).href;
    let copied = false;
    try {
      await navigator.clipboard.writeText(url);
      copied = true;
    } catch (err) {
      history.replaceState(null, "", url); // the address bar then holds the link to copy
    }
    link.dataset.url = url;
    const label = link.textContent;
    link.textContent = copied ? "copied" : "link in address bar";
    setTimeout(function () { link.textContent = label; }, 1500);
  });

  // ---- a newer step while the run is live (data-live: its status may still change) --------------
  const shownLast = root.dataset.last === "" ? -1 : Number(root.dataset.last);
  const notice = document.getElementById("live-notice");
  if (window.TirlabLive && root.dataset.live && root.dataset.step === root.dataset.last) {
    let newest = shownLast;
    const offer = function (step) {
      if (!(step > newest)) return;
      newest = step;
      const link = document.createElement("a");
      link.href = "?step=" + step;
      link.textContent = "show step " + step;
      notice.replaceChildren(document.createTextNode("New rollouts arrived: "), link, document.createTextNode(" (or press →)"));
      notice.hidden = false;
      let next = root.querySelector('a[rel="next"]');
      if (!next) {
        next = document.createElement("a");
        next.rel = "next";
        next.hidden = true;
        root.appendChild(next);
      }
      next.href = link.href;
    };
    TirlabLive.connect("/ws/runs/" + root.dataset.run + "/", {
      onEvent(event) {
        if (event.event !== "trajectories" || !event.data || !Array.isArray(event.data.trajectories)) return;
        offer(Math.max.apply(null, event.data.trajectories.map(function (t) { return t.step; })));
      },
      async poll() {
        const response = await fetch(root.dataset.latestUrl, { headers: { Accept: "application/json" } });
        if (response.ok) offer((await response.json()).last_step);
      },
      pollMs: 5000,
    });
  }
})();
