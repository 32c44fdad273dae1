// Instance-wide pages: the plugins this server loaded, and what its reconciler is doing.

import { get } from "../api.js";
import { badge, h, scrollTable, when } from "../dom.js";

function table(caption, headers, rows) {
  return scrollTable(h("table", {}, h("caption", {}, caption),
    h("thead", {}, h("tr", {}, headers.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows)), caption);
}

export async function pluginsView() {
  const data = await get("/plugins");
  return h("div", {}, h("h1", {}, "Plugins"), h("p", {}, `Hook API ${data.hook_api}`),
    table("Plugins found", ["Name", "Version", "Status", "Hooks", "Requires", "Why skipped"],
      data.plugins.map((p) => h("tr", { "data-plugin": p.name },
        h("th", { scope: "row" }, p.name, p.builtin ? h("span", { class: "muted" }, " (built-in)") : ""),
        h("td", {}, `${p.distribution} ${p.version}`), h("td", {}, badge(p.status)),
        h("td", {}, p.hooks.join(", ")), h("td", {}, p.hook_api || ""),
        h("td", {}, [p.code, p.reason].filter(Boolean).join(": "))))),
    data.problems.length ? h("ul", { class: "error" }, data.problems.map((x) => h("li", {}, x))) : null);
}

export async function recoveryView(signal) {
  const data = await get("/recovery");
  return h("div", {}, h("h1", {}, "Recovery"),
    h("p", {}, `Replica ${data.replica}: ${data.passes} reconciler passes.`),
    table("Recovery policies", ["Policy", "Last pass", "Listed", "Settled", "Kept", "Failed", "Since start", "Reasons", "Last error"],
      data.policies.map((p) => h("tr", { "data-policy": p.name },
        h("th", { scope: "row" }, p.name), h("td", {}, when(p.last_pass_at)),
        h("td", {}, p.candidates), h("td", {}, p.settled), h("td", {}, p.kept), h("td", {}, p.failed),
        h("td", {}, `${p.settled_total} settled, ${p.failed_total} failed`),
        h("td", {}, Object.entries(p.reasons).map(([k, v]) => `${k}: ${v}`).join(", ")),
        h("td", {}, p.last_error || "")))),
    table("Quarantined", ["Kind", "Key", "Attempts", "Reason", "Updated"],
      data.quarantined.length ? data.quarantined.map((i) => h("tr", {},
        h("td", {}, i.kind), h("td", {}, i.key), h("td", {}, i.attempts), h("td", {}, i.reason || ""), h("td", {}, when(i.updated_at))))
        : [h("tr", {}, h("td", { colspan: 5, class: "muted" }, "Nothing is quarantined."))]));
}
