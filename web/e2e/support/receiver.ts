// A local HTTP receiver for what the service sends out: webhook POSTs, and the Bot API's
// sendMessage when PORTCULLIS_TELEGRAM_API_URL points here. Everything it got is kept, raw.
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

export type Received = { method: string; path: string; headers: IncomingHttpHeaders; body: string };
export type Receiver = { url: string; received: Received[]; close(): Promise<void> };

export async function startReceiver(answer: { status: number; body: string } = { status: 200, body: "ok" }) {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({
        method: request.method ?? "",
        path: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
      });
      response.writeHead(answer.status, { "content-type": "application/json" }).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  } satisfies Receiver;
}
