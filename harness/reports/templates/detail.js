// The data files beside the page (details/*.js, written by harness/reports/details.py) and a
// case's details built from them with DOM calls: every text goes in through textContent.
"use strict";
const Details = (() => {
  const own = document.currentScript;
  const nonce = own.nonce || own.getAttribute("nonce"); // browsers hide the attribute, not .nonce
  const SVG = "http://www.w3.org/2000/svg";
  const loads = new Map();

  // Each file assigns a base64 string of zlib-compressed JSON to window.tearlineData[name].
  async function inflate(packed) {
    const bytes = Uint8Array.from(atob(packed), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return JSON.parse(await new Response(stream).text());
  }

  function fetchScript(name, resolve, reject) {
    const script = document.createElement("script");
    // Firefox treats a file: page as an opaque origin, where 'self' matches nothing: the
    // nonce lets the page's own data files in (the attribute, which every browser reads).
    script.setAttribute("nonce", nonce);
    script.src = `details/${name}.js`;
    script.onload = () => {
      const store = window.tearlineData || {};
      const packed = store[name];
      delete store[name];
      script.remove();
      if (typeof packed === "string") resolve(inflate(packed));
      else reject(new Error(`details/${name}.js holds no data`));
    };
    script.onerror = () => {
      script.remove();
      reject(new Error(`details/${name}.js could not be loaded`));
    };
    document.head.append(script);
  }

  function load(name) {
    if (!loads.has(name)) {
      loads.set(name, new Promise((resolve, reject) => fetchScript(name, resolve, reject)));
    }
    return loads.get(name);
  }

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function svgEl(tag, attrs, title) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attrs)) {
      if (value !== "") node.setAttribute(name, String(value));
    }
    if (title) node.append(svgText("title", title));
    return node;
  }

  function svgText(tag, text, attrs = {}) {
    const node = svgEl(tag, attrs);
    node.textContent = text;
    return node;
  }

  // The shapes of harness/reports/shapes.py: r(ect), t(ext), p(ath), l(ine), g(roup).
  function shape(item) {
    const [kind, a, b, c, d, e, f] = item;
    switch (kind) {
      case "r": return svgEl("rect", {class: a, x: b, y: c, width: d, height: e}, f);
      case "t": return svgText("text", d, {x: b, y: c, "text-anchor": e, class: a});
      case "p": return svgEl("path", {class: a, d: b});
      case "l": return svgEl("line", {x1: a, y1: b, x2: c, y2: d});
      case "g": {
        const group = svgEl("g", {class: a});
        for (const child of c) group.append(shape(child));
        if (b) group.append(svgText("title", b));
        return group;
      }
      default: throw new Error(`unknown shape ${kind}`);
    }
  }

  function drawing(d) {
    const viewBox = `0 0 ${d.w} ${d.h}`;
    const attrs = {class: d.cls, viewBox, width: d.w, height: d.h, role: "img"};
    const svg = svgEl("svg", {...attrs, "aria-label": d.label});
    for (const item of d.items) svg.append(shape(item));
    return svg;
  }

  function row(cells, cls, head = 0) {
    const tr = el("tr", cls);
    cells.forEach((cell, i) => tr.append(el(i < head ? "th" : "td", "", cell)));
    return tr;
  }

  function facts(record) {
    const table = el("table", "facts");
    for (const [label, value, cls] of record.facts) {
      const tr = row([label], "", 1);
      tr.append(el("td", cls, value));
      table.append(tr);
    }
    if (record.pcap && record.pcap.startsWith("pcaps/")) {
      const link = el("a", "", record.pcap);
      link.href = record.pcap;
      const tr = row(["pcap"], "", 1);
      tr.appendChild(el("td")).append(link);
      table.append(tr);
    }
    return table;
  }

  function checks(record, diagnosis) {
    const table = el("table", "checks");
    table.appendChild(el("thead")).append(row(["check", "", "evidence"], "", 3));
    for (const [cls, name, mark, evidence] of record.checks) {
      table.append(row([name, mark, evidence], cls, 1));
    }
    if (record.checks.length === 0) {
      const cell = table.appendChild(row([], "na")).appendChild(el("td", "", `not judged: ${diagnosis}`));
      cell.colSpan = 3;
    }
    return table;
  }

  function faults(record) {
    const table = el("table", "faults");
    const head = ["t (ms)", "conn", "direction", "fault", "at byte", "detail"];
    table.appendChild(el("thead")).append(row(head, "", head.length));
    for (const cells of record.faults) table.append(row(cells, ""));
    if (record.faults_more) {
      const more = `… and ${record.faults_more} more (results.json lists every one)`;
      table.appendChild(row([], "")).appendChild(el("td", "muted", more)).colSpan = 6;
    }
    return table;
  }

  // The body of case `index`: {diagnosis, file, line} come from the case index.
  async function body(index, chunkSize, entry) {
    const chunk = await load(String(Math.floor(index / chunkSize)).padStart(4, "0"));
    const record = chunk.cases[index - chunk.first];
    const source = chunk.sources[String(entry.scenario)] || "(source not available)";
    const grid = el("div", "grid");
    grid.append(facts(record), checks(record, entry.diagnosis));
    const picture = el("div", "drawing");
    picture.append(drawing(record.drawing));
    const where = el("div", "source");
    where.append(el("div", "where", `${entry.file}:${entry.line}`), el("pre", "", source));
    const parts = [el("p", "glance", record.glance), grid, picture];
    if (record.faults.length) parts.push(faults(record));
    parts.push(where);
    return parts;
  }

  return {load, body, el};
})();
