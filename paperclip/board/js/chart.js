// A daily bar chart drawn here as inline SVG (no library, nothing fetched): a title and a
// description for screen readers, each bar named by its day and figures, and the same figures
// as a table below it.

import { h, scrollTable } from "./dom.js";
import { costText, count, money } from "./usage.js";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 1000;
const HEIGHT = 240;
const LEFT = 84;
const BOTTOM = 28;
const TOP = 12;

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) if (value !== undefined && value !== null) el.setAttribute(name, String(value));
  for (const child of children) el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return el;
}

const tokensOf = (t) => (t ? t.input_tokens + t.output_tokens : 0);

/** The chart's metrics: what a bar's height is, and how its axis says it. */
const METRICS = {
  cost: { label: "Cost", value: (t) => (t ? t.cost_micros : 0), axis: (v) => money(v) },
  tokens: { label: "Tokens", value: tokensOf, axis: (v) => count(v) },
};

let uid = 0;

/** An SVG bar chart of `days` (YYYY-MM-DD, in order) with `byDay` (day -> totals), by `metric`. */
export function dailySvg(days, byDay, metric = "cost") {
  const m = METRICS[metric];
  const values = days.map((d) => m.value(byDay[d]));
  const max = Math.max(0, ...values);
  const plotW = WIDTH - LEFT - 8;
  const plotH = HEIGHT - TOP - BOTTOM;
  const step = days.length ? plotW / days.length : plotW;
  const barW = Math.max(1, step * 0.72);
  const id = `chart${++uid}`;
  const used = days.filter((d) => byDay[d] && byDay[d].events);
  const peak = max ? days[values.indexOf(max)] : null;
  const range = days.length ? `${days[0]} to ${days[days.length - 1]}` : "no day";
  const desc = used.length
    ? `${used.length} of ${days.length} days had usage; the highest ${m.label.toLowerCase()} was ${m.axis(max)} on ${peak}.`
    + (days.some((d) => byDay[d] && byDay[d].unpriced_events) ? " Days marked with a dot had usage without a price." : "")
    : "No usage in this range.";
  const svg = s("svg", {
    class: "chart", viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-labelledby": `${id}-t ${id}-d`,
    "data-metric": metric, "data-max": max,
  }, s("title", { id: `${id}-t` }, `${m.label} per day, ${range}`), s("desc", { id: `${id}-d` }, desc));
  // The axis: zero, half and the top, each a faint line with its figure.
  for (const share of [0, 0.5, 1]) {
    const y = TOP + plotH - share * plotH;
    svg.append(s("line", { class: "grid", x1: LEFT, x2: WIDTH - 8, y1: y, y2: y }),
      s("text", { class: "axis", x: LEFT - 6, y: y + 4, "text-anchor": "end" }, m.axis(Math.round(max * share))));
  }
  days.forEach((day, i) => {
    const t = byDay[day];
    const v = values[i];
    const x = LEFT + i * step + (step - barW) / 2;
    const barH = max ? (v / max) * plotH : 0;
    const label = t && t.events
      ? `${day}: ${m.axis(v)}${metric === "cost" && t.unpriced_events ? ` and ${count(t.unpriced_events)} responses without a price` : ""}, ${count(tokensOf(t))} tokens`
      : `${day}: no usage`;
    const bar = s("rect", { class: "bar", x: x.toFixed(2), y: (TOP + plotH - barH).toFixed(2), width: barW.toFixed(2),
      height: barH.toFixed(2), "data-day": day, "data-value": v }, s("title", {}, label));
    svg.append(bar);
    if (t && t.unpriced_events) {
      svg.append(s("circle", { class: "unpriced-dot", cx: (x + barW / 2).toFixed(2), cy: (TOP + plotH - barH - 5).toFixed(2),
        r: 3, "data-day": day }, s("title", {}, `${day}: ${count(t.unpriced_events)} responses without a price`)));
    }
  });
  // A few day labels along the bottom: the first, the last and about five between.
  const every = Math.max(1, Math.ceil(days.length / 6));
  days.forEach((day, i) => {
    if (i % every && i !== days.length - 1) return;
    if (i !== days.length - 1 && days.length - 1 - i < every / 2) return; // not crowding the last
    svg.append(s("text", { class: "axis", x: (LEFT + i * step + step / 2).toFixed(2), y: HEIGHT - 8, "text-anchor": "middle" }, day.slice(5)));
  });
  return svg;
}

/** The chart with its metric switch, and its figures as a table (the days that had usage).
 * `choice` ({metric, open}) keeps what the person picked across redraws of the page. */
export function dailyChart(days, byDay, choice = { metric: "cost", open: false }) {
  const box = h("div", { class: "chart-box" });
  const draw = () => box.replaceChildren(dailySvg(days, byDay, choice.metric));
  const picks = Object.entries(METRICS).map(([name, m]) => {
    const input = h("input", { type: "radio", name: "chart-metric", value: name, checked: name === choice.metric,
      onchange: () => { choice.metric = name; draw(); } });
    return h("label", { class: "check inline-check" }, input, ` ${m.label}`);
  });
  draw();
  const rows = days.filter((d) => byDay[d] && byDay[d].events).map((d) => {
    const t = byDay[d];
    return h("tr", { "data-day": d }, h("th", { scope: "row" }, d), h("td", {}, costText(t)),
      h("td", {}, count(t.input_tokens)), h("td", {}, count(t.cached_input_tokens)),
      h("td", {}, count(t.output_tokens)), h("td", {}, count(t.reasoning_tokens)), h("td", {}, count(t.events)));
  });
  if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No usage in this range.")));
  const table = h("table", { class: "days" }, h("caption", { class: "sr-only" }, "Usage per day"),
    h("thead", {}, h("tr", {}, ["Day", "Cost", "Input", "Cached", "Output", "Reasoning", "Responses"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows));
  return h("div", {},
    h("fieldset", { class: "choice chart-metric" }, h("legend", {}, "Chart"), picks),
    box,
    h("details", { class: "fold days-table", open: choice.open, ontoggle: (e) => { choice.open = e.target.open; } },
      h("summary", {}, "The figures as a table"), scrollTable(table, "Usage per day")));
}
