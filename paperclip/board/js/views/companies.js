import { all, get, post } from "../api.js";
import { clear, errorBox, field, h } from "../dom.js";

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
  }, h("h2", {}, "New company"), field("Name", name), h("button", { type: "submit" }, "Create company"), status);
  return h("div", {}, h("h1", {}, "Companies"),
    companies.length ? list : h("p", { class: "muted" }, "No company yet."), form);
}

/** The company pages the header links to, in order; a later page (costs, routines) adds a line. */
export const COMPANY_LINKS = [
  ["", (name) => `${name}: issues`],
  ["/kanban", () => "Kanban"],
  ["/inbox", () => "Inbox"],
  ["/dashboard", () => "Dashboard"],
  ["/agents", () => "Agents"],
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

/** The header's links for the company being looked at (or last looked at). */
export async function companyNav(companyId) {
  const nav = document.getElementById("nav");
  if (navFor === companyId) return;
  navFor = companyId;
  nav.querySelectorAll("[data-company]").forEach((el) => el.remove());
  if (!companyId) return;
  let name = "Company";
  try { name = (await get(`/companies/${companyId}`)).name; } catch {
    if (navFor === companyId && localStorage.getItem(LAST_COMPANY) === companyId) localStorage.removeItem(LAST_COMPANY);
    return; // gone, or not this key's: the view says why
  }
  if (navFor !== companyId) return; // another company was opened meanwhile
  const first = nav.firstElementChild;
  for (const [suffix, label] of COMPANY_LINKS) {
    nav.insertBefore(h("li", { "data-company": companyId }, h("a", { href: `#/c/${companyId}${suffix}`, "data-nav": suffix || "/issues" }, label(name))), first);
  }
}
