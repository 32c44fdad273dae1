// A run's log as people read it: streamed text merged into messages, each tool call with its
// arguments, result and duration, commands with their exit code and output, progress notes,
// turns and how they ended, the workspace lines. The shapes of every provider we ship (Codex,
// OpenCode, Pi, the OpenClaw gateway) and our own event types; any other type is one line.
// The raw log (one line per stored event) stays one click away.

import { append as appendAll, clear, duration, h, statusName } from "./dom.js";
import { markdown } from "./markdown.js";
import { WORKSPACE_EVENTS, eventList, workProductLine } from "./views/events.js";

const MAX_ENTRIES = 2000;
const PREVIEW = 160;

/** Events that only say what another event already says, or how the provider keeps house. */
const QUIET = new Set([
  "thread/started", "thread/status/changed", "mcpServer/startupStatus/updated", "thread/tokenUsage/updated",
  "item/reasoning/summaryTextDelta", "item/reasoning/textDelta", "item/reasoning/summaryPartAdded",
  "item/commandExecution/outputDelta", "account/rateLimits/updated", "turn/diff/updated", "turn/plan/updated",
  "session.created", "session.updated", "message.updated", "session.diff", "session.compacted", "file.edited",
  "turn_start", "turn_end", "tool_execution_update", "agent.usage", "chat.final", "chat.delta",
  "serverRequest/resolved",
]);

/** Events of a provider's protocol in a person's words; the raw type stays behind "Raw". */
const EVENT_WORDS = [
  [/requestApproval$/, "Asked for approval"], [/commandExecution/, "Command"], [/fileChange/, "File change"],
  [/mcpToolCall|tool/i, "Tool"], [/reasoning/i, "Thinking"], [/^turn\//, "Turn"], [/error/i, "Error"],
  [/^session\./, "Session"], [/^run\./, "Run"], [/^thread\//, "Conversation"], [/message/i, "Message"],
];
export function eventWords(type) {
  const found = EVENT_WORDS.find(([pattern]) => pattern.test(String(type)));
  return found ? found[1] : "Provider event";
}

const stripServer = (name) => String(name || "").replace(/^paperclip__?/, "");
const isOurs = (name, server) => server === "paperclip" || /^paperclip__?/.test(String(name || ""));
const isShell = (name) => ["bash", "shell", "exec", "exec_command"].includes(String(name || ""));
const json = (value) => (typeof value === "string" ? value : JSON.stringify(value, null, 2));
const dig = (value, ...keys) => keys.reduce((v, k) => (v && typeof v === "object" ? v[k] : undefined), value);
const firstLine = (text) => {
  const lines = String(text || "").split("\n").filter((l) => l.trim());
  const line = lines.find((l) => !l.startsWith("#")) || lines[0] || ""; // past a Markdown heading
  return line.length > PREVIEW ? `${line.slice(0, PREVIEW)}…` : line;
};

/** The text parts of a message's `content` (a list of parts, or a string). */
function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter((p) => p && (p.type === "text" || p.type === "input_text" || p.text))
    .map((p) => p.text || "").join("");
}

/** A tool result as a person reads it: its text, or its JSON. */
function resultText(result) {
  if (result === null || result === undefined) return "";
  if (typeof result === "string") return result;
  if (Array.isArray(result.content)) {
    const text = textOf(result.content);
    if (text) {
      try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; }
    }
  }
  if (result.structuredContent) return json(result.structuredContent);
  return json(result);
}

const fold = (label, text, open = false) => (text
  ? h("details", { class: "fold", open }, h("summary", {}, label), h("pre", { class: "out" }, text))
  : null);

/**
 * The transcript of one run. `node.add(event)` takes the log's events in order (replayed or
 * live); `node.journal(calls)` gives the run's tool journal, whose arguments, results and
 * timings fill in what a provider's events leave out.
 */
