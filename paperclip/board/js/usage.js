// Tokens and costs as people read them, and the calendar of a company's time zone: what the
// Costs page, the run page and the issue page share.

import { h } from "./dom.js";

/** Costs are summed in millionths of a currency; prices and budgets default to USD. */
export const CURRENCY = "USD";

const numbers = new Intl.NumberFormat(undefined);

/** A count of tokens or responses: 12,345. */
export const count = (n) => numbers.format(n || 0);

/** Millionths of a currency as money: at least 2 decimals, up to 4 (0.0022 USD, 50.00 USD). */
export function money(micros, currency = CURRENCY) {
  const value = new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 4 })
    .format((micros || 0) / 1_000_000);
  return `${value} ${currency}`;
}

/** What a set of events cost, never a 0 for usage without a price: "unknown" when no event
 * had a price, "at least …" when some had none. The figures ride in data-* for scripts. */
export function costText(totals, currency = CURRENCY) {
  const { events = 0, unpriced_events: unpriced = 0, cost_micros: micros = 0 } = totals || {};
  const attrs = { class: "cost", "data-micros": micros, "data-unpriced": unpriced };
  if (!events) return h("span", { ...attrs, class: "cost muted" }, "no usage");
  if (unpriced === events) {
    return h("span", { ...attrs, class: "cost unpriced", title: "No price for the model: tokens only" }, "unknown (no price)");
  }
  if (unpriced) {
    return h("span", attrs, `at least ${money(micros, currency)}`,
      h("span", { class: "muted unpriced" }, ` (+ ${count(unpriced)} unpriced)`));
  }
  return h("span", attrs, money(micros, currency));
}

/** Input and output tokens with their cached and reasoning shares, as one short text. */
export function tokensText(t) {
  const input = `${count(t.input_tokens)} in` + (t.cached_input_tokens ? ` (${count(t.cached_input_tokens)} cached)` : "");
  const output = `${count(t.output_tokens)} out` + (t.reasoning_tokens ? ` (${count(t.reasoning_tokens)} reasoning)` : "");
  return h("span", { class: "tokens", "data-input": t.input_tokens || 0, "data-cached": t.cached_input_tokens || 0,
    "data-output": t.output_tokens || 0, "data-reasoning": t.reasoning_tokens || 0 }, `${input} · ${output}`);
}

/** Usage as `dt`/`dd` pairs: tokens and cost (for a run's or an issue's facts). */
export function usageFacts(totals) {
  if (!totals || !totals.events) return [["Tokens", h("span", { class: "muted" }, "none reported")], ["Cost", costText(totals)]];
  return [["Tokens", tokensText(totals)], ["Cost", costText(totals)]];
}

// The calendar in a time zone, without a library: Intl tells a moment's wall time there.

/** The wall date and time of `date` in `zone`: {year, month, day, hour, minute, second}. */
function wall(date, zone) {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit",
  }).formatToParts(date);
  const get = (type) => Number(parts.find((p) => p.type === type).value);
  return { year: get("year"), month: get("month"), day: get("day"), hour: get("hour"), minute: get("minute"), second: get("second") };
}

/** The moment (a Date) of midnight starting `ymd` (YYYY-MM-DD) in `zone`. */
export function midnight(ymd, zone) {
  const [y, m, d] = ymd.split("-").map(Number);
  const target = Date.UTC(y, m - 1, d);
  let guess = target;
  // Two passes settle a zone's offset, also on a day its clocks change.
  for (let i = 0; i < 2; i++) {
    const w = wall(new Date(guess), zone);
    const seen = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
    guess += target - seen;
  }
  return new Date(guess);
}

/** Today's date (YYYY-MM-DD) in `zone`. */
export function today(zone, now = new Date()) {
  const w = wall(now, zone);
  return `${w.year}-${String(w.month).padStart(2, "0")}-${String(w.day).padStart(2, "0")}`;
}

/** `ymd` moved by `days` calendar days. */
export function addDays(ymd, days) {
  const [y, m, d] = ymd.split("-").map(Number);
  return new Date(Date.UTC(y, m - 1, d + days)).toISOString().slice(0, 10);
}

/** The first and last day of the month of `ymd` moved by `months`. */
export function monthOf(ymd, months = 0) {
  const [y, m] = ymd.split("-").map(Number);
  const first = new Date(Date.UTC(y, m - 1 + months, 1));
  const last = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + 1, 0));
  return [first.toISOString().slice(0, 10), last.toISOString().slice(0, 10)];
}

/** Every day from `first` to `last`, both included (at most `max`). */
export function daysBetween(first, last, max = 400) {
  const days = [];
  for (let d = first; d <= last && days.length < max; d = addDays(d, 1)) days.push(d);
  return days;
}

/** A budget's scope as people name it: the company, agent "coder", project "web". */
export function scopeName(budget, names) {
  if (budget.scope === "company") return "The company";
  const name = names[budget.scope_id] || `a deleted ${budget.scope}`;
  return `${budget.scope === "agent" ? "Agent" : "Project"} ${name}`;
}

/** A budget's state this month: stopped at its limit, warning past its threshold, else ok. */
export function budgetState(b) {
  return b.exceeded ? "stopped" : b.warned ? "warning" : "ok";
}

/** Spent over the limit, in percent (one decimal; a limit of 0 is 100% at once). */
export function percent(b) {
  if (!b.monthly_limit_micros) return 100;
  return Math.round((b.spent_micros * 1000) / b.monthly_limit_micros) / 10;
}

/** Where a budget is shown and changed: its row on the Costs page (without an id: the page's
 * budgets, scrolled into view). */
export const budgetHref = (companyId, budgetId) => `#/c/${companyId}/costs?budget=${budgetId || "any"}`;
