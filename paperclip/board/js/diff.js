// A unified diff (`git diff`) as files, hunks and lines, each line with its old and new number:
// what the review panel draws and what a line comment names (`path:line`).

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$/;

function pathOf(header) {
  const plus = header.find((l) => l.startsWith("+++ ") && !l.startsWith("+++ /dev/null"));
  const minus = header.find((l) => l.startsWith("--- ") && !l.startsWith("--- /dev/null"));
  const strip = (l) => l.slice(4).replace(/^[ab]\//, "").replace(/\t.*$/, "");
  if (plus) return strip(plus);
  if (minus) return strip(minus);
  const git = header[0].match(/^diff --git a\/(.+) b\/(.+)$/);
  return git ? git[2] : header[0];
}

function statusOf(header) {
  if (header.some((l) => l.startsWith("new file mode") || l === "--- /dev/null")) return "added";
  if (header.some((l) => l.startsWith("deleted file mode") || l === "+++ /dev/null")) return "deleted";
  if (header.some((l) => l.startsWith("rename from"))) return "renamed";
  return "modified";
}

/** The files of `text`: { path, status, binary, added, deleted, hunks: [{ header, lines }] },
 * each line { kind: "add" | "del" | "ctx" | "note", text, old, new, number } where `number` is
 * the line a comment names (the new one; a deleted line's old one). */
export function parseDiff(text) {
  const files = [];
  let file = null;
  let hunk = null;
  let oldNo = 0;
  let newNo = 0;
  let header = null;
  const lines = String(text || "").split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const finishHeader = () => {
    if (!header) return;
    file = { path: pathOf(header), status: statusOf(header), binary: header.some((l) => l.startsWith("Binary files")), added: 0, deleted: 0, hunks: [] };
    files.push(file);
    header = null;
  };
  for (const line of lines) {
    if (line.startsWith("diff ")) { finishHeader(); header = [line]; hunk = null; continue; }
    const m = line.match(HUNK);
    if (m && (header || file)) {
      finishHeader();
      oldNo = Number(m[1]);
      newNo = Number(m[2]);
      hunk = { header: line, lines: [] };
      file.hunks.push(hunk);
      continue;
    }
    if (header) { header.push(line); continue; }
    if (!hunk) continue;
    if (line.startsWith("+")) {
      hunk.lines.push({ kind: "add", text: line.slice(1), old: null, new: newNo, number: newNo });
      newNo += 1;
      file.added += 1;
    } else if (line.startsWith("-")) {
      hunk.lines.push({ kind: "del", text: line.slice(1), old: oldNo, new: null, number: oldNo });
      oldNo += 1;
      file.deleted += 1;
    } else if (line.startsWith("\\")) {
      hunk.lines.push({ kind: "note", text: line, old: null, new: null, number: null });
    } else {
      hunk.lines.push({ kind: "ctx", text: line.slice(1), old: oldNo, new: newNo, number: newNo });
      oldNo += 1;
      newNo += 1;
    }
  }
  finishHeader();
  return files;
}
