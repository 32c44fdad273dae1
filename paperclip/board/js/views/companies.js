import { all, get, post } from "../api.js";
import { emptyState, formDialog } from "../dialog.js";
import { button, clear, errorBox, field, h } from "../dom.js";

export async function companiesView() {
  const companies = await all("/companies");
  const list = h("ul", { class: "cards", "aria-label": "Companies" },
    companies.map((c) => h("li", { class: "card" },
      h("a", { href: `#/c/${c.id}` }, c.name), " ", h("span", { class: "muted" }, c.issue_prefix))));
  const name = h("input", { name: "name", required: true, maxlength: 200 });
  const status = h("div", { "aria-live": "polite" });
  const form = h("form", {
    class: "panel", "aria-label": "New company",
    onsubmit: async (e) => {
      e.preventDefault();
      try {
        const company = await post("/companies", { name: name.value });
        location.hash = `#/c/${company.id}`;
      } catch (error) { clear(status).append(errorBox(error)); }
    },
  }, h("h2", {}, "New company"), field("Name", name), h("button", { type: "submit", class: "btn primary" }, "Create company"), status);
  const dialog = formDialog(form, { label: "New company" });
  return h("div", {}, h("div", { class: "title-row" }, h("h1", {}, "Companies"), dialog.button), dialog.dialog,
    companies.length ? list : emptyState("No company yet. A company holds the agents, projects and issues of one team.",
      button("Make the first company", { kind: "primary", onclick: dialog.open })));
}

/** The company pages the header links to, in order; a later page (costs, routines) adds a line. */
export const COMPANY_LINKS = [
  ["", (name) => `${name}: issues`],
  ["/kanban", () => "Kanban"],
  ["/inbox", () => "Inbox"],
  ["/dashboard", () => "Dashboard"],
  ["/agents", () => "Agents"],
  ["/org", () => "Org chart"],
  ["/projects", () => "Projects"],
  ["/routines", () => "Routines"],
  ["/costs", () => "Costs"],
];

const LAST_COMPANY = "paperclip.company";
let navFor = null;

/** The company the header links to: the one in the URL, else the last one looked at (so the
 * links stay on the instance's own pages too). */
export function currentCompany(fromUrl) {
  if (fromUrl) localStorage.setItem(LAST_COMPANY, fromUrl);
  return fromUrl || localStorage.getItem(LAST_COMPANY);
}

const NAMES = "paperclip.companyNames";
const INBOX_MS = 15000;
let inboxTimer = null;

function rememberName(companyId, name) {
  try {
    const names = JSON.parse(localStorage.getItem(NAMES) || "{}");
    names[companyId] = name;
    localStorage.setItem(NAMES, JSON.stringify(names));
  } catch { /* storage full or refused: the name is read again next time */ }
}

function rememberedName(companyId) {
  try { return JSON.parse(localStorage.getItem(NAMES) || "{}")[companyId] || null; } catch { return null; }
}

/** The inbox's count beside its link in the header, read again now and then. */
async function showInboxCount(companyId, badge) {
  try {
    const { total } = await get(`/companies/${companyId}/inbox/count`);
    badge.textContent = total ? String(total) : "";
    badge.hidden = !total;
    badge.dataset.inboxCount = String(total);
    badge.title = total ? `${total} thing${total === 1 ? "" : "s"} wait${total === 1 ? "s" : ""} on a person` : "";
  } catch { /* kept as it was: the next read says */ }
}

/** Read the header's inbox count again now (after an action that changed it). */
export function refreshInboxCount() {
  const badge = document.querySelector("[data-inbox-count]");
  if (badge && navFor) showInboxCount(navFor, badge);
}

/** The header's links for the company being looked at (or last looked at). A company that is
 * gone (404) loses them; an outage keeps them, with the name last seen. */
export async function companyNav(companyId) {
  const nav = document.getElementById("nav");
  if (navFor === companyId) return;
  navFor = companyId;
  clearInterval(inboxTimer);
  nav.querySelectorAll("[data-company]").forEach((el) => el.remove());
  if (!companyId) return;
  let name = rememberedName(companyId) || "Company";
  try {
    name = (await get(`/companies/${companyId}`)).name;
    rememberName(companyId, name);
  } catch (error) {
    if (error && (error.status === 404 || error.status === 403)) {
      if (navFor === companyId && localStorage.getItem(LAST_COMPANY) === companyId) localStorage.removeItem(LAST_COMPANY);
      return; // gone, or not this key's: the view says why
    }
  }
  if (navFor !== companyId) return; // another company was opened meanwhile
  const first = nav.firstElementChild;
  const badge = h("span", { class: "nav-count", hidden: true, "data-inbox-count": "0", "aria-live": "polite" });
  for (const [suffix, label] of COMPANY_LINKS) {
    const link = h("a", { href: `#/c/${companyId}${suffix}`, "data-nav": suffix || "/issues" }, label(name));
    nav.insertBefore(h("li", { "data-company": companyId }, link, suffix === "/inbox" ? badge : null), first);
  }
  showInboxCount(companyId, badge);
  inboxTimer = setInterval(() => { if (!document.hidden) showInboxCount(companyId, badge); }, INBOX_MS);
}
