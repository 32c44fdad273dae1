import { all, patch, post } from "../api.js";
import { badge, clear, errorBox, field, h } from "../dom.js";
import { projectOptions } from "./projects.js";

export async function agentsView(companyId) {
  const base = `/companies/${companyId}/agents`;
  const capabilities = (agent) => {
    if (!agent.capabilities) return h("span", { class: "error" }, "provider not installed");
    const can = Object.entries(agent.capabilities).filter(([, yes]) => yes).map(([c]) => c.replace(/_/g, " "));
    return can.length ? can.join(", ") : "none";
  };
  const tbody = h("tbody");
  const projects = await all(`/companies/${companyId}/projects`);
  async function load() {
    const agents = await all(base);
    clear(tbody).append(...agents.map((a) => {
      const toggle = h("button", {
        type: "button", "aria-label": `${a.status === "paused" ? "Resume" : "Pause"} ${a.name}`,
        onclick: async () => { await post(`${base}/${a.id}/${a.status === "paused" ? "resume" : "pause"}`); await load(); },
      }, a.status === "paused" ? "Resume" : "Pause");
      const config = a.provider_config || {};
      // The project of issues given to the agent without one: changed in place.
      const defaultProject = h("select", { "aria-label": `Default project of ${a.name}` },
        projectOptions(projects, a.default_project_id, "None"));
      const cell = h("td", { class: "default-project" }, defaultProject);
      defaultProject.addEventListener("change", async () => {
        cell.querySelectorAll(".error").forEach((el) => el.remove());
        try { await patch(`${base}/${a.id}`, { default_project_id: defaultProject.value || null }); } catch (error) {
          cell.append(errorBox(error));
          defaultProject.value = a.default_project_id || "";
          return;
        }
        a.default_project_id = defaultProject.value || null;
      });
      return h("tr", { "data-agent": a.id },
        h("th", { scope: "row" }, a.name), h("td", {}, a.role), h("td", {}, a.provider),
        h("td", { class: "capabilities" }, capabilities(a)),
        h("td", {}, config.launch || "default"), h("td", {}, config.model || ""), cell,
        h("td", {}, badge(a.status, a.status === "active" ? "active_agent" : a.status)), h("td", {}, toggle));
    }));
    if (!agents.length) tbody.append(h("tr", {}, h("td", { colspan: 9, class: "muted" }, "No agent yet.")));
  }
  await load();

  const name = h("input", { name: "name", required: true, maxlength: 200 });
  const provider = h("input", { name: "provider", required: true, value: "codex" });
  const config = h("textarea", { name: "provider_config", rows: 3, spellcheck: "false" }, "{}");
  const project = h("select", { name: "default_project_id" }, projectOptions(projects, null, "None"));
  const status = h("div", { "aria-live": "polite" });
  const form = h("form", {
    class: "panel", "aria-label": "New agent",
    onsubmit: async (e) => {
      e.preventDefault();
      clear(status);
      let providerConfig;
      try { providerConfig = JSON.parse(config.value || "{}"); } catch { status.append(errorBox("The configuration is not JSON.")); return; }
      try {
        const body = { name: name.value, provider: provider.value, provider_config: providerConfig };
        if (project.value) body.default_project_id = project.value;
        await post(base, body);
        name.value = "";
        await load();
      } catch (error) { status.append(errorBox(error)); }
    },
  }, h("h2", {}, "New agent"), field("Name", name), field("Provider", provider),
  field("Provider configuration (JSON; launch names a runner profile)", config),
  field("Default project (of the issues it is given without one)", project),
  h("button", { type: "submit" }, "Create agent"), status);

  return h("div", {}, h("h1", {}, "Agents"),
    h("div", { class: "scroll" }, h("table", {},
      h("thead", {}, h("tr", {}, ["Name", "Role", "Provider", "Can", "Launch profile", "Model", "Default project", "Status", ""].map((t) => h("th", { scope: "col" }, t)))),
      tbody)), form);
}
