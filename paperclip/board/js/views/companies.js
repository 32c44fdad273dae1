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

/** The header's links for the company being looked at. */
let navFor = null;
export async function companyNav(companyId) {
  const nav = document.getElementById("nav");
  if (navFor === companyId) return;
  navFor = companyId;
  nav.querySelectorAll("[data-company]").forEach((el) => el.remove());
  if (!companyId) return;
  let name = "Company";
  try { name = (await get(`/companies/${companyId}`)).name; } catch { /* the view says why */ }
  if (navFor !== companyId) return; // another company was opened meanwhile
  nav.append(
    h("li", { "data-company": companyId }, h("a", { href: `#/c/${companyId}` }, `${name}: issues`)),
    h("li", { "data-company": companyId }, h("a", { href: `#/c/${companyId}/agents` }, "Agents")),
    h("li", { "data-company": companyId }, h("a", { href: `#/c/${companyId}/projects` }, "Projects")),
    h("li", { "data-company": companyId }, h("a", { href: `#/c/${companyId}/routines` }, "Routines")));
}

