// Review and merge, on the issue page: the issue's changes (GET …/workspace/diff) file by file,
// each line coloured by its language (highlight.js, sanitised), unified or side by side; a
// comment on a line goes to the agent as a comment starting with `path:line`; Merge (and
// Merge and close) asks the control plane to merge the issue's branch into its base
// (POST …/workspace/merge), and the answer, or the refusal with the files it names, is shown.

import { ApiError, api, get, keyFor, post } from "../api.js";
import { button, clear, errorBox, h, plural } from "../dom.js";
import { highlightLine, languageOf } from "../highlight.js";
import { parseDiff } from "../diff.js";

const LINES_PER_FILE = 2000;

/** What a merge refusal means, in words; the files it names follow. */
const REFUSALS = {
  merge_conflict: "The branch conflicts with the base: nothing was merged.",
  nothing_to_merge: "Nothing to merge: the branch has no commit the base lacks.",
  not_fast_forward: "The base moved on and the branch cannot be fast-forwarded onto it.",
  base_checkout_dirty: "The base checkout has uncommitted changes: nothing was merged.",
  merge_not_supported: "This project's repository cannot be merged from here.",
  run_active: "A run is working in the worktree: merge once it ends.",
  workspace_not_ready: "The worktree is not ready yet.",
  workspace_not_found: "This issue has no worktree to merge.",
  runner_unavailable: "The runner holding the worktree is not connected.",
  not_found: "This server cannot merge from the board yet.",
};

function mergeAnswer(result) {
  const commits = Array.isArray(result.merged_commits) ? result.merged_commits.length : result.merged_commits;
  const how = result.strategy === "fast_forward" ? "fast-forward" : "a merge commit";
  return h("div", { class: "merge-result ok", role: "status", "data-merge": "merged" },
    h("strong", {}, "Merged. "),
    `${result.branch} went into ${result.base_ref} (${how}${commits !== undefined ? `, ${plural(Number(commits) || 0, "commit")}` : ""}); `,
    "the base is now at ", h("code", { title: result.commit }, String(result.commit || "").slice(0, 7)), ".",
    result.issue_status ? ` The issue is ${String(result.issue_status).replace(/_/g, " ")}.` : "");
}

function mergeRefusal(error) {
  const body = error.body || {};
  const files = body.conflicts || body.files || (error.details && error.details.files) || [];
  const timeout = error.status === 504;
  const words = timeout ? "The merge took too long to answer; it may still finish: look again in a moment."
    : REFUSALS[error.code] || error.message;
  return h("div", { class: "merge-result refused", role: "alert", "data-merge": error.code || String(error.status) },
    h("p", {}, h("strong", {}, "Not merged. "), words),
    files.length ? h("div", {}, h("p", { class: "small" }, error.code === "merge_conflict" ? "Conflicting files:" : "Files:"),
      h("ul", { class: "merge-files" }, files.map((f) => h("li", {}, h("code", {}, f))))) : null,
    h("details", { class: "code" }, h("summary", {}, "Details"), h("code", {}, error.code || `HTTP ${error.status}`), " ", error.message || ""));
}

