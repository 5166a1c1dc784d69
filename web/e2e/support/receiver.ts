// A local HTTP receiver for what the service sends out: webhook POSTs, and the Bot API's
// sendMessage when PORTCULLIS_TELEGRAM_API_URL points here. Everything it got is kept, raw.
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

export type Received = { method: string; path: string; headers: IncomingHttpHeaders; body: string };
export type Receiver = { url: string; received: Received[]; close(): Promise<void> };

/** `status` picks each answer's status (200 by default); the body is `{"ok":true}` (what the Bot API says). */
export async function startReceiver(status: (request: Received) => number = () => 200) {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const got: Received = {
        method: request.method ?? "",
        path: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
      };
      received.push(got);
      response.writeHead(status(got), { "content-type": "application/json" }).end('{"ok":true,"result":{}}');
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
