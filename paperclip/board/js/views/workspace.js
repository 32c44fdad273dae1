// An issue's workspace (docs/workspaces.md): the worktree its runs work in, on which runner
// host, on which branch from which base; the latest work product (head, changed files) and its
// diff; and forgetting a worktree whose host is gone for good. Part of the issue page.

import { ApiError, api, get } from "../api.js";
import { append, badge, clear, errorBox, h, when } from "../dom.js";
import { WORKSPACE_EVENTS } from "./events.js";

const DIFF_LINES_SHOWN = 10000; // the runner already cuts the diff; this bounds the page too
const STALE_MS = 10000;
const STATUS_NAMES = {
  A: "added", M: "modified", D: "deleted", R: "renamed", C: "copied", T: "type changed",
  U: "unmerged", "?": "untracked",
};

const short = (sha) => (sha ? h("code", { title: sha }, sha.slice(0, 7)) : h("span", { class: "muted" }, "not known yet"));
const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** A size on disk as people read it: 12.3 MiB. */
export function diskSize(bytes) {
  if (bytes === null || bytes === undefined) return "not measured yet";
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return unit ? `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}` : plural(bytes, "byte");
}

/** A `git diff` as lines whose class says what each is: file header, hunk, added, deleted. */
export function diffLines(diff) {
  const lines = diff.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  let header = false;
  return lines.slice(0, DIFF_LINES_SHOWN).map((line) => {
    if (line.startsWith("diff ")) header = true;
    else if (line.startsWith("@@")) header = false;
    let kind = "d-ctx";
    if (header) kind = "d-file";
    else if (line.startsWith("@@")) kind = "d-hunk";
    else if (line.startsWith("+")) kind = "d-add";
    else if (line.startsWith("-")) kind = "d-del";
    else if (line.startsWith("\\")) kind = "d-note";
    return h("span", { class: kind }, `${line}\n`);
  });
}

function lineCounts(file) {
  if (file.added === null || file.added === undefined) return h("span", { class: "muted" }, "binary");
  return [h("span", { class: "d-add" }, `+${file.added}`), " / ", h("span", { class: "d-del" }, `-${file.deleted}`)];
}

function filesTable(product) {
  const rows = product.files.map((f) => h("tr", { "data-path": f.path, "data-status": f.status },
    h("td", {}, h("abbr", { title: STATUS_NAMES[f.status] || f.status }, f.status)),
    h("td", { class: "path" }, h("code", {}, f.path)),
    h("td", { class: "lines" }, lineCounts(f))));
  if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: 3, class: "muted" }, "No change against the base commit.")));
  return [
    h("div", { class: "scroll" }, h("table", { class: "files" },
      h("caption", {}, "Changed files, against the base commit"),
      h("thead", {}, h("tr", {}, ["Status", "Path", "Lines"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows))),
    product.files_truncated
      ? h("p", { class: "muted", "data-files-truncated": "" }, `Only the first ${plural(product.files.length, "changed file")} are listed.`)
      : null,
  ];
}

function facts(companyId, ws) {
  const product = ws.work_product;
  const removal = [];
  if (ws.release_after) removal.push(["Removed after", when(ws.release_after)]);
  if (ws.released_at) removal.push(["Removed", when(ws.released_at)]);
  if (ws.saved_ref) removal.push(["Uncommitted changes saved at", h("code", {}, ws.saved_ref)]);
  const rows = [
    ["Status", badge(ws.status)],
    ["Runner", ws.runner_name || (ws.runner_id ? ws.runner_id.slice(0, 8) : h("span", { class: "muted" }, "not placed yet"))],
    ["Folder", ws.path ? h("code", {}, ws.path) : h("span", { class: "muted" }, "not made yet")],
    ["Branch", h("code", { "data-branch": "" }, ws.branch)],
    ["Base", [ws.base_ref ? h("code", {}, ws.base_ref) : "the repository's HEAD", " at ", short(ws.base_commit)]],
    ["Head", short(ws.head_commit)],
    ...(product ? [
      ["Ahead", plural(product.ahead, "commit")],
      ["Working tree", product.dirty ? "uncommitted changes" : "clean"],
      ["Untracked", plural(product.untracked, "file")],
    ] : []),
    ["Size on disk", diskSize(ws.disk_bytes)],
    ["Reported", ws.state_at
      ? [when(ws.state_at), ws.state_run_id ? [" by run ", h("a", { href: `#/c/${companyId}/runs/${ws.state_run_id}` }, ws.state_run_id.slice(0, 8))] : ""]
      : h("span", { class: "muted" }, "nothing yet")],
    ...removal,
  ];
  if (ws.error_code) rows.push(["Note", `${ws.error_code}: ${ws.error_message || ""}`]);
  return rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]);
}

