// A provider config's form, made from the provider's JSON Schema (GET /api/providers): a
// field per property (a menu for an enum, a number box within its bounds, a text box, yes/no),
// a JSON box for what a field cannot show (an object, a union), and "Edit as JSON" for the
// whole config. Empty fields are left out: the provider's default applies. The server checks
// the config again and names any field it refuses (shown next to that field).

import { clear, h } from "./dom.js";

const NOT_SET = "";
let uid = 0;

const typesOf = (schema) => (Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : []);

/** How a property is edited: "enum", "number", "integer", "boolean", "string" or "json". */
export function widgetOf(schema) {
  if (Array.isArray(schema.enum)) return "enum";
  const types = typesOf(schema).filter((t) => t !== "null");
  if (types.length !== 1) return "json";
  return ["number", "integer", "boolean", "string"].includes(types[0]) ? types[0] : "json";
}

const ACRONYMS = { url: "URL", mcp: "MCP", cli: "CLI", id: "ID", json: "JSON", api: "API" };

function labelOf(key) {
  const text = key.split("_").map((w) => ACRONYMS[w] || w).join(" ");
  return text[0].toUpperCase() + text.slice(1);
}

function control(key, schema, { launchProfiles = [] } = {}) {
  const id = `cfg${++uid}`;
  const kind = widgetOf(schema);
  let input;
  let datalist = null; // the launch profiles the plugin offers by default, as suggestions
  if (kind === "enum") {
    input = h("select", { id, name: key }, h("option", { value: NOT_SET }, "(default)"),
      schema.enum.map((v) => h("option", { value: JSON.stringify(v) }, v === null ? "none" : String(v))));
  } else if (kind === "boolean") {
    input = h("select", { id, name: key }, h("option", { value: NOT_SET }, "(default)"),
      h("option", { value: "true" }, "Yes"), h("option", { value: "false" }, "No"));
  } else if (kind === "number" || kind === "integer") {
    input = h("input", { id, name: key, type: "number", inputmode: "decimal", step: kind === "integer" ? 1 : "any",
      min: schema.minimum, max: schema.maximum });
  } else if (kind === "string") {
    const list = key === "launch" && launchProfiles.length ? `${id}-list` : null;
    input = h("input", { id, name: key, type: "text", maxlength: schema.maxLength, spellcheck: "false", autocomplete: "off", list });
    if (list) datalist = h("datalist", { id: list }, launchProfiles.map((p) => h("option", { value: p })));
  } else {
    input = h("textarea", { id, name: key, rows: 2, spellcheck: "false", placeholder: "JSON" });
  }
  const bounds = (kind === "number" || kind === "integer") && (schema.minimum !== undefined || schema.maximum !== undefined)
    ? ` (${schema.minimum ?? "…"} to ${schema.maximum ?? "…"})` : "";
  const hint = h("small", { class: "muted hint", id: `${id}-hint` }, (schema.description || (kind === "json" ? "JSON" : "")) + bounds);
  const error = h("small", { class: "error field-error", id: `${id}-error`, hidden: true });
  input.setAttribute("aria-describedby", `${id}-hint ${id}-error`);
  // A refusal is about the value it was given: changing the value clears it.
  input.addEventListener("input", () => { error.hidden = true; input.removeAttribute("aria-invalid"); });
  const wrap = h("div", { class: "field", "data-config-key": key },
    h("label", { for: id }, labelOf(key)), input, datalist, hint, error);

  return {
    key, kind, node: wrap,
    get() {
      const raw = input.value.trim();
      if (raw === NOT_SET) return undefined;
      if (kind === "enum") return JSON.parse(raw);
      if (kind === "boolean") return raw === "true";
      if (kind === "number" || kind === "integer") return Number(raw);
      if (kind === "string") return raw;
      return JSON.parse(raw); // json: a SyntaxError names the field (see collect)
    },
    set(value) {
      if (value === undefined) input.value = NOT_SET;
      else if (kind === "enum") input.value = JSON.stringify(value);
      else if (kind === "boolean") input.value = value ? "true" : "false";
      else if (kind === "json") input.value = JSON.stringify(value);
      else input.value = value === null ? "" : String(value);
    },
    problem(text) {
      error.hidden = !text;
      clear(error).append(text || "");
      input.toggleAttribute("aria-invalid", Boolean(text));
    },
  };
}

