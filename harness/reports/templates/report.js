// The case list: a search over the case ids, filters (outcomes, a matrix cell, a scenario), a
// bounded page of rows drawn from the case index, details opened on demand; the sweep strips;
// links to #case-N. Nothing here walks more than one page of rows in the document.
"use strict";
(() => {
  const PAGE = 200;
  const $ = (id) => document.getElementById(id);
  const [search, shown, rows, pill] = [$("search"), $("shown"), $("rows"), $("filter-pill")];
  const outcomeButtons = Array.from(document.querySelectorAll("[data-filter-outcome]"));
  const cellButtons = Array.from(document.querySelectorAll("button.cell"));
  const state = {outcomes: new Set(), cell: null, scenario: null, query: "", start: 0};
  const opened = new Set();
  const number = (n) => n.toLocaleString("en-US");
  let index = null;
  let lower = [];
  let members = [];
  let matches = [];

  function keep(i) {
    if (state.outcomes.size && !state.outcomes.has(index.outcomes[index.outcome[i]])) return false;
    const cell = state.cell;
    if (cell && (index.framing[i] !== cell.framing || index.family[i] !== cell.family)) return false;
    if (state.scenario !== null && index.scenario[i] !== state.scenario) return false;
    return state.query === "" || lower[i].includes(state.query);
  }

  function entry(i) {
    const [name, file, line] = index.scenarios[index.scenario[i]];
    return {name, file, line, scenario: index.scenario[i], diagnosis: index.diagnosis[i]};
  }

  async function expand(i, item) {
    const body = item.querySelector(".body");
    item.querySelector(".summary").setAttribute("aria-expanded", "true");
    body.hidden = false;
    body.replaceChildren(Details.el("p", "muted", "loading…"));
    try {
      body.replaceChildren(...await Details.body(i, index.chunk, entry(i)));
      item.dataset.loaded = "true";
      performance.mark(`tearline:detail:${i}`);
    } catch (error) {
      body.replaceChildren(Details.el("p", "ko", String(error.message || error)));
      console.error(error);
    }
  }

  function toggle(i, item) {
    if (opened.has(i)) {
      opened.delete(i);
      item.querySelector(".summary").setAttribute("aria-expanded", "false");
      item.querySelector(".body").hidden = true;
    } else {
      opened.add(i);
      expand(i, item);
    }
  }

  function row(i) {
    const outcome = index.outcomes[index.outcome[i]];
    const item = Details.el("div", "case");
    item.id = `case-${i}`;
    item.dataset.outcome = outcome;
    const summary = Details.el("button", "summary");
    summary.type = "button";
    summary.setAttribute("aria-expanded", "false");
    summary.append(Details.el("span", `badge o-${outcome}`, outcome), " ",
      Details.el("span", "name", index.id[i]), " ", Details.el("span", "diag", index.diagnosis[i]));
    summary.addEventListener("click", () => toggle(i, item));
    const body = Details.el("div", "body");
    body.hidden = true;
    item.append(summary, body);
    if (opened.has(i)) expand(i, item);
    return item;
  }

  function render() {
    const end = Math.min(state.start + PAGE, matches.length);
    rows.replaceChildren(...matches.slice(state.start, end).map(row));
    const listed = matches.length > PAGE ? ` · ${number(state.start + 1)}–${number(end)} listed` : "";
    shown.textContent = `${number(matches.length)} of ${number(index.id.length)} cases match${listed}`;
    $("prev").disabled = state.start === 0;
    $("next").disabled = end >= matches.length;
  }

  function controls() {
    for (const button of outcomeButtons) {
      button.setAttribute("aria-pressed", String(state.outcomes.has(button.dataset.filterOutcome)));
    }
    for (const button of cellButtons) {
      button.classList.toggle("active", state.cell !== null && state.cell.button === button);
    }
    const words = [];
    if (state.cell) words.push(`${state.cell.button.dataset.framing} × ${state.cell.button.dataset.family}`);
    if (state.scenario !== null) words.push(`scenario ${index.scenarios[state.scenario][0]}`);
    pill.hidden = words.length === 0;
    pill.textContent = words.join(" · ");
  }

  function update(scroll = false) {
    state.query = search.value.trim().toLowerCase();
    matches = [];
    for (let i = 0; i < index.id.length; i += 1) if (keep(i)) matches.push(i);
    state.start = 0;
    render();
    controls();
    if (scroll) $("cases").scrollIntoView({block: "start"});
  }

  function clear() {
    state.outcomes.clear();
    state.cell = null;
    state.scenario = null;
    search.value = "";
    update();
  }

  function openCase(i) {
    if (!(i >= 0 && i < index.id.length)) return;
    if (!keep(i)) clear();
    state.start = Math.floor(matches.indexOf(i) / PAGE) * PAGE;
    opened.add(i);
    render();
    $(`case-${i}`).scrollIntoView({block: "start"});
  }

  function openHash() {
    const match = /^#case-(\d+)$/.exec(location.hash);
    if (match) openCase(Number(match[1]));
  }

  function go(i) {
    const hash = `#case-${i}`;
    if (location.hash === hash) openCase(i); else location.hash = hash;
  }

  // A strip's column under the pointer, and its case.
  function stripCase(svg, event) {
    const box = svg.getBoundingClientRect();
    const x = (event.clientX - box.left) * (svg.viewBox.baseVal.width / box.width);
    const cases = members[Number(svg.dataset.scenario)];
    return cases[Math.floor(x / Number(svg.dataset.column))];
  }

  function strips() {
    for (const svg of document.querySelectorAll("svg.strip")) {
      const hover = svg.closest(".scenario").querySelector(".strip-hover");
      const rest = hover.textContent;
      svg.addEventListener("mousemove", (event) => {
        const i = stripCase(svg, event);
        hover.textContent = i === undefined ? rest
          : `${index.params[i]} → ${index.verdict[i]} (${index.outcomes[index.outcome[i]]})`;
      });
      svg.addEventListener("mouseleave", () => { hover.textContent = rest; });
      svg.addEventListener("click", (event) => {
        const i = stripCase(svg, event);
        if (i !== undefined) go(i);
      });
    }
  }

  function listen() {
    for (const button of outcomeButtons) {
      button.addEventListener("click", () => {
        const outcome = button.dataset.filterOutcome;
        if (!state.outcomes.delete(outcome)) state.outcomes.add(outcome);
        update(true);
      });
    }
    for (const button of cellButtons) {
      button.addEventListener("click", () => {
        const same = state.cell !== null && state.cell.button === button;
        const framing = index.framings.indexOf(button.dataset.framing);
        const family = index.families.indexOf(button.dataset.family);
        state.cell = same ? null : {button, framing, family};
        update(true);
      });
    }
    for (const button of document.querySelectorAll("button[data-scenario]")) {
      button.addEventListener("click", () => {
        const n = Number(button.dataset.scenario);
        state.scenario = state.scenario === n ? null : n;
        update(true);
      });
    }
    search.addEventListener("input", () => update());
    $("clear").addEventListener("click", clear);
    $("prev").addEventListener("click", () => { state.start -= PAGE; render(); });
    $("next").addEventListener("click", () => { state.start += PAGE; render(); });
    window.addEventListener("hashchange", openHash);
  }

  function ready(loaded) {
    index = loaded;
    lower = index.id.map((id) => id.toLowerCase());
    members = index.scenarios.map(() => []);
    index.scenario.forEach((s, i) => members[s].push(i));
    listen();
    strips();
    search.disabled = false;
    update();
    openHash();
    document.documentElement.dataset.ready = "true";
    performance.mark("tearline:ready");
  }

  Details.load("cases").then(ready, (error) => {
    shown.textContent = `${error.message}: the case list needs the details folder beside this page`;
    console.error(error);
  });
})();
