// What the JavaScript clients rebuild from a stream, for tests/test_js_clients.py.
//
// Reads JSON lines on stdin: {id, target, body (base64 of the stream's bytes), seed, tools (names),
// server_tools (names of the stream's Anthropic server tools, declared to the AI SDK)}.
// Serves each body to every client of its target through a fetch that returns the bytes in
// small random pieces (1 to 24 bytes, from `seed`), and writes one JSON line per client:
// {id, client, text, reasoning, tools: [{name, input}], stop, usage: {input, output} (the AI
// SDK's totals) or raw_usage (the official SDKs' own usage object), error}.
//
//   chat:      openai (chat.completions.stream), ai6/ai7 with @ai-sdk/openai .chat and
//              @ai-sdk/openai-compatible
//   responses: openai (responses.stream), ai6/ai7 with @ai-sdk/openai .responses
//   messages:  @anthropic-ai/sdk (messages.stream), ai6/ai7 with @ai-sdk/anthropic
//   bedrock:   ai6/ai7 with @ai-sdk/amazon-bedrock (ConverseStream: AWS event-stream frames)
//
// `stop` is the client's own word (the test maps it); `error` the error's name and message
// when the client reported one (a thrown error, or the AI SDK's error part).
import readline from "node:readline";
globalThis.AI_SDK_LOG_WARNINGS = false;  // (its warnings go to stdout, where our lines go)
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import * as ai6 from "ai6";
import * as ai7 from "ai7";
import { createOpenAI as openai6 } from "ai6-openai";
import { createOpenAI as openai7 } from "ai7-openai";
import { createOpenAICompatible as compatible6 } from "ai6-openai-compatible";
import { createOpenAICompatible as compatible7 } from "ai7-openai-compatible";
import { createAnthropic as anthropic6 } from "ai6-anthropic";
import { createAnthropic as anthropic7 } from "ai7-anthropic";
import { createAmazonBedrock as bedrock6 } from "ai6-bedrock";
import { createAmazonBedrock as bedrock7 } from "ai7-bedrock";

