// A small menu of choices behind a button (a kanban card's status): it opens in the top layer
// (a popover, so no column or scrolled box clips it) beside its button; the arrow keys move
// between its choices (a letter, to the next that starts with it), Enter picks one, Escape, Tab
// or a click elsewhere closes it and the focus goes back to the button.

import { h } from "./dom.js";

const GAP = 4; // px between the button and the menu

/**
 * The button and its menu. `choices` is [[value, words]]; `current` is checked; `onChoose(value)`
 * runs once the menu closed. `onToggle(open)` says when it opens and closes (a list that
 * redraws itself waits while it is open). Returns { button, menu, open() }.
 */
export function choiceMenu({ label, title, choices, current, onChoose, onToggle = () => {} }) {
  const trigger = h("button", {
    type: "button", class: "btn ghost menu-trigger", "aria-label": label, title: label,
    "aria-haspopup": "menu", "aria-expanded": "false",
  }, h("span", { "aria-hidden": "true" }, "⋯"));
  const items = choices.map(([value, words]) => h("button", {
    type: "button", role: "menuitemradio", class: "menu-item", tabindex: -1, "data-value": value,
    "aria-checked": String(value === current),
  }, words));
  const menu = h("div", { class: "choice-menu", popover: "auto", role: "menu", "aria-label": title },
    h("div", { class: "menu-title", "aria-hidden": "true" }, title), items);
  trigger.popoverTargetElement = menu;

  function place() {
    const at = trigger.getBoundingClientRect();
    const width = menu.offsetWidth;
    const height = menu.offsetHeight;
    const left = Math.max(GAP, Math.min(at.right - width, window.innerWidth - width - GAP));
    const below = at.bottom + GAP + height <= window.innerHeight;
    menu.style.left = `${left}px`;
    menu.style.top = `${below ? at.bottom + GAP : Math.max(GAP, at.top - GAP - height)}px`;
  }

  menu.addEventListener("toggle", (e) => {
    const open = e.newState === "open";
    trigger.setAttribute("aria-expanded", String(open));
    if (open) {
      place();
      (items.find((i) => i.getAttribute("aria-checked") === "true") || items[0]).focus();
    }
    onToggle(open);
  });
  menu.addEventListener("keydown", (e) => {
    if (e.key === "Tab") { menu.hidePopover(); return; } // the focus goes on from the button
    const at = items.indexOf(document.activeElement);
    let to = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: items.length - 1 }[e.key];
    if (to === undefined && e.key.length === 1 && /\S/.test(e.key) && !e.ctrlKey && !e.metaKey && !e.altKey) {
      // A letter: the next choice that starts with it (never a page shortcut).
      e.stopPropagation();
      const key = e.key.toLowerCase();
      const after = [...items.slice(at + 1), ...items.slice(0, at + 1)];
      const found = after.find((i) => i.textContent.trim().toLowerCase().startsWith(key));
      if (found) to = items.indexOf(found);
    }
    if (to === undefined) return;
    e.preventDefault();
    e.stopPropagation();
    items[(to + items.length) % items.length].focus();
  });
  for (const item of items) {
    item.addEventListener("click", () => {
      menu.hidePopover();
      onChoose(item.dataset.value);
    });
  }
  return { button: trigger, menu, open: () => menu.showPopover() };
}
