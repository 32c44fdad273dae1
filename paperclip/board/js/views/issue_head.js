// The top of an issue page: its identifier and title, what it is doing now, and its
// description in Markdown; Edit changes the title and the description in place (a Markdown
// editor with a preview), saved with PATCH. And the details of the side column: status,
// assignee, project and priority.

import { patch } from "../api.js";
import { badge, button, clear, errorBox, field, h, statusName } from "../dom.js";
import { markdown } from "../markdown.js";
import { ISSUE_STATUSES, PRIORITIES, agentOptions } from "./issues.js";
import { projectName, projectOptions } from "./projects.js";

/** A Markdown box with Write and Preview tabs. `node.value` is its text. */
export function markdownEditor(text, { label = "Description", rows = 10 } = {}) {
  const box = h("textarea", { rows, "aria-label": label, name: "description" });
  box.value = text || "";
  const preview = h("div", { class: "md-preview", hidden: true, "aria-label": `${label}: preview` });
  const write = button("Write", { kind: "tab", "aria-pressed": "true" });
  const show = button("Preview", { kind: "tab", "aria-pressed": "false" });
  const toggle = (previewing) => {
    preview.hidden = !previewing;
    box.hidden = previewing;
    write.setAttribute("aria-pressed", String(!previewing));
    show.setAttribute("aria-pressed", String(previewing));
    if (previewing) clear(preview).append(markdown(box.value, { empty: "Nothing to preview." }));
  };
  write.addEventListener("click", () => toggle(false));
  show.addEventListener("click", () => toggle(true));
  const node = h("div", { class: "md-editor" }, h("div", { class: "tabs", role: "group", "aria-label": `${label}: write or preview` }, write, show),
    box, preview, h("p", { class: "muted small" }, "Markdown: **bold**, `code`, lists, links, ``` blocks."));
  Object.defineProperty(node, "value", { get: () => box.value });
  node.focus = () => box.focus();
  return node;
}

/** Title and description, shown and edited in place. `head.show(issue)` draws them again
 * (not while they are being edited). */
export function issueHead(companyId, issue, { onSaved }) {
  const path = `/companies/${companyId}/issues/${issue.id}`;
  const title = h("h1", { class: "issue-title" });
  const description = h("div", { class: "description" });
  const problem = h("div", { "aria-live": "polite" });
  const edit = button("Edit", { kind: "secondary", "data-edit-issue": "", "aria-label": "Edit title and description" });
  const view = h("div", { class: "issue-view" }, description);
  const node = h("div", { class: "issue-head" }, h("div", { class: "title-row" }, title, edit), view, problem);
  let editing = false;

  function show() {
    if (editing) return;
    clear(title).append(h("span", { class: "identifier" }, issue.identifier), " · ", issue.title);
    clear(description).append(markdown(issue.description, { empty: "No description yet." }));
  }

  edit.addEventListener("click", () => {
    if (editing) return;
    editing = true;
    edit.hidden = true;
    const titleBox = h("input", { name: "title", required: true, maxlength: 500, value: issue.title });
    const editor = markdownEditor(issue.description);
    const save = h("button", { type: "submit", class: "btn primary" }, "Save changes");
    const cancel = button("Cancel", { onclick: () => done() });
    const form = h("form", {
      class: "edit-issue", "aria-label": "Edit the issue",
      onsubmit: async (e) => {
        e.preventDefault();
        clear(problem);
        const body = {};
        if (titleBox.value !== issue.title) body.title = titleBox.value;
        if (editor.value !== issue.description) body.description = editor.value;
        save.disabled = true;
        try {
          if (Object.keys(body).length) Object.assign(issue, await patch(path, body));
          done();
          onSaved(issue);
        } catch (error) { problem.append(errorBox(error)); save.disabled = false; }
      },
    }, field("Title", titleBox), editor, h("div", { class: "actions" }, save, " ", cancel));
    view.replaceWith(form);
    titleBox.focus();
    function done() {
      editing = false;
      form.replaceWith(view);
      edit.hidden = false;
      show();
    }
  });
  node.show = show;
  show();
  return node;
}

/** The side column's details: status, assignee, project and priority, saved together. */
export function issueDetails(companyId, issue, agents, projects, { onSaved }) {
  const path = `/companies/${companyId}/issues/${issue.id}`;
  const agentName = (id) => (agents.find((a) => a.id === id) || { name: "an agent" }).name;
  const statusBadge = h("span", { id: "issue-status" });
  const assigneeText = h("span", { id: "issue-assignee" });
  const projectText = h("span", { id: "issue-project" });
  const priorityText = h("span", { id: "issue-priority" });
  const assignee = h("select", { name: "assignee_agent_id" }, agentOptions(agents, issue.assignee_agent_id));
  const status = h("select", { name: "status" },
    ISSUE_STATUSES.map((s) => h("option", { value: s, selected: s === issue.status }, statusName(s))));
  const project = h("select", { name: "project_id" }, projectOptions(projects, issue.project_id));
  const priority = h("select", { name: "priority" },
    PRIORITIES.map((p) => h("option", { value: p, selected: p === issue.priority }, statusName(p))));
  const problem = h("div", { "aria-live": "polite" });
  const save = h("button", { type: "submit", class: "btn primary" }, "Save");

  function show() {
    // The form follows the issue unless someone is changing it right now.
    for (const [select, value] of [[status, issue.status], [assignee, issue.assignee_agent_id || ""],
      [project, issue.project_id || ""], [priority, issue.priority]]) {
      if (!select.matches(":focus") && !select.dataset.touched) select.value = value;
    }
    clear(statusBadge).append(badge(issue.status));
    statusBadge.dataset.status = issue.status;
    clear(assigneeText).append(issue.assignee_agent_id ? agentName(issue.assignee_agent_id) : "nobody");
    clear(projectText).append(issue.project_id ? projectName(projects, issue.project_id) : "none (runs use a scratch folder)");
    projectText.dataset.project = issue.project_id || "";
    clear(priorityText).append(statusName(issue.priority));
  }
  for (const select of [status, assignee, project, priority]) {
    select.addEventListener("change", () => { select.dataset.touched = "1"; });
  }
  const form = h("form", {
    class: "details-form", "aria-label": "Assignment",
    onsubmit: async (e) => {
      e.preventDefault();
      clear(problem);
      const body = {};
      if ((assignee.value || null) !== issue.assignee_agent_id) body.assignee_agent_id = assignee.value || null;
      if (status.value !== issue.status) body.status = status.value;
      if ((project.value || null) !== issue.project_id) body.project_id = project.value || null;
      if (priority.value !== issue.priority) body.priority = priority.value;
      save.disabled = true;
      try {
        if (Object.keys(body).length) Object.assign(issue, await patch(path, body));
        for (const select of [status, assignee, project, priority]) delete select.dataset.touched;
        show();
        onSaved(issue);
      } catch (error) { problem.append(errorBox(error)); } finally { save.disabled = false; }
    },
  }, field("Status", status), field("Assignee", assignee), field("Project", project), field("Priority", priority),
  save, problem);
  const node = h("section", { class: "panel details", "aria-label": "Details" }, h("h2", {}, "Details"),
    h("p", { class: "summary-line" }, statusBadge, " · ", assigneeText, " · ", priorityText, h("br"), h("span", { class: "muted small" }, "Project: "), projectText),
    form);
  node.show = show;
  show();
  return node;
}