/**
 * The form of one provider's config. `node` goes in a form; `value()` is the config (or throws
 * with a message naming the field); `set(config)` fills it; `problems(details)` shows the API's
 * refusal (`details[].field` = `provider_config.<key>`) next to each field.
 */
export function configForm(provider) {
  const schema = provider.config_schema || { type: "object", properties: {} };
  const properties = schema.properties || {};
  const required = new Set(schema.required || []);
  // The launch profile first: it picks the program; then the schema's own order.
  const keys = Object.keys(properties).sort((a, b) => (b === "launch") - (a === "launch"));
  const controls = keys.map((key) => control(key, properties[key], { launchProfiles: provider.launch_profiles || [] }));
  for (const c of controls) if (required.has(c.key)) c.node.querySelector("input,select,textarea").required = true;
  let extra = {}; // keys the fields do not show (from JSON mode, or an agent's stored config)

  const fields = h("div", { class: "config-fields" }, controls.map((c) => c.node));
  const json = h("textarea", { rows: 8, spellcheck: "false", "aria-label": "Provider configuration (JSON)", class: "config-json" });
  const jsonField = h("div", { class: "field", hidden: true }, h("label", {}, "Provider configuration (JSON)"), json);
  jsonField.querySelector("label").htmlFor = json.id = `cfg${++uid}`;
  const advanced = h("input", { type: "checkbox", "data-config-json": "" });
  const problem = h("p", { class: "error", role: "alert", hidden: true });
  const node = h("fieldset", { class: "config-form", "data-provider": provider.name },
    h("legend", {}, `${provider.name} settings`),
    provider.description ? h("p", { class: "muted" }, provider.description) : null,
    fields, jsonField,
    h("label", { class: "check" }, advanced, " Edit as JSON (advanced)"), problem);

  function collect() {
    const config = { ...extra };
    for (const c of controls) {
      let value;
      try { value = c.get(); } catch { throw new Error(`${labelOf(c.key)} is not JSON`); }
      if (value === undefined) delete config[c.key];
      else config[c.key] = value;
    }
    return config;
  }

  function fill(config) {
    extra = Object.fromEntries(Object.entries(config || {}).filter(([k]) => !(k in properties)));
    for (const c of controls) c.set((config || {})[c.key]);
  }

  advanced.addEventListener("change", () => {
    problem.hidden = true;
    if (advanced.checked) {
      try { json.value = JSON.stringify(collect(), null, 2); } catch (e) { advanced.checked = false; show(e.message); return; }
    } else {
      let parsed;
      try { parsed = JSON.parse(json.value || "{}"); } catch { advanced.checked = true; show("The configuration is not JSON."); return; }
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) { advanced.checked = true; show("The configuration is a JSON object."); return; }
      fill(parsed);
    }
    fields.hidden = advanced.checked;
    jsonField.hidden = !advanced.checked;
  });

  function show(text) {
    problem.hidden = false;
    clear(problem).append(text);
  }

  node.value = () => {
    if (!advanced.checked) return collect();
    const parsed = JSON.parse(json.value || "{}");
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("The configuration is a JSON object.");
    return parsed;
  };
  node.set = (config) => { fill(config); if (advanced.checked) json.value = JSON.stringify(config || {}, null, 2); };
  node.problems = (details) => {
    for (const c of controls) c.problem("");
    problem.hidden = true;
    const unplaced = [];
    for (const d of details || []) {
      const key = String(d.field || "").replace(/^provider_config\.?/, "").split(".")[0];
      const c = controls.find((x) => x.key === key);
      if (c && !advanced.checked) c.problem(d.message); else unplaced.push(`${d.field}: ${d.message}`);
    }
    if (unplaced.length) show(unplaced.join("; "));
  };
  return node;
}
