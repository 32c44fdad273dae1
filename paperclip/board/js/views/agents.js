// A company's agents: what each can do, its launch profile, model, default project and status;
// pause or resume one; check one (POST …/check: would a run of it start?); make or change one
// with a form made from its provider's JSON Schema (raw JSON stays as an advanced option), and
// whom it reports to.

import { formDialog } from "../dialog.js";
import { ApiError, all, get, patch, post } from "../api.js";
import { badge, clear, errorBox, field, h, scrollTable, statusName, when } from "../dom.js";
import { configForm } from "../schema_form.js";
import { projectOptions } from "./projects.js";

const MARK = { ok: "✓", warning: "!", failed: "✗", unknown: "?" };
const CHECKS = {
  provider_installed: "Provider installed on the server", config_valid: "Config valid",
  agent_active: "Agent active", runner_connected: "A runner hosts the provider",
  launch_profile_offered: "Launch profile offered", cli_installed: "CLI installed on the runner",
};

/** The answer of a check, as a list a person reads top to bottom. */
function checkReport(agent, result) {
  return h("section", { class: "panel check-report", "aria-label": `Check of ${agent.name}`, "data-ok": String(result.ok) },
    h("h2", {}, `Check of ${agent.name}: `, result.ok ? h("span", { class: "ok" }, "a run should start") : h("span", { class: "error" }, "a run would not start")),
    h("ul", { class: "checks" }, result.checks.map((c) => h("li", { "data-check": c.name, "data-status": c.status, class: `check-${c.status}` },
      h("span", { class: "mark", "aria-hidden": "true" }, MARK[c.status] || "?"), " ",
      h("strong", {}, CHECKS[c.name] || statusName(c.name)), h("span", { class: "sr-only" }, ` (${c.status})`), ": ",
      c.message, c.code ? h("code", { class: "muted" }, ` ${c.code}`) : ""))),
    result.runners.length ? scrollTable(h("table", {}, h("caption", {}, "Connected runners"),
      h("thead", {}, h("tr", {}, ["Runner", "Hosts the provider", "Launch profiles", "CLI"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, result.runners.map((r) => h("tr", { "data-runner": r.runner },
        h("th", { scope: "row" }, r.runner), h("td", {}, r.hosts_provider ? "yes" : "no"),
        h("td", {}, r.launch_profiles ? r.launch_profiles.join(", ") || "none" : "not said"),
        h("td", {}, r.cli_found === true ? `found ${r.cli_version || ""}` : r.cli_found === false ? `missing${r.hint ? `: ${r.hint}` : ""}` : "not probed"))))), "Connected runners") : null,
    h("p", { class: "muted" }, "Checked ", when(result.checked_at), ", from what the runners said when they connected."));
}

export async function agentsView(companyId) {
  const base = `/companies/${companyId}/agents`;
  const [projects, { items: providers }] = await Promise.all([all(`/companies/${companyId}/projects`), get("/providers")]);
  const capabilities = (agent) => {
    if (!agent.capabilities) return h("span", { class: "error" }, "provider not installed");
    const can = Object.entries(agent.capabilities).filter(([, yes]) => yes).map(([c]) => c.replace(/_/g, " "));
    return can.length ? can.join(", ") : "none";
  };
  const tbody = h("tbody");
  const report = h("div", { "aria-live": "polite", "data-check-report": "" });
  let editing = null; // the agent the form changes; null: it makes a new one
  // Whom an agent reports to: any agent of the company but itself (the API refuses a loop).
  const manager = h("select", { name: "reports_to" });
  function managerOptions(agents) {
    const chosen = manager.value;
    clear(manager).append(h("option", { value: "" }, "No one (the top)"),
      ...agents.map((a) => h("option", { value: a.id }, a.role ? `${a.name} (${a.role})` : a.name)));
    manager.value = chosen;
  }

  async function check(agent, button) {
    button.disabled = true;
    clear(report).append(h("p", { class: "muted" }, `Checking ${agent.name}…`));
    try { clear(report).append(checkReport(agent, await post(`${base}/${agent.id}/check`))); } catch (error) { clear(report).append(errorBox(error)); }
    button.disabled = false;
    report.scrollIntoView({ block: "nearest" });
  }

  async function load() {
    const agents = await all(base);
    managerOptions(agents);
    clear(tbody).append(...agents.map((a) => {
      const toggle = h("button", {
        type: "button", "aria-label": `${a.status === "paused" ? "Resume" : "Pause"} ${a.name}`,
        onclick: async () => { await post(`${base}/${a.id}/${a.status === "paused" ? "resume" : "pause"}`); await load(); },
      }, a.status === "paused" ? "Resume" : "Pause");
      const checkButton = h("button", { type: "button", "aria-label": `Check ${a.name}`, onclick: (e) => check(a, e.currentTarget) }, "Check");
      const edit = h("button", { type: "button", class: "secondary", "aria-label": `Edit ${a.name}`, onclick: () => startEdit(a) }, "Edit");
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
        h("th", { scope: "row" }, h("a", { href: `#/c/${companyId}/agents/${a.id}` }, a.name)), h("td", {}, a.role), h("td", {}, a.provider),
        h("td", { class: "capabilities" }, capabilities(a)),
        h("td", {}, config.launch || "default"), h("td", {}, config.model || ""), cell,
        h("td", {}, badge(a.status, a.status === "active" ? "active_agent" : a.status)),
        h("td", { class: "actions" }, checkButton, " ", edit, " ", toggle));
    }));
    if (!agents.length) tbody.append(h("tr", {}, h("td", { colspan: 9, class: "muted" }, "No agent yet: make one with New agent (a name, a provider and its settings).")));
  }
  await load();

  // The form: a new agent, or the changes of one; its provider's settings from the schema.
  const heading = h("h2", {}, "New agent");
  const name = h("input", { name: "name", required: true, maxlength: 200 });
  const role = h("input", { name: "role", maxlength: 100, placeholder: "engineer" });
  const provider = h("select", { name: "provider", required: true },
    providers.map((p) => h("option", { value: p.name, selected: p.name === "codex" }, p.name)));
  const project = h("select", { name: "default_project_id" }, projectOptions(projects, null, "None"));
  const settings = h("div", { class: "provider-settings" });
  const status = h("div", { "aria-live": "polite" });
  const submit = h("button", { type: "submit", class: "btn primary" }, "Create agent");
  const cancel = h("button", { type: "button", class: "btn secondary", hidden: true, onclick: () => { reset(); dialog.close(); } }, "Cancel");
  let config = null;

  function showProvider(initial) {
    const kind = providers.find((p) => p.name === provider.value);
    config = kind ? configForm(kind) : null;
    if (config && initial) config.set(initial);
    clear(settings).append(config || h("p", { class: "error" }, "No provider plugin is installed on the server."));
  }
  provider.addEventListener("change", () => showProvider());

  function reset() {
    editing = null;
    form.reset();
    for (const option of manager.options) option.disabled = false;
    clear(heading).append("New agent");
    clear(submit).append("Create agent");
    cancel.hidden = true;
    clear(status);
    showProvider();
  }

  function startEdit(a) {
    editing = a;
    name.value = a.name;
    role.value = a.role || "";
    provider.value = a.provider;
    project.value = a.default_project_id || "";
    manager.value = a.reports_to || "";
    for (const option of manager.options) option.disabled = option.value === a.id; // not itself
    showProvider(a.provider_config || {});
    clear(heading).append(`Edit agent: ${a.name}`);
    clear(submit).append("Save agent");
    cancel.hidden = false;
    clear(status);
    dialog.open();
    name.focus();
  }

  const form = h("form", {
    class: "panel", "aria-label": "Agent", id: "agent-form",
    onsubmit: async (e) => {
      e.preventDefault();
      clear(status);
      let providerConfig;
      try { providerConfig = config ? config.value() : {}; } catch (error) { status.append(errorBox(error.message)); return; }
      const body = { name: name.value, provider: provider.value, provider_config: providerConfig };
      if (role.value.trim()) body.role = role.value.trim();
      submit.disabled = true;
      try {
        if (editing) await patch(`${base}/${editing.id}`, { ...body, default_project_id: project.value || null, reports_to: manager.value || null });
        else {
          if (project.value) body.default_project_id = project.value;
          if (manager.value) body.reports_to = manager.value;
          await post(base, body);
        }
        reset();
        dialog.close();
        await load();
      } catch (error) {
        status.append(errorBox(error));
        if (error instanceof ApiError && config) config.problems((Array.isArray(error.details) ? error.details : []).filter((d) => String(d.field || "").startsWith("provider_config")));
      } finally { submit.disabled = false; }
    },
  }, heading, h("div", { class: "filters" }, field("Name", name), field("Role", role), field("Provider", provider)),
  settings,
  field("Default project (of the issues it is given without one)", project),
  field("Reports to", manager),
  h("div", { class: "buttons" }, submit, " ", cancel), status);
  showProvider();
  const dialog = formDialog(form, { label: "New agent" });
  dialog.button.addEventListener("click", () => { if (editing) reset(); }, { capture: true });
  dialog.dialog.addEventListener("close", () => { if (editing) reset(); });

  return h("div", {}, h("div", { class: "title-row" }, h("h1", {}, "Agents"), dialog.button), dialog.dialog,
    scrollTable(h("table", { class: "agents cardify" },
      h("caption", { class: "sr-only" }, "Agents"),
      h("thead", {}, h("tr", {}, ["Name", "Role", "Provider", "Can", "Launch profile", "Model", "Default project", "Status", ""].map((t) => h("th", { scope: "col" }, t)))),
      tbody), "Agents"), report);
}