/** The review panel of an issue: `node.load(workspace)` reads the diff when it changed. */
export function reviewPanel(companyId, issue, { onCommented = () => {}, onMerged = () => {} } = {}) {
  const path = `/companies/${companyId}/issues/${issue.id}`;
  const files = h("div", { class: "diff-files" });
  const summary = h("p", { class: "muted", "data-diff-summary": "" });
  const note = h("div");
  const result = h("div", { "aria-live": "polite", class: "merge-box" });
  let mode = "unified";
  let parsed = [];
  let diffKey = null;

  const unified = button("Unified", { kind: "tab", "aria-pressed": "true" });
  const split = button("Side by side", { kind: "tab", "aria-pressed": "false" });
  const setMode = (m) => {
    mode = m;
    unified.setAttribute("aria-pressed", String(m === "unified"));
    split.setAttribute("aria-pressed", String(m === "split"));
    draw();
  };
  unified.addEventListener("click", () => setMode("unified"));
  split.addEventListener("click", () => setMode("split"));

  // Merge: one request at a time; the answer or the refusal is said in place.
  const merge = button("Merge", { kind: "primary", "data-merge-button": "" });
  const mergeClose = button("Merge and close", { kind: "secondary", "data-merge-button": "close" });
  async function doMerge(close) {
    merge.disabled = mergeClose.disabled = true;
    clear(result).append(h("p", { class: "muted" }, "Merging…"));
    try {
      const answer = await api("POST", `${path}/workspace/merge`, { close_issue: close });
      clear(result).append(mergeAnswer(answer));
      onMerged(answer);
    } catch (error) {
      clear(result).append(error instanceof ApiError ? mergeRefusal(error) : errorBox(error));
    } finally { merge.disabled = mergeClose.disabled = false; }
  }
  merge.addEventListener("click", () => doMerge(false));
  mergeClose.addEventListener("click", () => doMerge(true));

  function lineComment(file, line, row, colspan) {
    const existing = row.nextElementSibling;
    if (existing && existing.classList.contains("line-comment")) { existing.querySelector("textarea").focus(); return; }
    const where = `${file.path}:${line.number}`;
    const removed = line.kind === "del" ? " (a removed line)" : "";
    const box = h("textarea", { rows: 3, "aria-label": `Comment on ${removed ? "the removed line " : ""}${where}`, placeholder: "What should the agent change here? (Markdown)" });
    const send = button("Comment", { kind: "primary" });
    const cancel = button("Cancel", { onclick: () => tr.remove() });
    const status = h("div", { "aria-live": "polite" });
    let unsent = null;
    send.addEventListener("click", async () => {
      const text = box.value.trim();
      if (!text) return;
      send.disabled = true;
      clear(status);
      const body = `\`${where}\`${removed} ${text}`;
      try {
        unsent = keyFor(unsent, body);
        await post(`${path}/comments`, { body, idempotency_key: unsent.key });
        unsent = null;
        clear(tr.firstChild).append(h("p", { class: "ok small", "data-line-commented": where }, `Sent to the agent as a comment on ${where}.`));
        onCommented();
      } catch (error) { status.append(errorBox(error)); send.disabled = false; }
    });
    const tr = h("tr", { class: "line-comment" }, h("td", { colspan },
      h("div", { class: "line-comment-box" }, h("strong", { class: "small" }, h("code", {}, where)), box,
        h("div", { class: "actions" }, send, " ", cancel), status)));
    row.after(tr);
    box.focus();
  }

  function code(file, text) {
    const cell = h("td", { class: "code" });
    const language = languageOf(file.path);
    cell.append(highlightLine(text, language));
    return cell;
  }

  function commentCell(file, line, colspan) {
    if (!line.number) return h("td", { class: "gutter-action" });
    const label = `Comment on ${line.kind === "del" ? "the removed line " : ""}${file.path}:${line.number}`;
    const add = h("button", { type: "button", class: "line-add", "aria-label": label, title: "Comment on this line" }, "+");
    const td = h("td", { class: "gutter-action" }, add);
    add.addEventListener("click", () => lineComment(file, line, td.parentElement, colspan));
    return td;
  }

  function unifiedRows(file) {
    const rows = [];
    for (const hunk of file.hunks) {
      rows.push(h("tr", { class: "d-hunk" }, h("td", { colspan: 4 }, hunk.header)));
      for (const line of hunk.lines) {
        const at = line.number ? `${file.path}:${line.number}` : null;
        rows.push(h("tr", { class: `d-${line.kind}`, "data-line": line.kind === "del" ? null : at, "data-old-line": line.kind === "del" ? at : null },
          commentCell(file, line, 4),
          h("td", { class: "ln" }, line.old ?? ""), h("td", { class: "ln" }, line.new ?? ""),
          code(file, line.text)));
      }
    }
    return rows;
  }

  function splitRows(file) {
    const rows = [];
    for (const hunk of file.hunks) {
      rows.push(h("tr", { class: "d-hunk" }, h("td", { colspan: 5 }, hunk.header)));
      const pending = { del: [], add: [] };
      const flush = () => {
        const n = Math.max(pending.del.length, pending.add.length);
        for (let i = 0; i < n; i += 1) {
          const l = pending.del[i];
          const r = pending.add[i];
          rows.push(h("tr", { class: "d-pair", "data-line": r ? `${file.path}:${r.number}` : l ? `${file.path}:${l.number}` : null },
            commentCell(file, r || l, 5),
            h("td", { class: "ln" }, l ? l.old : ""), l ? code(file, l.text) : h("td", { class: "code empty" }),
            h("td", { class: "ln" }, r ? r.new : ""), r ? code(file, r.text) : h("td", { class: "code empty" })));
          if (l) rows[rows.length - 1].children[2].classList.add("d-del");
          if (r) rows[rows.length - 1].children[4].classList.add("d-add");
        }
        pending.del = [];
        pending.add = [];
      };
      for (const line of hunk.lines) {
        if (line.kind === "del") { pending.del.push(line); continue; }
        if (line.kind === "add") { pending.add.push(line); continue; }
        flush();
        rows.push(h("tr", { class: "d-ctx", "data-line": line.number ? `${file.path}:${line.number}` : null },
          commentCell(file, line, 5), h("td", { class: "ln" }, line.old ?? ""), code(file, line.text),
          h("td", { class: "ln" }, line.new ?? ""), code(file, line.text)));
      }
      flush();
    }
    return rows;
  }

  function fileBlock(file) {
    const open = new Set([...files.querySelectorAll("details.file-diff[open]")].map((d) => d.dataset.path));
    const counts = h("span", { class: "counts" }, h("span", { class: "d-add-text" }, `+${file.added}`), " ", h("span", { class: "d-del-text" }, `−${file.deleted}`));
    const body = file.binary ? h("p", { class: "muted" }, "Binary file: not shown.")
      : h("div", { class: "scroll diff-scroll", tabindex: 0, role: "region", "aria-label": `Diff of ${file.path}` },
        h("table", { class: `diff-table ${mode}` }, h("tbody", {}, ...(mode === "split" ? splitRows(file) : unifiedRows(file)).slice(0, LINES_PER_FILE))));
    return h("details", { class: "file-diff", "data-path": file.path, open: open.size ? open.has(file.path) : true },
      h("summary", {}, h("code", { class: "file-path" }, file.path), " ", h("span", { class: "badge" }, file.status), " ", counts), body);
  }

  function draw() {
    clear(files).append(...parsed.map(fileBlock));
  }

  async function load(ws) {
    if (!ws) return;
    const key = `${ws.state_at}|${ws.head_commit}`;
    if (key === diffKey) return;
    const got = await get(`${path}/workspace/diff`);
    diffKey = key;
    parsed = parseDiff(got.diff || "");
    const added = parsed.reduce((n, f) => n + f.added, 0);
    const deleted = parsed.reduce((n, f) => n + f.deleted, 0);
    const product = ws.work_product;
    clear(summary).append(parsed.length
      ? `${plural(parsed.length, "file")} changed, +${added} −${deleted}`
      : "No change against the base commit yet.",
    product ? ` · ${plural(product.ahead, "commit")} ahead of ${ws.base_ref || "the base"}` : "",
    product && product.dirty ? " · uncommitted changes in the worktree" : "");
    clear(note);
    if (got.truncated) note.append(h("p", { class: "muted", "data-diff-truncated": "" }, "The diff was cut at the runner's limit (PAPERCLIP_RUNNER_DIFF_LIMIT_BYTES); the rest is in the worktree."));
    draw();
  }

  const node = h("section", { class: "panel review", "aria-label": "Review", hidden: true },
    h("div", { class: "title-row" }, h("h2", {}, "Changes"), h("div", { class: "tabs", role: "group", "aria-label": "Diff layout" }, unified, split)),
    summary, note, files,
    h("div", { class: "merge" }, h("p", { class: "muted small" }, "Merge the issue's branch into its base branch in the project's repository."),
      h("div", { class: "actions" }, merge, " ", mergeClose), result));
  node.load = async (ws) => {
    node.hidden = !ws;
    if (!node.hidden) await load(ws).catch((error) => clear(note).append(errorBox(error)));
  };
  return node;
}
