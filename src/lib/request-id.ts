// The request id: a client's X-Request-Id is kept for tracing only when it is short and plain
// (it ends up in every log line of the request and in the response); otherwise a fresh UUID.
import { randomUUID } from "node:crypto";

const CLIENT_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

export function requestIdFrom(header: string | string[] | undefined): string {
  return typeof header === "string" && CLIENT_ID.test(header) ? header : randomUUID();
}