export function transcript(runId, { compact = false } = {}) {
  const list = h("ol", { class: "transcript", "aria-label": "Transcript", "data-run": runId });
  const raw = eventList(runId);
  raw.hidden = true;
  const toggle = h("button", { type: "button", class: "link-button", "aria-pressed": "false", "data-raw-toggle": "" }, "Raw events");
  toggle.addEventListener("click", () => {
    const showRaw = raw.hidden;
    raw.hidden = !showRaw;
    list.hidden = showRaw;
    toggle.setAttribute("aria-pressed", String(showRaw));
    clear(toggle).append(showRaw ? "Transcript" : "Raw events");
  });
  const node = h("div", { class: `transcript-box${compact ? " compact" : ""}` },
    h("div", { class: "transcript-tools" }, toggle), list, raw);

  const entries = new Map(); // key -> entry state
  const tools = []; // tool entries of our server, in order: the journal fills them in
  let calls = [];
  const turnsSeen = new Set();
  const turnsEnded = new Set();
  const prompts = new Set(); // turns whose first person's message (the prompt) was shown
  const opencodeUsers = new Set(); // OpenCode message ids of the person's messages
  let piMessage = null; // the assistant message Pi is streaming

  // Follow the tail while the reader is there; leave them be once they scrolled up.
  const nearEnd = () => list.scrollHeight - list.scrollTop - list.clientHeight < 40;

  function append(li) {
    const atEnd = nearEnd();
    list.append(li);
    if (atEnd) list.scrollTop = list.scrollHeight;
    if (list.childElementCount > MAX_ENTRIES) list.firstElementChild.remove();
    return li;
  }

  function line(kind, seq, ...children) {
    return append(h("li", { class: `t-${kind}`, "data-kind": kind, "data-seq": seq }, ...children));
  }

  // Messages: one per item, deltas appended, the completed text replacing them.
  function message(key, event, { text, delta, done, role = "agent" }) {
    let entry = entries.get(key);
    if (!entry) {
      if (!text && !delta && !done) return; // nothing to show yet: made on the first text
      if (done && !text) return;
      const body = h("div", { class: "text" });
      const li = line(role === "agent" ? "message" : "user", event.seq,
        h("span", { class: "who" }, role === "agent" ? "Agent" : "You"), body);
      entry = { li, body, text: "" };
      entries.set(key, entry);
    }
    const atEnd = nearEnd();
    entry.text = text !== undefined && text !== null && (done || text.length >= entry.text.length) ? text : entry.text + (delta || "");
    // While it streams, plain text; once complete, its Markdown, rendered and sanitised.
    clear(entry.body).append(done && role === "agent" ? markdown(entry.text) : entry.text);
    entry.li.dataset.state = done ? "done" : "streaming";
    if (atEnd) list.scrollTop = list.scrollHeight;
  }

  function personMessage(turn, key, event, text) {
    if (entries.has(key) || !text) return;
    const first = !prompts.has(turn);
    prompts.add(turn);
    const li = first
      ? line("prompt", event.seq, h("details", { class: "fold" },
        h("summary", {}, h("span", { class: "who" }, "Prompt"), " ", h("span", { class: "muted" }, firstLine(text))),
        h("pre", { class: "out" }, text)))
      : line("user", event.seq, h("span", { class: "who" }, "Steered in"), h("div", { class: "text" }, text));
    entries.set(key, { li });
  }

  // Tool calls and commands: made when they start, completed when they end.
  function call(key, event, patch) {
    let entry = entries.get(key);
    if (!entry) {
      entry = { key, args: undefined, result: undefined, error: undefined, status: "running", startMs: undefined, endMs: undefined, durationMs: undefined, seenAt: Date.parse(event.created_at) || undefined };
      entry.li = line(patch.command !== undefined || isShell(patch.name) ? "command" : "tool", event.seq);
      entries.set(key, entry);
      if (isOurs(patch.name, patch.server)) tools.push(entry);
    }
    for (const [k, v] of Object.entries(patch)) if (v !== undefined) entry[k] = v;
    if (patch.status && patch.status !== "running" && entry.durationMs === undefined && entry.endMs === undefined) {
      const at = Date.parse(event.created_at);
      if (entry.seenAt && at) entry.approxMs = at - entry.seenAt; // when the provider gives no times
    }
    drawCall(entry);
    if (calls.length && tools.includes(entry) && !entry.call) fillFromJournal();
  }

  function drawCall(entry) {
    const name = stripServer(entry.name);
    const took = entry.durationMs ?? (entry.startMs && entry.endMs ? entry.endMs - entry.startMs : undefined)
      ?? entry.journalMs ?? entry.approxMs;
    const status = entry.status || "running";
    const openDetails = [...entry.li.querySelectorAll("details")].map((d) => d.open);
    const isCommand = entry.li.dataset.kind === "command";
    // A refused call: its result is the refusal, when the provider gives no error of its own.
    const error = entry.error || (status === "failed" && !isCommand ? resultText(entry.result) : "");
    entry.li.dataset.status = status;
    entry.li.dataset.tool = name;
    const head = isCommand
      ? [h("span", { class: "who" }, "Command"), " ", h("code", { class: "cmd" }, entry.command ?? dig(entry.args, "command") ?? name)]
      : [h("span", { class: "who" }, "Tool"), " ", h("code", { class: "tool-name" }, name)];
    const facts = [statusName(status)];
    if (entry.exitCode !== undefined && entry.exitCode !== null) facts.push(`exit ${entry.exitCode}`);
    if (took !== undefined) facts.push(duration(took));
    const args = entry.args !== undefined && !(isCommand && Object.keys(entry.args || {}).length <= 2)
      ? json(entry.args) : "";
    const atEnd = nearEnd();
    appendAll(clear(entry.li), [
      h("div", { class: "call-head" }, ...head, " ", h("span", { class: "muted facts" }, facts.join(" · "))),
      isCommand ? null : (args && args !== "{}" ? fold("Arguments", args) : h("div", { class: "muted small" }, entry.args === undefined ? "Arguments not reported by the provider" : "No arguments")),
      error ? h("div", { class: "error call-error" }, firstLine(error), error.length > PREVIEW ? fold("Whole error", error) : null) : null,
      error && error === resultText(entry.result) ? null : fold(isCommand ? "Output" : "Result", entry.output ?? resultText(entry.result)),
    ]);
    if (atEnd) list.scrollTop = list.scrollHeight;
    entry.li.querySelectorAll("details").forEach((d, i) => { if (openDetails[i]) d.open = true; });
  }

  function turnStarted(event) {
    if (turnsSeen.has(event.turn)) return;
    turnsSeen.add(event.turn);
    line("turn", event.seq, h("span", { class: "who" }, `Turn ${event.turn || 1}`), " started");
  }

  function turnEnded(event, how, why) {
    if (turnsEnded.has(event.turn)) return;
    turnsEnded.add(event.turn);
    turnsSeen.add(event.turn);
    line("turn", event.seq, h("span", { class: "who" }, `Turn ${event.turn || 1}`), ` ended: ${statusName(how)}`,
      why ? h("span", { class: "muted" }, ` · ${why}`) : null).dataset.how = how;
  }

  // Each provider's shapes.
  function codex(event, p) {
    const item = p.item || {};
    const done = event.type === "item/completed";
    if (event.type === "item/agentMessage/delta") return message(p.itemId, event, { delta: p.delta });
    if (event.type === "turn/started") return turnStarted(event);
    if (event.type === "turn/completed") {
      const turn = p.turn || {};
      return turnEnded(event, turn.status || "completed", dig(turn, "error", "message"));
    }
    if (event.type === "error") return line("error", event.seq, h("span", { class: "who" }, "Error"), " ", dig(p, "error", "message") || json(p));
    switch (item.type) {
      case "agentMessage": return message(item.id, event, { text: item.text, done });
      case "userMessage": return personMessage(event.turn, item.id, event, textOf(item.content));
      case "mcpToolCall": return call(item.id, event, {
        name: item.tool, server: item.server, args: item.arguments,
        status: done ? (item.status === "completed" ? "completed" : "failed") : "running",
        result: item.result ?? undefined, error: dig(item, "error", "message") ?? (typeof item.error === "string" ? item.error : undefined),
        durationMs: item.durationMs ?? undefined,
      });
      case "commandExecution": return call(item.id, event, {
        command: dig(item, "commandActions", 0, "command") || item.command,
        status: done ? (item.status === "completed" && !item.exitCode ? "completed" : item.status || "failed") : "running",
        exitCode: item.exitCode ?? undefined, output: item.aggregatedOutput ?? undefined, durationMs: item.durationMs ?? undefined,
      });
      case "reasoning": {
        const text = [textOf(item.summary), textOf(item.content)].filter(Boolean).join("\n");
        if (done && text) line("reasoning", event.seq, fold("Reasoning", text));
        return undefined;
      }
      case "fileChange": {
        if (!done) return undefined;
        const paths = (item.changes || []).map((c) => `${c.path}${c.kind ? ` (${c.kind.type || c.kind})` : ""}`);
        return line("files", event.seq, h("span", { class: "who" }, "Files"), ` ${statusName(item.status)}: `, paths.join(", ") || "none");
      }
      default: return item.type && !done ? undefined : other(event, p);
    }
  }

  function opencode(event, p) {
    if (event.type === "message.updated" && dig(p, "info", "role") === "user") opencodeUsers.add(p.info.id);
    if (event.type === "message.part.delta") return message(p.partID, event, { delta: p.field === "text" ? p.delta : "" });
    if (event.type === "session.status") {
      const type = dig(p, "status", "type");
      if (type === "busy") return turnStarted(event);
      if (type === "idle") return turnEnded(event, "completed");
      return undefined;
    }
    if (event.type === "session.idle") return turnEnded(event, "completed");
    if (event.type === "session.error") return line("error", event.seq, h("span", { class: "who" }, "Error"), " ", dig(p, "error", "data", "message") || dig(p, "error", "name") || json(p));
    const part = p.part || {};
    if (part.type === "text") {
      if (opencodeUsers.has(part.messageID)) return personMessage(event.turn, part.id, event, part.text);
      return message(part.id, event, { text: part.text, done: Boolean(dig(part, "time", "end")) });
    }
    if (part.type === "tool") {
      const state = part.state || {};
      const status = { pending: "running", running: "running", completed: "completed", error: "failed" }[state.status] || state.status;
      return call(part.id, event, {
        name: part.tool, args: state.input && Object.keys(state.input).length ? state.input : undefined,
        command: isShell(part.tool) ? dig(state, "input", "command") : undefined,
        status, output: isShell(part.tool) ? state.output : undefined,
        result: isShell(part.tool) ? undefined : state.output, error: state.error,
        exitCode: dig(state, "metadata", "exit"), startMs: dig(state, "time", "start"), endMs: dig(state, "time", "end"),
      });
    }
    if (part.type === "reasoning" && dig(part, "time", "end") && part.text) return line("reasoning", event.seq, fold("Reasoning", part.text));
    if (["step-start", "step-finish", "snapshot", "patch"].includes(part.type)) return undefined;
    return other(event, p);
  }

  function pi(event, p) {
    const msg = p.message || {};
    switch (event.type) {
      case "agent_start": return turnStarted(event);
      case "agent_end": return turnEnded(event, "completed");
      case "message_start":
        if (msg.role === "user") return personMessage(event.turn, `pi-user-${event.seq}`, event, textOf(msg.content));
        if (msg.role === "assistant") piMessage = `pi-${event.seq}`;
        return undefined;
      case "message_update": {
        const update = p.assistantMessageEvent || {};
        if (update.type === "text_delta" && piMessage) message(piMessage, event, { delta: update.delta });
        return undefined;
      }
      case "message_end":
        if (msg.role === "assistant" && piMessage) {
          message(piMessage, event, { text: textOf(msg.content), done: true });
          if (msg.stopReason === "error" && msg.errorMessage) line("error", event.seq, h("span", { class: "who" }, "Error"), " ", msg.errorMessage);
          piMessage = null;
        }
        return undefined;
      case "tool_execution_start": return call(p.toolCallId, event, {
        name: p.toolName, args: p.args, command: isShell(p.toolName) ? dig(p, "args", "command") : undefined, status: "running",
      });
      case "tool_execution_end": return call(p.toolCallId, event, {
        name: p.toolName, status: p.isError ? "failed" : "completed",
        output: isShell(p.toolName) ? resultText(p.result) : undefined,
        result: isShell(p.toolName) ? undefined : p.result, error: p.isError ? resultText(p.result) : undefined,
      });
      default: return other(event, p);
    }
  }

  function gateway(event, p) {
    const data = p.data || {};
    switch (event.type) {
      case "agent.lifecycle":
        if (data.phase === "start") return turnStarted(event);
        if (data.phase === "end") return turnEnded(event, data.aborted ? "interrupted" : "completed", data.stopReason);
        if (data.phase === "error") return turnEnded(event, "failed", data.error || data.message);
        return undefined;
      case "agent.assistant": return message(data.itemId || `gw-${p.runId}`, event, { text: data.text, delta: data.text ? undefined : data.delta });
      case "agent.item":
      case "agent.tool": {
        if (data.kind && data.kind !== "tool") return other(event, p);
        const ended = data.phase === "end" || data.phase === "result";
        return call(data.toolCallId || data.itemId, event, {
          name: data.name, args: data.args ?? undefined, result: data.result ?? undefined,
          status: ended ? (data.status === "failed" || data.isError ? "failed" : "completed") : "running",
          error: data.isError || data.status === "failed" ? (data.error ? json(data.error) : undefined) : undefined,
          startMs: data.startedAt, endMs: data.endedAt,
        });
      }
      case "chat.error": return line("error", event.seq, h("span", { class: "who" }, "Error"), " ", p.errorMessage || json(p));
      case "chat.aborted": return turnEnded(event, "interrupted");
      default: return other(event, p);
    }
  }

  // A provider asking its client (us) for leave: answered at once by the agent's settings.
  function approval(event, p) {
    const type = event.type;
    const what = /fileChange|applyPatch/.test(type) ? "Asked to change files outside its sandbox"
      : /permissions/.test(type) ? "Asked for more permissions"
        : /requestUserInput/.test(type) ? "Asked a question (answered: nobody answers during a run)"
          : "Asked to run a command outside its sandbox";
    const raw = dig(p, "commandActions", 0, "command") || p.command;
    const command = raw ? (Array.isArray(raw) ? raw.join(" ") : String(raw)) : "";
    const reason = typeof p.reason === "string" && p.reason !== "fake" ? p.reason : "";
    return line("approval", event.seq, h("span", { class: "who" }, "Approval"), " ", what,
      command ? [": ", h("code", { class: "cmd" }, firstLine(command))] : null,
      reason ? h("span", { class: "muted" }, ` · ${firstLine(reason)}`) : null);
  }

  // Paperclip's own types, and a line for anything else: in words (the type is in Raw events).
  function other(event, p) {
    if (QUIET.has(event.type)) return undefined;
    if (/requestApproval$|Approval$|requestUserInput$/.test(event.type)) return approval(event, p);
    const brief = p.message || p.text || p.summary || p.status || p.reason || "";
    const said = typeof brief === "string" ? firstLine(brief) : firstLine(json(brief));
    const li = line("other", event.seq, h("span", { class: "who" }, eventWords(event.type)),
      said ? [" ", h("span", { class: "muted" }, said)] : null);
    li.dataset.type = event.type;
    return li;
  }

  function add(event) {
    raw.add(event);
    const p = event.payload || {};
    const type = event.type;
    if (type === "progress") return void line("progress", event.seq, h("span", { class: "who" }, "Progress"), " ", p.summary || "");
    if (WORKSPACE_EVENTS.includes(type)) return void line("workspace", event.seq, h("span", { class: "who" }, type === "workspace.ready" ? "Worktree ready" : "Worktree"), " ", workProductLine(p));
    if (type === "steering_acknowledgement") return void line("steer", event.seq, h("span", { class: "who" }, "Steer"), " taken by the provider");
    if (type === "steer_refused") return void line("steer", event.seq, h("span", { class: "who" }, "Steer"), " refused by the runner");
    if (type === "run.finished") {
      return void line("finished", event.seq, h("span", { class: "who" }, "Run finished:"), " ", statusName(p.status),
        p.error_code ? h("span", { class: "muted" }, ` · ${statusName(p.error_code)}`) : null).setAttribute("data-status", p.status || "");
    }
    if (type.startsWith("item/") || type.startsWith("turn/") || type === "error" || type.startsWith("thread/")) return void codex(event, p);
    if (type.startsWith("message.") || type.startsWith("session.")) return void opencode(event, p);
    if (type.startsWith("agent.") || type.startsWith("chat.")) return void gateway(event, p);
    if (/^(agent|turn|message|tool_execution)_/.test(type)) return void pi(event, p);
    other(event, p);
  }

  /** Fill our tools' calls from the journal: the same tool, the same arguments (a provider
   * that reports none, the gateway, by the nearest time), first where the outcomes agree. */
  function fillFromJournal() {
    const used = new Set(tools.filter((e) => e.call).map((e) => e.call.call_id));
    const agree = (entry, c) => (entry.status === "running" ? c.status === "pending" : (entry.status === "failed") === Boolean(c.is_error));
    for (const strict of [true, false]) {
      for (const entry of tools) {
        if (entry.call) continue;
        const name = stripServer(entry.name);
        const fits = calls.filter((c) => !used.has(c.call_id) && c.tool === name
          && (entry.args === undefined || JSON.stringify(c.arguments) === JSON.stringify(entry.args))
          && (!strict || agree(entry, c)));
        if (!fits.length) continue;
        const gap = (c) => (entry.startMs ? Math.abs(Date.parse(c.created_at) - entry.startMs) : 0);
        const found = fits.reduce((best, c) => (gap(c) < gap(best) ? c : best));
        if (entry.args === undefined && entry.startMs && gap(found) > 10000) continue;
        used.add(found.call_id);
        entry.call = found;
        entry.fromJournal = entry.args === undefined;
        fillCall(entry);
      }
    }
  }

  function fillCall(entry) {
    const c = entry.call;
    if (entry.fromJournal) entry.args = c.arguments;
    if (entry.output === undefined && (entry.result === undefined || entry.resultFromJournal) && c.status === "settled") {
      entry.result = c.result;
      entry.resultFromJournal = true;
    }
    if (c.is_error && !entry.error) entry.error = firstLine(json(dig(c, "result", "error", "message") || c.result));
    if (c.settled_at) entry.journalMs = Date.parse(c.settled_at) - Date.parse(c.created_at);
    entry.li.dataset.journaled = "";
    drawCall(entry);
  }

  node.add = add;
  node.journal = (journal) => {
    if (JSON.stringify(journal) === JSON.stringify(calls)) return;
    calls = journal;
    const byId = new Map(calls.map((c) => [c.call_id, c]));
    for (const entry of tools) {
      const newer = entry.call && byId.get(entry.call.call_id);
      if (newer && JSON.stringify(newer) !== JSON.stringify(entry.call)) { entry.call = newer; fillCall(entry); }
    }
    fillFromJournal();
  };
  node.raw = raw;
  return node;
}
