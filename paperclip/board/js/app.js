// The board's shell: the route (the URL's fragment) picks a view; a view renders into <main>.

import { ApiError, setApiKey } from "./api.js";
import { button, clear, field, h, tickTimes } from "./dom.js";
import { installShortcuts } from "./keys.js";
import { companiesView, companyNav, currentCompany } from "./views/companies.js";
import { costsView } from "./views/costs.js";
import { dashboardView } from "./views/dashboard.js";
import { inboxView } from "./views/inbox.js";
import { issuesView } from "./views/issues.js";
import { issueView } from "./views/issue.js";
import { kanbanView } from "./views/kanban.js";
import { agentsView } from "./views/agents.js";
import { agentView } from "./views/agent.js";
import { orgView } from "./views/org.js";
import { projectsView } from "./views/projects.js";
import { routinesView, routineView } from "./views/routines.js";
import { runView } from "./views/run.js";
import { pluginsView, recoveryView } from "./views/system.js";

const ROUTES = [
  // Each view is called with the route's groups, then an AbortSignal for leaving the page.
  // An issue is named by its identifier (ACM-12) or its id; a list's filters ride in `?…`.
  [/^\/$/, companiesView],
  [/^\/plugins$/, pluginsView],
  [/^\/recovery$/, recoveryView],
  [/^\/c\/([0-9a-f-]{36})$/, issuesView],
  [/^\/c\/([0-9a-f-]{36})\/kanban$/, kanbanView],
  [/^\/c\/([0-9a-f-]{36})\/inbox$/, inboxView],
  [/^\/c\/([0-9a-f-]{36})\/dashboard$/, dashboardView],
  [/^\/c\/([0-9a-f-]{36})\/agents$/, agentsView],
  [/^\/c\/([0-9a-f-]{36})\/agents\/([0-9a-f-]{36})$/, agentView],
  [/^\/c\/([0-9a-f-]{36})\/org$/, orgView],
  [/^\/c\/([0-9a-f-]{36})\/projects$/, projectsView],
  [/^\/c\/([0-9a-f-]{36})\/routines$/, routinesView],
  [/^\/c\/([0-9a-f-]{36})\/costs$/, costsView],
  [/^\/c\/([0-9a-f-]{36})\/routines\/([0-9a-f-]{36})$/, routineView],
  [/^\/c\/([0-9a-f-]{36})\/issues\/([0-9a-f-]{36}|[A-Za-z][A-Za-z0-9]{1,9}-\d+)$/, issueView],
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

/** Without login, the page for a browser the operator has not signed in: the URL that does. */
function operatorSignIn() {
  return h("section", { class: "panel", "aria-label": "Sign in" },
    h("h1", {}, "Sign in"),
    h("p", {}, "This server acts for its operator only. Open the board through the address ",
      h("code", {}, "paperclip serve"), " printed when it started (it ends in ", h("code", {}, "/?token=…"),
      "); to print it again, run ", h("code", {}, "paperclip board"), " as the same user on this machine."),
    h("p", { class: "muted" }, "The address signs this browser in with a cookie and leaves the address bar."));
}

/** The header's link to the page shown says so (aria-current), for eyes and screen readers;
 * an issue's page counts as its company's issue list. */
function markCurrent() {
  const path = (location.hash || "#/").slice(1).split("?")[0];
  for (const link of document.querySelectorAll("#nav a")) {
    const target = link.getAttribute("href").slice(1);
    const current = target === path || (/^\/c\/[^/]+$/.test(target) && path.startsWith(`${target}/issues/`));
    if (current) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
}
// The company's links arrive after the page (their name is read first).
new MutationObserver(markCurrent).observe(document.getElementById("nav"), { childList: true });

/** Why a page could not be shown, and the ways on: back, and (an outage) try again. */
function problemPage(error, companyId) {
  const home = companyId ? h("a", { href: `#/c/${companyId}` }, "Back to the issues") : h("a", { href: "#/" }, "Back to the companies");
  const back = button("Go back", { onclick: () => history.back() });
  if (error instanceof ApiError && error.status === 404) {
    return h("section", { class: "panel problem", "data-problem": "not-found", "aria-label": "Not found" },
      h("h1", {}, "Not found"),
      h("p", {}, error.message ? `${error.message[0].toUpperCase()}${error.message.slice(1)}.` : "This page does not exist."),
      h("p", { class: "actions" }, home, " ", back));
  }
  const outage = !(error instanceof ApiError) || error.status >= 500;
  const again = button("Try again", { kind: "primary", onclick: () => render() });
  return h("section", { class: "panel problem", "data-problem": outage ? "outage" : "refused", "aria-label": "Problem" },
    h("h1", {}, outage ? "The server did not answer" : "Refused"),
    h("p", {}, outage
      ? "It may be restarting, or the database may be away for a moment. Nothing was lost: try again in a few seconds."
      : `${error.message}`),
    error.code ? h("details", { class: "code" }, h("summary", {}, "Details"), h("code", {}, error.code), ` (HTTP ${error.status})`) : null,
    h("p", { class: "actions" }, again, " ", home, " ", back));
}

function notFoundPage(companyId) {
  return problemPage(new ApiError(404, { code: "not_found", message: "there is no such page on the board" }), companyId);
}

const loading = document.getElementById("loading");

async function render() {
  const hash = location.hash || "#/";
  if (!hash.startsWith("#/")) return; // an in-page anchor (the skip link), not a route
  const path = hash.slice(1).split("?")[0];
  if (teardown) { teardown(); teardown = null; }
  const stop = new AbortController();
  teardown = () => stop.abort();
  document.querySelectorAll("body > dialog.form-dialog").forEach((d) => d.remove());
  closeMenu();
  const companyMatch = path.match(/^\/c\/([0-9a-f-]{36})/);
  const companyId = currentCompany(companyMatch ? companyMatch[1] : null);
  companyNav(companyId);
  // While the next page loads, the last one stays in sight but cannot be acted on: a press
  // meant for the next page never lands on the one leaving.
  main.inert = true;
  main.setAttribute("aria-busy", "true");
  const spinner = setTimeout(() => { loading.hidden = false; }, 150);
  const show = (node) => {
    clearTimeout(spinner);
    loading.hidden = true;
    clear(main).append(node);
    main.inert = false;
    main.removeAttribute("aria-busy");
  };
  for (const [pattern, view] of ROUTES) {
    const m = path.match(pattern);
    if (!m) continue;
    try {
      const node = await view(...m.slice(1), stop.signal);
      if (stop.signal.aborted) return;
      show(node);
      main.dataset.view = pattern.source;
      markCurrent();
    } catch (error) {
      if (stop.signal.aborted) return;
      const refused = error instanceof ApiError && error.status === 401;
      show(!refused ? problemPage(error, companyId) : error.code === "operator_token_required" ? operatorSignIn() : keyForm());
      main.dataset.view = "problem";
    }
    return;
  }
  show(notFoundPage(companyId));
  main.dataset.view = "problem";
}

// The header folds into a menu on a phone.
const header = document.getElementById("top");
const menuButton = document.getElementById("menu-button");
function closeMenu() { header.classList.remove("open"); menuButton.setAttribute("aria-expanded", "false"); }
menuButton.addEventListener("click", () => {
  const open = !header.classList.contains("open");
  header.classList.toggle("open", open);
  menuButton.setAttribute("aria-expanded", String(open));
});

// The skip link moves the focus without changing the route.
document.querySelector(".skip").addEventListener("click", (e) => { e.preventDefault(); main.focus(); });
window.addEventListener("hashchange", render);
setInterval(() => { if (!document.hidden) tickTimes(); }, 5000);
installShortcuts();
render();
