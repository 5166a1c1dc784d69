// The `fastify` target of the subscription benchmark: a bare Fastify app (no hooks, logger, schema or
// database) answering GET /sub/:user_id (and /sub/:user_id/:format) with the bytes the real endpoint sent for one sampled user:
// the same body and the same headers. What Fastify's routing and reply cost on top of Node.
//   HOST=127.0.0.1 PORT=… BENCH_BODY_FILE=… BENCH_HEADERS='{"name":"value"}' node --import tsx bench/sub/fastify-server.ts
// First, as in the service (src/main.ts): without it a full collection while the server idles between
// its rounds sends every later nextTick through V8's runtime, and the reference costs more than it should.
import "../../src/lib/tick-object-maps.ts";
import Fastify from "fastify";
import { sampleAnswer } from "./sample-answer.ts";

const { host, port, body: text, headers } = sampleAnswer();
// The body's bytes: a string when they are ASCII (base64), else the bytes themselves (UTF-8 documents).
const body = Buffer.byteLength(text, "utf8") === text.length ? text : Buffer.from(text, "latin1");

const app = Fastify({ logger: false });
app.get("/health", async () => ({ status: "ok" }));
app.get<{ Params: { user_id: string } }>("/sub/:user_id", (_request, reply) => {
  reply.headers(headers).send(body);
});
app.get<{ Params: { user_id: string; format: string } }>("/sub/:user_id/:format", (_request, reply) => {
  reply.headers(headers).send(body);
});

await app.listen({ host, port });
const shutdown = () => {
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once("SIGINT", shutdown);
process.once("SIGTERM", shutdown);
