// A <select data-autosubmit> submits its form when changed; without JavaScript its form's button does.
document.querySelectorAll("select[data-autosubmit]").forEach((select) => {
  select.addEventListener("change", () => select.form.submit());
});