/**
 * The Workspace panel of an issue page. `refresh(issue)` reads the workspace again;
 * `runEvent(event)` does when a run event says the worktree changed; `follow(issue, runs)`,
 * called on each re-read of the page, does when the issue or its runs changed (a run placed,
 * a run ended, the issue closed), and otherwise every few seconds.
 */
export function workspacePanel(companyId, issueId, { onLoaded = async () => {} } = {}) {
  const path = `/companies/${companyId}/issues/${issueId}/workspace`;
  let issue = null;
  let shown = null; // the workspace on the page
  let followed = null;
  let readAt = 0;
  let found = false; // whether the last read found a workspace

  const summary = h("dl", { class: "facts" });
  const files = h("div", { class: "work-product" });
  const body = h("div", { class: "workspace-body" }, summary, files);
  const empty = h("p", { class: "muted" });
  const problem = h("div", { "aria-live": "polite" });

  // Forget: a second press confirms; the API's refusal (run_active, insufficient_role) shows here.
  const forgetStatus = h("div", { "aria-live": "polite" });
  let armed = false;
  const forget = h("button", { type: "button", class: "btn danger" }, "Forget worktree");
  const forgetPanel = h("div", { class: "forget" },
    h("p", { class: "muted hint" }, "For admins, when the runner host holding it is gone for good: the issue's next run "
      + "makes a new worktree on any runner; this one and its branch stay on their host."),
    forget, forgetStatus);
  function disarm() { armed = false; clear(forget).append("Forget worktree"); }
  forget.addEventListener("click", async () => {
    clear(forgetStatus);
    if (!armed) {
      armed = true;
      clear(forget).append("Confirm: forget worktree");
      forgetStatus.append(h("p", { class: "muted" }, "Press again to forget it."));
      return;
    }
    forget.disabled = true;
    try {
      await api("DELETE", path);
      disarm();
      await node.refresh();
    } catch (error) {
      forgetStatus.append(errorBox(error));
      disarm();
    } finally { forget.disabled = false; }
  });

  const node = h("section", { class: "panel workspace", "aria-label": "Workspace", hidden: true },
    h("h2", {}, "Workspace"), empty, body, forgetPanel, problem);

  function show(ws) {
    clear(problem);
    const sig = JSON.stringify([ws, Boolean(issue?.project_id)]);
    if (shown === sig) return;
    shown = sig;
    // A refusal to forget spoke of the worktree as it was; it changed since.
    forgetStatus.querySelectorAll(".error").forEach((el) => el.remove());
    if (!ws) {
      // No worktree yet: only an issue of a project will have one.
      node.hidden = !issue?.project_id;
      body.hidden = forgetPanel.hidden = true;
      empty.hidden = false;
      clear(empty).append("Its runs will work in a worktree of the project's repository once one starts.");
      delete node.dataset.status;
      return;
    }
    node.hidden = body.hidden = false;
    empty.hidden = true;
    node.dataset.status = ws.status;
    clear(summary).append(...facts(companyId, ws));
    append(clear(files), [ws.work_product ? filesTable(ws.work_product)
      : h("p", { class: "muted" }, "No work product yet: the worktree is being made.")]);
    forgetPanel.hidden = ws.status === "released";
  }

  async function load() {
    readAt = Date.now();
    let ws = null;
    try {
      ws = await get(path);
    } catch (error) {
      if (!(error instanceof ApiError && error.code === "workspace_not_found")) {
        node.hidden = false;
        clear(problem).append(errorBox(error));
        return;
      }
    }
    found = Boolean(ws);
    show(ws);
    await onLoaded(ws);
  }

  // One read at a time; what is asked for meanwhile is one more read after it.
  let running = null;
  let again = false;
  node.refresh = (fresh) => {
    if (fresh) issue = fresh;
    if (running) { again = true; return running; }
    running = (async () => {
      do { again = false; await load(); } while (again);
    })().finally(() => { running = null; });
    return running;
  };
  node.runEvent = (event) => {
    if (WORKSPACE_EVENTS.includes(event.type)) node.refresh().catch(() => {});
  };
  node.follow = (fresh, runs) => {
    const key = JSON.stringify([fresh.status, fresh.project_id, runs.map((r) => [r.id, r.status])]);
    // No event says when an ended issue's worktree is scheduled for removal or removed,
    // or that someone else forgot it: those are read now and then.
    const stale = Date.now() - readAt > STALE_MS && (found || fresh.project_id);
    issue = fresh;
    if (key === followed && !stale) return;
    followed = key;
    node.refresh().catch(() => {});
  };
  return node;
}
