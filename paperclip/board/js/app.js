// The board's shell: the route (the URL's fragment) picks a view; a view renders into <main>.

import { ApiError, setApiKey } from "./api.js";
import { clear, errorBox, field, h } from "./dom.js";
import { companiesView, companyNav } from "./views/companies.js";
import { issuesView } from "./views/issues.js";
import { issueView } from "./views/issue.js";
import { agentsView } from "./views/agents.js";
import { projectsView } from "./views/projects.js";
import { routinesView, routineView } from "./views/routines.js";
import { runView } from "./views/run.js";
import { pluginsView, recoveryView } from "./views/system.js";

const ROUTES = [
  // Each view is called with the route's groups, then an AbortSignal for leaving the page.
  [/^\/$/, companiesView],
  [/^\/plugins$/, pluginsView],
  [/^\/recovery$/, recoveryView],
  [/^\/c\/([0-9a-f-]{36})$/, issuesView],
  [/^\/c\/([0-9a-f-]{36})\/agents$/, agentsView],
  [/^\/c\/([0-9a-f-]{36})\/projects$/, projectsView],
  [/^\/c\/([0-9a-f-]{36})\/routines$/, routinesView],
  [/^\/c\/([0-9a-f-]{36})\/routines\/([0-9a-f-]{36})$/, routineView],
  [/^\/c\/([0-9a-f-]{36})\/issues\/([0-9a-f-]{36})$/, issueView],
  [/^\/c\/([0-9a-f-]{36})\/runs\/([0-9a-f-]{36})$/, runView],
];

const main = document.getElementById("view");
let teardown = null;

function keyForm() {
  const input = h("input", { type: "password", autocomplete: "off", required: true });
  return h("form", {
    class: "panel", "aria-label": "Sign in",
    onsubmit: (e) => { e.preventDefault(); setApiKey(input.value.trim()); render(); },
  }, h("h1", {}, "Sign in"),
    h("p", {}, "This server needs an API key (made with paperclip keys create). It is kept for this tab only."),
    field("API key", input), h("button", { type: "submit" }, "Use this key"));
}

async function render() {
  const hash = location.hash || "#/";
  if (!hash.startsWith("#/")) return; // an in-page anchor (the skip link), not a route
  const path = hash.slice(1);
  if (teardown) { teardown(); teardown = null; }
  const stop = new AbortController();
  teardown = () => stop.abort();
  const companyMatch = path.match(/^\/c\/([0-9a-f-]{36})/);
  companyNav(companyMatch ? companyMatch[1] : null);
  for (const [pattern, view] of ROUTES) {
    const m = path.match(pattern);
    if (!m) continue;
    try {
      const node = await view(...m.slice(1), stop.signal);
      if (stop.signal.aborted) return;
      clear(main).append(node);
      main.dataset.view = pattern.source;
    } catch (error) {
      if (stop.signal.aborted) return;
      clear(main).append(error instanceof ApiError && error.status === 401 ? keyForm() : errorBox(error));
    }
    return;
  }
  clear(main).append(h("p", {}, "No such page. ", h("a", { href: "#/" }, "Companies")));
}

// The skip link moves the focus without changing the route.
document.querySelector(".skip").addEventListener("click", (e) => { e.preventDefault(); main.focus(); });
window.addEventListener("hashchange", render);
render();
