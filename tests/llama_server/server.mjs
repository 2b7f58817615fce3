// An OpenAI-compatible chat-completions endpoint around node-llama-cpp, for planc's real-model tests.
//
//     node server.mjs MODEL.gguf [PORT]
//
// Listens on 127.0.0.1 (port 0, the default, lets the system choose) and prints one line,
// `listening on http://127.0.0.1:PORT`, once the model is loaded: the tests wait for that line.
// POST /v1/chat/completions honours `messages`, `max_tokens`, `temperature`, `top_p`, `seed`,
// `stop` and llama.cpp's GBNF `grammar`; requests are answered one at a time. Every request's body
// is kept, in order, for GET /requests, so a test can see what planc sent.
import http from "node:http";
import {getLlama, LlamaChat} from "node-llama-cpp";

const [modelPath, port = "0"] = process.argv.slice(2);
if (!modelPath) {
    console.error("usage: node server.mjs MODEL.gguf [PORT]");
    process.exit(2);
}
const llama = await getLlama({gpu: false, build: "never", logLevel: "error", maxThreads: 1});
const model = await llama.loadModel({modelPath});
// One thread: on a busy machine, threads that wait on one another spin while one of them is descheduled.
const context = await model.createContext({contextSize: 4096, threads: 1});
// One conversation slot, kept: llama.cpp reuses what it evaluated of the previous request where this
// one begins alike (the system prompt), which is most of the work of a request.
const sequence = context.getSequence();
const chat = new LlamaChat({contextSequence: sequence});
const grammars = new Map();
const seen = [];
let queue = Promise.resolve();

function history(messages) {
    return messages.map(({role, content}) => role === "assistant" ? {type: "model", response: [String(content ?? "")]}
        : {type: role === "system" ? "system" : "user", text: String(content ?? "")});
}

async function grammarFor(text) {
    if (!grammars.has(text))
        grammars.set(text, await llama.createGrammar({grammar: text}));
    return grammars.get(text);
}

async function complete(body) {
    const stop = body.stop == null ? [] : [].concat(body.stop);
    const result = await chat.generateResponse(history(body.messages ?? []), {
        maxTokens: body.max_tokens ?? 256,
        temperature: body.temperature ?? 0,
        topP: body.top_p,
        seed: body.seed,
        grammar: body.grammar ? await grammarFor(body.grammar) : undefined,
        customStopTriggers: stop.length ? stop : undefined,
    });
    const finish = result.metadata.stopReason === "maxTokens" ? "length" : "stop";
    return {
        id: `chatcmpl-${seen.length}`, object: "chat.completion", model: "smollm2",
        choices: [{index: 0, message: {role: "assistant", content: result.response}, finish_reason: finish}],
        usage: {prompt_tokens: 0, completion_tokens: 0, total_tokens: 0},
    };
}

function send(response, status, value) {
    response.writeHead(status, {"content-type": "application/json"});
    response.end(JSON.stringify(value));
}

const server = http.createServer((request, response) => {
    if (request.method === "GET" && request.url === "/requests")
        return send(response, 200, seen);
    if (request.method !== "POST" || !request.url.endsWith("/chat/completions"))
        return send(response, 404, {error: {message: "not found"}});
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
        let body;
        try {
            body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        } catch {
            return send(response, 400, {error: {message: "the body is not JSON"}});
        }
        seen.push(body);
        queue = queue.then(() => complete(body)).then(
            (answer) => send(response, 200, answer),
            (error) => send(response, 400, {error: {message: String(error?.message ?? error)}}));
    });
});
server.listen(Number(port), "127.0.0.1", () => {
    console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
