// The run's Paperclip tools for Pi, which has no MCP client of its own.
//
// Loaded by `pi -e <this file>` (paperclip-pi's driver). At load it lists the
// tools of the run's MCP endpoint ($PAPERCLIP_MCP_URL, bearer token in
// $PAPERCLIP_MCP_BEARER_TOKEN) and registers each as a Pi tool named
// `paperclip_<tool>`, with the tool's own JSON Schema. A call is a JSON-RPC
// `tools/call` over HTTP POST; a refusal (MCP `isError`) is thrown, which Pi
// reports to the model as a failed tool result it can act on.

const PROTOCOL_VERSION = "2025-06-18";
const PREFIX = "paperclip_";

function endpoint() {
  const url = process.env.PAPERCLIP_MCP_URL;
  const token = process.env.PAPERCLIP_MCP_BEARER_TOKEN;
  return url && token ? { url, token } : null;
}

function answerIn(text, contentType, id) {
  if (!contentType.startsWith("text/event-stream")) return JSON.parse(text);
  for (const event of text.replace(/\r\n/g, "\n").split("\n\n")) {
    const data = event
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trimStart())
      .join("\n");
    if (!data) continue;
    try {
      const message = JSON.parse(data);
      if (message && message.id === id) return message;
    } catch {
      // not JSON: skip
    }
  }
  return null;
}

class ToolEndpoint {
  constructor({ url, token }) {
    this.url = url;
    this.token = token;
    this.nextId = 1;
    this.session = null;
    this.ready = null;
  }

  async post(message, signal) {
    const headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${this.token}`,
    };
    if (this.session) headers["mcp-session-id"] = this.session;
    const response = await fetch(this.url, {
      method: "POST",
      headers,
      body: JSON.stringify(message),
      signal,
    });
    const session = response.headers.get("mcp-session-id");
    if (session) this.session = session;
    const text = await response.text();
    if (!response.ok) throw new Error(`HTTP ${response.status} from the Paperclip tools: ${text.slice(0, 500)}`);
    if (message.id === undefined) return null;
    const answer = answerIn(text, response.headers.get("content-type") || "", message.id);
    if (!answer) throw new Error(`no answer to ${message.method} from the Paperclip tools`);
    if (answer.error) throw new Error(`${message.method}: ${answer.error.message || JSON.stringify(answer.error)}`);
    return answer.result;
  }

  async rpc(method, params, signal) {
    if (method !== "initialize") await this.initialize();
    return this.post({ jsonrpc: "2.0", id: this.nextId++, method, params }, signal);
  }

  initialize() {
    this.ready ??= (async () => {
      await this.post({
        jsonrpc: "2.0",
        id: this.nextId++,
        method: "initialize",
        params: {
          protocolVersion: PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: "paperclip-pi-extension", version: "0.1.0" },
        },
      });
      await this.post({ jsonrpc: "2.0", method: "notifications/initialized" });
    })();
    return this.ready;
  }
}

export default async function paperclipTools(pi) {
  const where = endpoint();
  if (!where) return; // a run without tools
  const tools = new ToolEndpoint(where);
  const listed = await tools.rpc("tools/list", {});
  for (const tool of listed.tools || []) {
    pi.registerTool({
      name: PREFIX + tool.name,
      label: tool.title || tool.name,
      description: tool.description || tool.name,
      parameters: tool.inputSchema || { type: "object", properties: {} },
      async execute(_toolCallId, params, signal) {
        const result = await tools.rpc("tools/call", { name: tool.name, arguments: params || {} }, signal);
        const content = (result.content || []).filter((item) => item.type === "text");
        if (result.isError) {
          throw new Error(content.map((item) => item.text).join("\n") || `${tool.name} failed`);
        }
        return {
          content: content.length ? content : [{ type: "text", text: JSON.stringify(result.structuredContent ?? {}) }],
          details: { structured: result.structuredContent ?? null },
        };
      },
    });
  }
}
