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

  applyButton.hidden = true; // the select applies at once

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
    const url = new URL(location.href);
    if (name) url.searchParams.set("preset", name); else url.searchParams.delete("preset");
    history.replaceState(null, "", url);
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
