// An issue's place in its tree: the issue it is a part of, and its own parts with how far
// they are (GET …/issues?parent_id=…), each linked, and what the whole cost with its parts
// (GET …/costs?issue_id=…&with_parts=true).

import { all, get } from "../api.js";
import { badge, clear, h } from "../dom.js";
import { costText } from "../usage.js";
import { issueHref } from "./issues.js";

const CLOSED = new Set(["done", "cancelled"]);

/** The panel; `show(issue)` fills it again (nothing to say: hidden). */
export function issueParts(companyId) {
  const node = h("section", { class: "panel issue-parts", "aria-label": "Parts", hidden: true });
  node.show = async (issue) => {
    const [parts, parent, spent] = await Promise.all([
      all(`/companies/${companyId}/issues?parent_id=${issue.id}&sort=created`),
      issue.parent_id ? get(`/companies/${companyId}/issues/${issue.parent_id}`) : null,
      get(`/companies/${companyId}/costs?issue_id=${issue.id}&with_parts=true&group_by=issue`),
    ]);
    const sig = JSON.stringify([parts.map((p) => [p.id, p.status, p.title]), parent && [parent.id, parent.title], spent.totals]);
    if (node.dataset.sig === sig) return;
    node.dataset.sig = sig;
    node.hidden = !parts.length && !parent;
    const done = parts.filter((p) => p.status === "done").length;
    const open = parts.filter((p) => !CLOSED.has(p.status)).length;
    // Element.append writes a null as the text "null": what is not shown is left out.
    clear(node).append(...[h("h2", {}, "Parts"),
      parent ? h("p", { "data-part-of": parent.identifier }, "Part of ",
        h("a", { href: issueHref(companyId, parent) }, parent.identifier), ` · ${parent.title}`) : null,
      parts.length ? h("p", { class: "parts-progress", "data-done": String(done), "data-open": String(open) },
        `${done} of ${parts.length} done`, open ? ` · ${open} open` : "") : null,
      parts.length ? h("p", { class: "parts-cost" }, "Spent with its parts: ", costText(spent.totals)) : null,
      parts.length ? h("ul", { class: "parts", "aria-label": "Its parts" }, parts.map((p) => h("li", { "data-part": p.identifier, "data-status": p.status },
        h("a", { href: issueHref(companyId, p) }, p.identifier), ` ${p.title} `, badge(p.status)))) : null].filter(Boolean));
  };
  return node;
}
