// The results page. Its controls write the URL: a change loads the form's query without the empty fields and
// those the row choice does not use (without JavaScript, the Show button sends the whole form, which reads the
// same). The step shows only for "At step", "best on" only for "Best step". A copy button copies its export's
// text; where the clipboard is refused it selects the text, for Ctrl+C.
(function () {
  const form = document.getElementById("results-form");
  if (!form) return;
  const at = function () {
    const checked = form.querySelector('input[name="at"]:checked');
    return checked ? checked.value : "last";
  };

  function showUsed() {
    form.querySelector(".results-step").hidden = at() !== "step";
    form.querySelector(".results-best-on").hidden = at() !== "best";
  }

  function load() {
    const parts = [];
    for (const [name, raw] of new FormData(form)) {
      const value = String(raw).trim();
      const unused = (name === "step" && at() !== "step") || (name === "best_on" && at() !== "best") ||
        (name === "at" && value === "last");
      if (value && !unused) parts.push(name + "=" + encodeURIComponent(value).replace(/%2C/g, ","));
    }
    location.assign(form.action + (parts.length ? "?" + parts.join("&") : ""));
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    load();
  });
  form.addEventListener("change", function (event) {
    const target = event.target;
    // Runs or an experiment: choosing one clears the other.
    if (target.name === "experiment" && target.value) form.elements.runs.value = "";
    if (target.name === "runs" && target.value.trim()) form.elements.experiment.value = "";
    showUsed();
    if (target.name === "at" && at() === "step" && !form.elements.step.value) {
      form.elements.step.focus(); // the step comes next; its change loads the page
      return;
    }
    load();
  });
  showUsed();

  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    button.addEventListener("click", async function () {
      const text = document.getElementById(button.dataset.copy);
      const state = button.parentElement.querySelector(".copy-state");
      let copied = false;
      try {
        await navigator.clipboard.writeText(text.textContent);
        copied = true;
      } catch (err) {
        const range = document.createRange();
        range.selectNodeContents(text);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
      }
      state.textContent = copied ? "Copied" : "Selected: press Ctrl+C to copy";
      clearTimeout(button.copyTimer);
      button.copyTimer = setTimeout(function () { state.textContent = ""; }, 3000);
    });
  });
})();
