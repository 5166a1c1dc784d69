// The ceiling of the subscription benchmark: a bare Fastify app (no hooks, no logger, no database)
// answering GET /sub/:user_id with a fixed text/plain body and the same headers the real endpoint
// sends, so both measurements move the same bytes. Run in its own process:
//   HOST=127.0.0.1 PORT=… CEILING_BODY_BYTES=… [CEILING_HEADERS='{"name":"value"}'] \
//   node --import tsx bench/sub/ceiling-server.ts
import Fastify from "fastify";

const host = process.env.HOST ?? "127.0.0.1";
const port = Number(process.env.PORT ?? "8081");
const bodyBytes = Number(process.env.CEILING_BODY_BYTES ?? "1500");
const headers = JSON.parse(process.env.CEILING_HEADERS ?? "{}") as Record<string, string>;
// Base64-alphabet filler of the requested length, like a real subscription body.
const body = "QUJDRGVmZ2hpams".repeat(Math.ceil(bodyBytes / 15)).slice(0, bodyBytes);

const app = Fastify({ logger: false });
app.get("/health", async () => ({ status: "ok" }));
app.get<{ Params: { user_id: string } }>("/sub/:user_id", (_request, reply) => {
  reply.headers(headers).type("text/plain; charset=utf-8").send(body);
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
