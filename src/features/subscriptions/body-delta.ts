// A cached body stored as the bytes where it differs from a reference body. Users with the same
// grants get links that differ only around their credentials, and base64 keeps every 3-byte group
// apart, so their bodies differ from one shared reference body in a few short runs. A hit joins
// slices of the reference with the runs: V8 keeps those as slices and ropes, so the only copy of the
// whole body is the one Node makes when it writes it to the socket.

/** Equal stretches shorter than this between two differences are stored with them (one run, not two). */
const MERGE_GAP = 8;
const MAX_LENGTH = 0xffff;

function pair(n: number): string {
  return String.fromCharCode(n >> 8, n & 0xff);
}

/**
 * The body's length, then runs of (offset, length, bytes): two bytes per number, latin1 text. The
 * body is base64 (ASCII). undefined when it is longer than 65,535 bytes.
 */
export function encodeBody(body: string, reference: string): string | undefined {
  if (body.length > MAX_LENGTH) return undefined;
  const parts = [pair(body.length)];
  const shared = Math.min(body.length, reference.length);
  let at = 0;
  while (at < body.length) {
    while (at < shared && body.charCodeAt(at) === reference.charCodeAt(at)) at++;
    if (at >= body.length) break;
    const start = at;
    let end = at;
    for (let equal = 0; at < body.length && equal < MERGE_GAP; at++) {
      if (at < shared && body.charCodeAt(at) === reference.charCodeAt(at)) equal++;
      else [equal, end] = [0, at + 1];
    }
    parts.push(pair(start), pair(end - start), body.slice(start, end));
    at = end;
  }
  return parts.join("");
}

function readPair(source: Buffer, at: number): number {
  return ((source[at] ?? 0) << 8) | (source[at + 1] ?? 0);
}

/** The body, from its encoded runs in source[start, end) (latin1) and the reference they apply to. */
export function decodeBody(source: Buffer, start: number, end: number, reference: string): string {
  const length = readPair(source, start);
  let body = "";
  let copied = 0; // the body is complete up to here
  for (let at = start + 2; at < end; ) {
    const offset = readPair(source, at);
    const count = readPair(source, at + 2);
    if (offset > copied) body += reference.slice(copied, offset);
    body += source.toString("latin1", at + 4, at + 4 + count);
    copied = offset + count;
    at += 4 + count;
  }
  if (length > copied) body += reference.slice(copied, length);
  return body;
}
