// A company's projects: each one's repository (a folder on the runner host or a clone URL)
// and branches; make one, change one, delete one (the API's refusal is shown in its row).

import { formDialog } from "../dialog.js";
import { all, api, patch, post } from "../api.js";
import { clear, errorBox, field, h, scrollTable } from "../dom.js";

export function projectOptions(projects, selected, none = "No project") {
  return [h("option", { value: "" }, none),
    ...projects.map((p) => h("option", { value: p.id, selected: p.id === selected }, p.name))];
}

/** The project's name for a list or a summary; "" without one. */
export function projectName(projects, id) {
  if (!id) return "";
  return (projects.find((p) => p.id === id) || { name: "a deleted project" }).name;
}

function source(p) {
  return p.repo_path
    ? [h("span", { class: "muted" }, "folder "), h("code", {}, p.repo_path)]
    : [h("span", { class: "muted" }, "clone "), h("code", {}, p.repo_url)];
}

export async function projectsView(companyId) {
  const base = `/companies/${companyId}/projects`;
  const tbody = h("tbody");
  let editing = null; // the project the form changes; null: it makes a new one

  async function load() {
    const projects = await all(base);
    clear(tbody).append(...projects.map(row));
    if (!projects.length) tbody.append(h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No project yet: New project names a repository (a folder on the runner host, or a clone URL) its issues work in.")));
  }

  function row(p) {
    const actions = h("td", { class: "actions" });
    let armed = false;
    const remove = h("button", {
      type: "button", class: "btn danger", "aria-label": `Delete ${p.name}`,
      onclick: async () => {
        // A second press confirms: nothing is deleted by one stray click.
        if (!armed) { armed = true; clear(remove).append("Confirm delete"); return; }
        remove.disabled = true;
        actions.querySelectorAll(".error").forEach((el) => el.remove());
        try { await api("DELETE", `${base}/${p.id}`); await load(); } catch (error) {
          actions.append(errorBox(error));
          armed = false; remove.disabled = false; clear(remove).append("Delete");
        }
      },
    }, "Delete");
    const edit = h("button", { type: "button", "aria-label": `Edit ${p.name}`, onclick: () => startEdit(p) }, "Edit");
    actions.append(edit, " ", remove);
    return h("tr", { "data-project": p.id },
      h("th", { scope: "row" }, p.name, p.description ? h("div", { class: "muted" }, p.description) : ""),
      h("td", { class: "source" }, source(p)),
      h("td", {}, p.default_branch || h("span", { class: "muted" }, "HEAD")),
      h("td", {}, p.branch_prefix ? h("code", {}, p.branch_prefix) : h("span", { class: "muted" }, "none")),
      h("td", {}, p.hooks_enabled ? "run" : "off"),
      actions);
  }

  // The form: a new project, or the changes of one.
  const heading = h("h2", {}, "New project");
  const name = h("input", { name: "name", required: true, maxlength: 200 });
  const description = h("textarea", { name: "description", rows: 2 });
  const kindPath = h("input", { type: "radio", name: "source", value: "path", checked: true });
  const kindUrl = h("input", { type: "radio", name: "source", value: "url" });
  const repoPath = h("input", { name: "repo_path", maxlength: 4096, placeholder: "/srv/repos/app", spellcheck: "false" });
  const repoUrl = h("input", { name: "repo_url", maxlength: 2048, placeholder: "https://git.example/acme/app.git", spellcheck: "false" });
  const pathField = field("Repository folder", repoPath);
  const urlField = field("Repository URL", repoUrl);
  const defaultBranch = h("input", { name: "default_branch", maxlength: 255, placeholder: "its HEAD branch", spellcheck: "false" });
  const prefix = h("input", { name: "branch_prefix", maxlength: 100, value: "paperclip/", spellcheck: "false" });
  const hooks = h("input", { type: "checkbox", name: "hooks_enabled" });
  const submit = h("button", { type: "submit", class: "btn primary" }, "Create project");
  const cancel = h("button", { type: "button", class: "btn secondary", hidden: true, onclick: () => { reset(); dialog.close(); } }, "Cancel");
  const status = h("div", { "aria-live": "polite" });

  function showSource() {
    const byUrl = kindUrl.checked;
    pathField.hidden = byUrl;
    urlField.hidden = !byUrl;
    repoPath.required = !byUrl;
    repoUrl.required = byUrl;
  }
  kindPath.addEventListener("change", showSource);
  kindUrl.addEventListener("change", showSource);

  function reset() {
    editing = null;
    form.reset();
    clear(heading).append("New project");
    clear(submit).append("Create project");
    cancel.hidden = true;
    showSource();
  }

  function startEdit(p) {
    editing = p;
    clear(status);
    name.value = p.name;
    description.value = p.description;
    kindUrl.checked = Boolean(p.repo_url);
    kindPath.checked = !p.repo_url;
    repoPath.value = p.repo_path || "";
    repoUrl.value = p.repo_url || "";
    defaultBranch.value = p.default_branch || "";
    prefix.value = p.branch_prefix;
    hooks.checked = p.hooks_enabled;
    clear(heading).append(`Edit project: ${p.name}`);
    clear(submit).append("Save project");
    cancel.hidden = false;
    showSource();
    dialog.open();
    name.focus();
  }

  const form = h("form", {
    class: "panel", "aria-label": "Project",
    onsubmit: async (e) => {
      e.preventDefault();
      clear(status);
      const byUrl = kindUrl.checked;
      const body = {
        name: name.value, description: description.value,
        repo_path: byUrl ? null : repoPath.value.trim(), repo_url: byUrl ? repoUrl.value.trim() : null,
        default_branch: defaultBranch.value.trim() || null, branch_prefix: prefix.value.trim(),
        hooks_enabled: hooks.checked,
      };
      submit.disabled = true;
      try {
        if (editing) await patch(`${base}/${editing.id}`, body);
        else await post(base, body);
        reset();
        dialog.close();
        await load();
      } catch (error) { status.append(errorBox(error)); } finally { submit.disabled = false; }
    },
  }, heading, field("Name", name), field("Description", description),
  h("fieldset", { class: "choice" }, h("legend", {}, "Source"),
    h("label", {}, kindPath, " A folder on the runner host"),
    h("label", {}, kindUrl, " A clone URL")),
  pathField, urlField,
  h("div", { class: "filters" }, field("Default branch", defaultBranch), field("Branch prefix", prefix)),
  h("label", { class: "check" }, hooks, " Run the repository's git hooks in its worktrees"),
  h("p", { class: "muted hint" }, "The runner host decides which folders and clone URLs it allows (",
    h("code", {}, "PAPERCLIP_RUNNER_WORKSPACE_ROOTS"), ", ", h("code", {}, "PAPERCLIP_RUNNER_WORKSPACE_REMOTES"), "). ",
    "Each issue of the project works on its own branch: the prefix, then the issue's identifier."),
  h("div", { class: "buttons" }, submit, " ", cancel), status);
  showSource();
  const dialog = formDialog(form, { label: "New project" });
  dialog.button.addEventListener("click", () => { if (editing) reset(); }, { capture: true });
  dialog.dialog.addEventListener("close", () => { if (editing) reset(); });
  await load();

  return h("div", {}, h("div", { class: "title-row" }, h("h1", {}, "Projects"), dialog.button), dialog.dialog,
    scrollTable(h("table", { class: "projects cardify" },
      h("caption", { class: "sr-only" }, "Projects"),
      h("thead", {}, h("tr", {}, ["Name", "Repository", "Default branch", "Branch prefix", "Git hooks", ""].map((t) => h("th", { scope: "col" }, t)))),
      tbody), "Projects"));
}
