// The `limit` target of the subscription benchmark: a raw node:http server answering every request
// with the bytes the real endpoint sent for one sampled user, prepared once: no routing, no lookup,
// no rendering, through node:http's public API (writeHead's checked fields, end(body)): the limit /sub
// is measured against. /sub's fast path answers through the same public API (issue 46 removed the
// Node internals it used). Fastify's keep-alive timeout, so even the Keep-Alive header is the same.
//   HOST=127.0.0.1 PORT=… BENCH_BODY_FILE=… BENCH_HEADERS='{"name":"value"}' node --import tsx bench/sub/limit-server.ts
// First, as in the service (src/main.ts): without it a full collection while the server idles between
// its rounds sends every later nextTick through V8's runtime, and the reference costs more than it should.
import "../../src/lib/tick-object-maps.ts";
import { createServer } from "node:http";
import { sampleAnswer } from "./sample-answer.ts";

const { host, port, body, headers } = sampleAnswer();
const flat = [...Object.entries(headers).flat(), "content-length", String(Buffer.byteLength(body))];
const health = JSON.stringify({ status: "ok" });

const server = createServer((request, response) => {
  if (request.url === "/health") {
    response.writeHead(200, ["content-type", "application/json"]);
    response.end(health);
    return;
  }
  response.writeHead(200, flat);
  response.end(body, "latin1");
});
server.keepAliveTimeout = 72_000;
server.listen(port, host);
const shutdown = () => server.close(() => process.exit(0));
process.once("SIGINT", shutdown);
process.once("SIGTERM", shutdown);
