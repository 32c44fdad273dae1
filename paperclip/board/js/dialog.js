// Making something happens behind a button: "New issue" opens its form in a dialog, so a list is
// a list. The form is the view's own; the dialog only shows it, and closes once it is done.

import { button, h } from "./dom.js";

/**
 * `form` (with its own heading) in a modal dialog, opened by a button labelled `label`.
 * Returns { button, dialog, open(), close() }; Esc or Close closes it.
 */
export function formDialog(form, { label, title = label, kind = "primary", onOpen = () => {} } = {}) {
  const close = button("Close", { kind: "ghost close", "aria-label": `Close: ${title}` });
  const dialog = h("dialog", { class: "form-dialog", "aria-label": title }, close, form);
  close.addEventListener("click", () => dialog.close());
  // A click on the backdrop (outside the box) closes it too.
  dialog.addEventListener("click", (e) => { if (e.target === dialog) dialog.close(); });
  const open = () => {
    if (!dialog.isConnected) document.body.append(dialog);
    if (!dialog.open) dialog.showModal();
    onOpen();
    const first = form.querySelector("input:not([type=hidden]), select, textarea");
    if (first) first.focus();
  };
  const opener = button(label, { kind, onclick: open, "aria-haspopup": "dialog" });
  return { button: opener, dialog, open, close: () => dialog.close() };
}

/** A list's empty state: what it is, and what to do next (with the button that does it). */
export function emptyState(text, ...actions) {
  return h("div", { class: "empty-state", "data-empty": "" }, h("p", {}, text), actions.length ? h("p", {}, ...actions) : null);
}
