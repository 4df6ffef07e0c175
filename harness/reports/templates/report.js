// Filters of the case list: outcome buttons (several may be on), a matrix cell, and a name search.
"use strict";
(() => {
  const cases = Array.from(document.querySelectorAll("details.case"));
  const outcomeButtons = Array.from(document.querySelectorAll("[data-filter-outcome]"));
  const cellButtons = Array.from(document.querySelectorAll("button.cell"));
  const search = document.getElementById("search");
  const shown = document.getElementById("shown");
  const pill = document.getElementById("cell-filter");
  const outcomes = new Set();
  let cell = null; // {framing, family} chosen in the matrix

  function visible(item) {
    const d = item.dataset;
    const query = search.value.trim().toLowerCase();
    return (outcomes.size === 0 || outcomes.has(d.outcome))
      && (query === "" || d.name.includes(query))
      && (cell === null || (d.framing === cell.framing && d.family === cell.family));
  }

  function apply() {
    let count = 0;
    for (const item of cases) {
      item.hidden = !visible(item);
      if (!item.hidden) count += 1;
    }
    shown.textContent = `${count} of ${cases.length} cases shown`;
    for (const button of outcomeButtons) {
      button.setAttribute("aria-pressed", String(outcomes.has(button.dataset.filterOutcome)));
    }
    for (const button of cellButtons) {
      const on = cell !== null && button.dataset.framing === cell.framing
        && button.dataset.family === cell.family;
      button.classList.toggle("active", on);
    }
    pill.hidden = cell === null;
    pill.textContent = cell === null ? "" : `${cell.framing} × ${cell.family}`;
  }

  function clear() {
    outcomes.clear();
    cell = null;
    search.value = "";
    apply();
  }

  for (const button of outcomeButtons) {
    button.addEventListener("click", () => {
      const outcome = button.dataset.filterOutcome;
      if (outcomes.has(outcome)) outcomes.delete(outcome); else outcomes.add(outcome);
      apply();
    });
  }
  for (const button of cellButtons) {
    button.addEventListener("click", () => {
      const same = cell !== null && cell.framing === button.dataset.framing
        && cell.family === button.dataset.family;
      cell = same ? null : {framing: button.dataset.framing, family: button.dataset.family};
      apply();
    });
  }
  search.addEventListener("input", apply);
  document.getElementById("clear").addEventListener("click", clear);

  // A link to a case (from a sweep strip) opens it, clearing filters that would hide it.
  function openTarget() {
    const target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    if (target === null || !target.matches("details.case")) return;
    if (target.hidden) clear();
    target.open = true;
    target.scrollIntoView({block: "start"});
  }
  window.addEventListener("hashchange", openTarget);
  apply();
  openTarget();
})();
