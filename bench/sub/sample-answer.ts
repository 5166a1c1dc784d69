// What the fastify and limit targets answer: the body and headers /sub sent for one sampled user,
// handed over by the driver (a file for the body, JSON for the headers), and where to listen.
import { readFileSync } from "node:fs";

export type SampleAnswer = { host: string; port: number; body: string; headers: Record<string, string> };

export function sampleAnswer(env: NodeJS.ProcessEnv = process.env): SampleAnswer {
  const file = env.BENCH_BODY_FILE;
  if (file === undefined) throw new Error("BENCH_BODY_FILE is not set");
  return {
    host: env.HOST ?? "127.0.0.1",
    port: Number(env.PORT ?? "8081"),
    body: readFileSync(file, "latin1"),
    headers: JSON.parse(env.BENCH_HEADERS ?? "{}") as Record<string, string>,
  };
}
