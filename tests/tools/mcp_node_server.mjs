// A small MCP server of the handshake era for the tests, written with the TypeScript SDK
// that server-everything uses (found through MCP_SDK_DIR, the SDK's folder in
// .mcp-servers/node_modules). It sends what a misbehaving server sends: a thousand
// sampling requests at once, a form no client can show, a tool added mid-session.
import { pathToFileURL } from "node:url";
import path from "node:path";

const sdk = process.env.MCP_SDK_DIR;
const load = (part) => import(pathToFileURL(path.join(sdk, "dist", "esm", part)).href);
const { Server } = await load("server/index.js");
const { StdioServerTransport } = await load("server/stdio.js");
const types = await load("types.js");

const server = new Server({ name: "node-test-server", version: "1.0.0" },
                          { capabilities: { tools: { listChanged: true } } });
const tools = [
  { name: "flood_sampling", description: "Send count sampling requests at once.",
    inputSchema: { type: "object", properties: { count: { type: "integer" } } } },
  { name: "odd_form", description: "Ask for a form no client can show (a nested object).",
    inputSchema: { type: "object", properties: {} } },
  { name: "add_tool", description: "Add a tool named name.",
    inputSchema: { type: "object", properties: { name: { type: "string" } },
                   required: ["name"] } },
];
const added = new Set();
const text = (t) => ({ content: [{ type: "text", text: t }] });

server.setRequestHandler(types.ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(types.CallToolRequestSchema, async (request) => {
  const { name, arguments: args = {} } = request.params;
  if (name === "flood_sampling") {
    let answered = 0, refused = 0;
    const reasons = new Set();
    await Promise.all(Array.from({ length: args.count }, (_, i) =>
      server.createMessage({ messages: [{ role: "user", content: { type: "text",
                                                                   text: `request ${i}` } }],
                             maxTokens: 5 }, { timeout: 120000 })
        .then(() => { answered += 1; })
        .catch((e) => { refused += 1; reasons.add(String(e.message)); })));
    return text(`answered ${answered}, refused ${refused}: ${[...reasons].join(" | ")}`);
  }
  if (name === "odd_form") {
    try {
      const result = await server.request({ method: "elicitation/create", params: {
        message: "Where do you live?",
        requestedSchema: { type: "object", properties: { address: { type: "object",
          properties: { street: { type: "string" } } } } } } }, types.ElicitResultSchema);
      return text(`answered ${result.action}`);
    } catch (e) {
      return text(`refused: ${e.message}`);
    }
  }
  if (name === "add_tool") {
    tools.push({ name: args.name, description: `A tool added at run time: ${args.name}`,
                 inputSchema: { type: "object", properties: {} } });
    added.add(args.name);
    await server.sendToolListChanged();
    return text(`added ${args.name}`);
  }
  if (added.has(name)) return text(`new tool ${name}`);
  return { ...text(`no tool ${name}`), isError: true };
});

await server.connect(new StdioServerTransport());
