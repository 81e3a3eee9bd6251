// Light or dark theme, remembered per browser. Loaded in <head> so the page never flashes the wrong one.
(function () {
  const KEY = "tirlab-theme";
  const root = document.documentElement;
  const saved = localStorage.getItem(KEY);
  const initial = saved || (window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
  root.dataset.theme = initial;
  document.addEventListener("DOMContentLoaded", function () {
    const button = document.getElementById("theme-toggle");
    if (!button) return;
    const label = () => { button.textContent = root.dataset.theme === "dark" ? "Light theme" : "Dark theme"; };
    label();
    button.hidden = false;
    button.addEventListener("click", function () {
      root.dataset.theme = root.dataset.theme === "dark" ? "light" : "dark";
      localStorage.setItem(KEY, root.dataset.theme);
      label();
      document.dispatchEvent(new CustomEvent("tirlab:theme", { detail: root.dataset.theme }));
    });
  });
})();
