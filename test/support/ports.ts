// Free loopback ports for test servers (v2ray inbounds and clients, pebble, http-01 listeners).
// Drawn below Linux's ephemeral range (32768–60999 by default), not from listen(0): a port listen(0)
// hands out is an ephemeral one, and between our check and the server's bind any outgoing
// connection of the parallel suite (pg, gRPC, fetch) may take it as its source port, or a connect to
// it may even connect to itself. Below the range only another listener can take it, and the port is
// checked free by binding it; a process never hands the same port out twice.
import { randomInt } from "node:crypto";
import { createServer } from "node:net";

const FIRST = 20_000;
const LAST = 32_000; // exclusive; below the ephemeral range
const handedOut = new Set<number>();

function tryBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = randomInt(FIRST, LAST);
    if (handedOut.has(port)) continue;
    if (await tryBind(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port in ${FIRST}-${LAST - 1} after 200 tries`);
}

export async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) ports.push(await freePort());
  return ports;
}
