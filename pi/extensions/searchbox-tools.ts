// Searchbox's tools for Pi (issue 23 item 3). Every tool Pi offers runs in searchbox, over the run's local
// socket (SEARCHBOX_TOOL_SOCKET, with SEARCHBOX_TOOL_TOKEN): the built-ins keep Pi's stock descriptions and
// schemas but execute through searchbox's confined tools; the catalog tools are declared by catalog.json.
// Which tools a run offers (SEARCHBOX_TOOLS, bash only at a confining level) is searchbox's answer to "tools".
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import {
  createBashToolDefinition,
  createEditToolDefinition,
  createFindToolDefinition,
  createGrepToolDefinition,
  createLsToolDefinition,
  createReadToolDefinition,
  createWriteToolDefinition,
} from "@earendil-works/pi-coding-agent";
import { readFileSync } from "node:fs";
import { createConnection, type Socket } from "node:net";

type Answer = { id?: number; text?: string; is_error?: boolean; tools?: string[]; catalog?: string; descriptions?: string };
type CatalogEntry = { name: string; description: string; brief: string; parameters: Record<string, unknown> };

const BUILTINS: Record<string, (cwd: string) => any> = {
  read: createReadToolDefinition,
  bash: createBashToolDefinition,
  edit: createEditToolDefinition,
  write: createWriteToolDefinition,
  grep: createGrepToolDefinition,
  find: createFindToolDefinition,
  ls: createLsToolDefinition,
};

class ToolSocket {
  private buffer = "";
  private nextId = 0;
  private pending = new Map<number, (answer: Answer) => void>();
  private socket: Socket;

  constructor(path: string, private token: string) {
    this.socket = createConnection(path);
    this.socket.setEncoding("utf8");
    this.socket.on("data", (chunk: string) => {
      this.buffer += chunk;
      let newline: number;
      while ((newline = this.buffer.indexOf("\n")) >= 0) {  // LF only, as the answers are written
        const line = this.buffer.slice(0, newline);
        this.buffer = this.buffer.slice(newline + 1);
        const answer = JSON.parse(line) as Answer;
        this.pending.get(answer.id as number)?.(answer);
        this.pending.delete(answer.id as number);
      }
    });
    const fail = (why: string) => {
      for (const resolve of this.pending.values()) resolve({ text: `searchbox's tool server is gone (${why})`, is_error: true });
      this.pending.clear();
    };
    this.socket.on("error", (error) => fail(String(error)));
    this.socket.on("close", () => fail("closed"));
  }

  ask(request: Record<string, unknown>): Promise<Answer> {
    const id = ++this.nextId;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.socket.write(JSON.stringify({ ...request, id, token: this.token }) + "\n");
    });
  }
}

export default async function (pi: ExtensionAPI) {
  const path = process.env.SEARCHBOX_TOOL_SOCKET;
  const token = process.env.SEARCHBOX_TOOL_TOKEN;
  if (!path || !token) throw new Error("searchbox-tools: SEARCHBOX_TOOL_SOCKET and SEARCHBOX_TOOL_TOKEN must be set");
  const tools = new ToolSocket(path, token);
  const offer = await tools.ask({ op: "tools" });
  const catalog = new Map<string, CatalogEntry>(
    (JSON.parse(readFileSync(offer.catalog as string, "utf8")).tools as CatalogEntry[]).map((entry) => [entry.name, entry]),
  );

  const execute = async (toolCallId: string, name: string, args: unknown) => {
    const answer = await tools.ask({ op: "call", call_id: toolCallId, name, arguments: args ?? {} });
    if (answer.is_error) throw new Error(answer.text ?? "the tool failed");  // Pi marks the result as an error
    return { content: [{ type: "text" as const, text: answer.text ?? "" }], details: {} };
  };

  for (const name of offer.tools ?? []) {
    const builtin = BUILTINS[name];
    if (builtin) {
      const stock = builtin(process.cwd());  // Pi's own name, description, schema and prompt lines
      pi.registerTool({ ...stock, execute: (id: string, params: unknown) => execute(id, name, params) });
      continue;
    }
    const entry = catalog.get(name);
    if (!entry) throw new Error(`searchbox-tools: ${name} is not in ${offer.catalog}`);
    pi.registerTool({
      name,
      label: name,
      description: offer.descriptions === "brief" ? entry.brief : entry.description,
      promptSnippet: entry.brief,  // its line in the system prompt's list of tools, as the built-ins have
      parameters: entry.parameters as any,
      execute: (id: string, params: unknown) => execute(id, name, params),
    });
  }
}