function random(seed) {  // mulberry32: the same pieces for the same seed
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function fetcher(bytes, seed, contentType = "text/event-stream") {
  return async () => {
    const next = random(seed);
    let pos = 0;
    const body = new ReadableStream({
      pull(controller) {
        if (pos >= bytes.length) { controller.close(); return; }
        const size = 1 + Math.floor(next() * 24);
        controller.enqueue(bytes.subarray(pos, pos + size));
        pos += size;
      },
    });
    return new Response(body, { status: 200, headers: { "content-type": contentType } });
  };
}

function errorText(e) {
  if (e === undefined || e === null) return null;
  return `${e.name ?? "Error"}: ${e.message ?? String(e)}`;
}

async function openaiChat(fetch) {
  const client = new OpenAI({ apiKey: "k", baseURL: "http://test/v1", fetch, maxRetries: 0 });
  const stream = client.chat.completions.stream({ model: "m", messages: [{ role: "user", content: "hi" }], stream_options: { include_usage: true } });
  const done = await stream.finalChatCompletion();
  const choice = done.choices[0] ?? {};
  const message = choice.message ?? {};
  return {
    text: message.content ?? "", reasoning: message.reasoning_content ?? message.reasoning ?? "",
    tools: (message.tool_calls ?? []).map((c) => ({ name: c.function.name, input: parse(c.function.arguments) })),
    stop: choice.finish_reason ?? null, raw_usage: done.usage ?? null,
  };
}

async function openaiResponses(fetch) {
  const client = new OpenAI({ apiKey: "k", baseURL: "http://test/v1", fetch, maxRetries: 0 });
  const stream = client.responses.stream({ model: "m", input: "hi" });
  const done = await stream.finalResponse();
  let text = "", reasoning = "";
  const tools = [];
  for (const item of done.output ?? []) {
    if (item.type === "message") for (const part of item.content ?? []) text += part.text ?? "";
    if (item.type === "reasoning") {
      for (const part of item.summary ?? []) reasoning += part.text ?? "";
      for (const part of item.content ?? []) reasoning += part.text ?? "";
    }
    if (item.type === "function_call") tools.push({ name: item.name, input: parse(item.arguments) });
  }
  return {
    text, reasoning, tools, stop: done.status + (done.incomplete_details ? `:${done.incomplete_details.reason}` : ""),
    raw_usage: done.usage ?? null,
  };
}

async function anthropicMessages(fetch) {
  const client = new Anthropic({ apiKey: "k", baseURL: "http://test", fetch, maxRetries: 0 });
  const stream = client.messages.stream({ model: "m", max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
  const done = await stream.finalMessage();
  let text = "";
  const thoughts = [], tools = [];
  for (const block of done.content) {
    if (block.type === "text") text += block.text;
    if (block.type === "thinking") thoughts.push(block.thinking);
    if (block.type === "tool_use") tools.push({ name: block.name, input: block.input });
  }
  // several thinking blocks are joined with a blank line, as the IR (and tests/sdk) do
  return { text, reasoning: thoughts.join("\n\n"), tools, stop: done.stop_reason, raw_usage: done.usage ?? null };
}

function parse(text) {
  if (text === "" || text === undefined) return {};
  try { return JSON.parse(text); } catch { return text; }
}

// Anthropic's server tools, declared to the AI SDK's anthropic provider as its users declare
// them, by the name of the `server_tool_use` blocks they make.
const SERVER_TOOLS = {
  bash_code_execution: ["code_execution", (p) => p.tools.codeExecution_20250825({})],
  text_editor_code_execution: ["code_execution", (p) => p.tools.codeExecution_20250825({})],
  code_execution: ["code_execution", (p) => p.tools.codeExecution_20250825({})],
  web_search: ["web_search", (p) => p.tools.webSearch_20250305({})],
  web_fetch: ["web_fetch", (p) => p.tools.webFetch_20250910({})],
};

function serverTools(provider, names) {
  const tools = {};
  for (const name of names ?? []) {
    const known = SERVER_TOOLS[name];
    if (known) tools[known[0]] = known[1](provider);
  }
  return tools;
}

async function aiSdk(sdk, model, toolNames, provided = {}) {
  const tools = { ...provided };
  for (const name of toolNames) {
    tools[name] = sdk.tool({ inputSchema: sdk.jsonSchema({ type: "object" }) });
  }
  const result = sdk.streamText({ model, prompt: "hi", tools, maxRetries: 0 });
  let text = "", stop = null, usage = null, error = null;
  const calls = [], thoughts = new Map();  // reasoning part id -> its text
  for await (const part of result.fullStream) {
    if (part.type === "text-delta") text += part.text ?? part.delta ?? "";
    else if (part.type === "reasoning-delta") {
      thoughts.set(part.id, (thoughts.get(part.id) ?? "") + (part.text ?? part.delta ?? ""));
    }
    else if (part.type === "tool-call" && part.invalid) {  // an input its tool's schema refused
      error = errorText(part.error);
    }
    else if (part.type === "tool-call" && !part.providerExecuted) {  // (hosted tools: not the client's)
      calls.push({ name: part.toolName, input: part.input });
    }
    else if (part.type === "finish") {
      stop = part.finishReason;
      const u = part.totalUsage ?? part.usage;
      if (u) usage = { input: u.inputTokens ?? null, output: u.outputTokens ?? null };
    } else if (part.type === "error") error = errorText(part.error);
    else if (part.type === "tool-error") error = errorText(part.error);
  }
  return { text, reasoning: [...thoughts.values()].join("\n\n"), tools: calls, stop, usage, error };
}

function bedrockOptions(fetch) {
  return { region: "us-east-1", accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", baseURL: "http://test", fetch };
}

const CONTENT_TYPES = { bedrock: "application/vnd.amazon.eventstream" };

const CLIENTS = {
  chat: {
    openai: (f) => openaiChat(f),
    "ai6+openai": (f, t) => aiSdk(ai6, openai6({ apiKey: "k", baseURL: "http://test/v1", fetch: f }).chat("m"), t),
    "ai6+openai-compatible": (f, t) => aiSdk(ai6, compatible6({ name: "c", baseURL: "http://test/v1", fetch: f, includeUsage: true })("m"), t),
    "ai7+openai": (f, t) => aiSdk(ai7, openai7({ apiKey: "k", baseURL: "http://test/v1", fetch: f }).chat("m"), t),
    "ai7+openai-compatible": (f, t) => aiSdk(ai7, compatible7({ name: "c", baseURL: "http://test/v1", fetch: f, includeUsage: true })("m"), t),
  },
  responses: {
    openai: (f) => openaiResponses(f),
    "ai6+openai": (f, t) => aiSdk(ai6, openai6({ apiKey: "k", baseURL: "http://test/v1", fetch: f }).responses("m"), t),
    "ai7+openai": (f, t) => aiSdk(ai7, openai7({ apiKey: "k", baseURL: "http://test/v1", fetch: f }).responses("m"), t),
  },
  bedrock: {  // SigV4-signed with a made-up key (aws4fetch), as the provider does
    "ai6+bedrock": (f, t) => aiSdk(ai6, bedrock6(bedrockOptions(f))("m"), t),
    "ai7+bedrock": (f, t) => aiSdk(ai7, bedrock7(bedrockOptions(f))("m"), t),
  },
  messages: {
    anthropic: (f) => anthropicMessages(f),
    "ai6+anthropic": (f, t, s) => {
      const p = anthropic6({ apiKey: "k", baseURL: "http://test/v1", fetch: f });
      return aiSdk(ai6, p("m"), t, serverTools(p, s));
    },
    "ai7+anthropic": (f, t, s) => {
      const p = anthropic7({ apiKey: "k", baseURL: "http://test/v1", fetch: f });
      return aiSdk(ai7, p("m"), t, serverTools(p, s));
    },
  },
};

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const c = JSON.parse(line);
  const bytes = Buffer.from(c.body, "base64");
  for (const [client, read] of Object.entries(CLIENTS[c.target])) {
    let out;
    try {
      out = await read(fetcher(new Uint8Array(bytes), c.seed, CONTENT_TYPES[c.target]), c.tools ?? [], c.server_tools ?? []);
    } catch (e) {
      out = { error: errorText(e) };
    }
    process.stdout.write(JSON.stringify({ id: c.id, client, ...out }) + "\n");
  }
}
