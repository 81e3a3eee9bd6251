// The new-run form: choosing a preset fills every config field with that preset's values (the
// form itself is rendered on the server from the config's JSON schema, and works without this).
(function () {
  const select = document.getElementById("preset-select");
  const form = document.getElementById("run-form");
  const presetInput = document.getElementById("preset-input");
  const description = document.getElementById("preset-description");
  const applyButton = document.getElementById("apply-preset");
  const data = document.getElementById("preset-configs");
  if (!select || !form || !data) return;
  const presets = JSON.parse(data.textContent);
  const PREFIX = "config.";
  // Each preset's default run name ('<preset>-<date>-<time>', free among the user's runs; "" for the defaults).
  const namesData = document.getElementById("preset-run-names");
  const runNames = namesData ? JSON.parse(namesData.textContent) : {};
  const nameInput = document.getElementById("f-name");
  const gpuWarnings = ["preset-gpu-warning", "launch-gpu-warning"]
    .map(function (id) { return document.getElementById(id); })
    .filter(Boolean);

  applyButton.hidden = true; // the select applies at once

  // A GPU preset warns that this machine lacks vLLM and a GPU, unless engine 'verl' trains it on the Ray
  // cluster's GPUs (checked when the run is launched, docs/verl.md).
  const engineSelect = form.elements.namedItem("config.engine");
  function updateGpuWarnings() {
    const option = select.options[select.selectedIndex];
    const needsGpu = Boolean(option && option.dataset.gpu) && !(engineSelect && engineSelect.value === "verl");
    gpuWarnings.forEach(function (warning) { warning.hidden = !needsGpu; });
  }
  if (engineSelect) engineSelect.addEventListener("change", updateGpuWarnings);

  function valueAt(config, path) {
    return path.split(".").reduce(function (node, key) {
      return node && typeof node === "object" ? node[key] : undefined;
    }, config);
  }

  function show(element, value) {
    if (element.type === "checkbox") {
      element.checked = Boolean(value);
    } else if (element.closest(".field.json")) {
      element.value = value === null || value === undefined ? "" : JSON.stringify(value, null, 1);
    } else {
      element.value = value === null || value === undefined ? "" : String(value);
    }
  }

  function fill(config) {
    Array.from(form.elements).forEach(function (element) {
      if (!element.name || !element.name.startsWith(PREFIX)) return;
      const value = valueAt(config, element.name.slice(PREFIX.length));
      if (value !== undefined) show(element, value);
      const field = element.closest(".field");
      if (field) {
        field.classList.remove("invalid");
        field.querySelectorAll(".field-error").forEach(function (error) { error.remove(); });
      }
    });
  }

  select.addEventListener("change", function () {
    const name = select.value;
    const option = select.options[select.selectedIndex];
    description.textContent = option ? option.dataset.description || "" : "";
    presetInput.value = name;
    const config = name ? presets[name] : presets.__defaults__;
    if (config) fill(config);
    // The name follows the preset until the user writes one of their own.
    const defaults = Object.values(runNames);
    if (nameInput && (!nameInput.value.trim() || defaults.indexOf(nameInput.value) >= 0) && runNames[name]) {
      nameInput.value = runNames[name];
      clearError(nameInput);
    }
    updateGpuWarnings();
    const url = new URL(location.href);
    if (name) url.searchParams.set("preset", name); else url.searchParams.delete("preset");
    history.replaceState(null, "", url);
  });

  // A field the browser refuses to submit (an empty name, a number out of range) is marked beside it, in
  // words, not only in the browser's bubble, which is gone at the next click.
  function clearError(element) {
    const field = element.closest(".field");
    if (!field) return;
    field.querySelectorAll(".field-error.client").forEach(function (error) { error.remove(); });
    if (!field.querySelector(".field-error")) field.classList.remove("invalid");
  }

  form.addEventListener("invalid", function (event) {
    const element = event.target;
    const field = element.closest(".field");
    if (!field) return;
    clearError(element);
    const message = document.createElement("small");
    message.className = "field-error client";
    message.setAttribute("role", "alert");
    message.textContent = element === nameInput && element.validity.valueMissing
      ? "Give the run a name."
      : element.validationMessage;
    field.appendChild(message);
    field.classList.add("invalid");
  }, true);

  form.addEventListener("input", function (event) {
    if (event.target.closest && event.target.checkValidity && event.target.checkValidity()) clearError(event.target);
  });

  // Another reward takes other parameters: start it from its own defaults.
  const rewardName = form.elements.namedItem(PREFIX + "reward.name");
  const rewardParams = form.elements.namedItem(PREFIX + "reward.params");
  if (rewardName && rewardParams) {
    rewardName.addEventListener("change", function () { rewardParams.value = "{}"; });
  }

  // A stored reward config replaces the Reward section: grey it out while one is chosen.
  const rewardConfig = document.getElementById("f-reward-config");
  const rewardSection = document.getElementById("section-reward");
  function syncReward() {
    if (rewardSection) rewardSection.disabled = Boolean(rewardConfig.value);
  }
  if (rewardConfig) {
    rewardConfig.addEventListener("change", syncReward);
    syncReward();
  }
})();
