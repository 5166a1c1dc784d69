// The fast path's heads written as text into the head Node keeps for a response, instead of through
// writeHead's field list. writeHead checks every field it is given, each name and value with a regular
// expression and each name lowercased, and builds the head by concatenation: for a /sub answer's
// twelve fields that cost more than the lookup and the render together (docs/BENCHMARKS.md, session
// 26). The fast path's values need no check: each comes from a fixed alphabet (numbers, base64,
// hex, the quoted entity tag, a file name of [A-Za-z0-9._-] or its RFC 5987 form; head-text.test.ts
// holds every value to Node's own checks, hostile user names included). So the fast path gives
// writeHead only what Node decides the connection by (Content-Length), and puts its own fields, as
// text, right after the status line of the head Node wrote: Node still writes Date, Connection and
// Keep-Alive, closes or keeps the connection, and sends no body for HEAD and 304.
//
// The head is ServerResponse's `_header`: text that writeHead leaves there and end() sends before the
// body. It is not documented, so it is checked once, when this module loads, on a response that is
// never sent; on a Node.js where it is not what this expects, `headSplicing.on` is false and the fast
// path goes through writeHead's checks as before. The wire test (fast-path.test.ts) runs both ways.
import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";

/** The status lines writeHead writes first for the statuses the fast path answers. */
const STATUS_LINES: Readonly<Record<200 | 304, string>> = {
  200: "HTTP/1.1 200 OK\r\n",
  304: "HTTP/1.1 304 Not Modified\r\n",
};

type HeadText = { _header: unknown };

/**
 * Whether writeHead leaves the head as text in `_header`, its status line first and the fields it
 * was given next, in a plain writable property: on a response that is never sent.
 */
export function headTextIsWritable(): boolean {
  try {
    for (const status of [200, 304] as const) {
      const request = new IncomingMessage(new Socket());
      request.method = "GET";
      request.httpVersionMajor = 1;
      request.httpVersionMinor = 1;
      const response = new ServerResponse(request);
      response.writeHead(status, ["content-length", "0"]);
      const head = (response as unknown as HeadText)._header;
      const property = Object.getOwnPropertyDescriptor(response, "_header");
      const expected = `${STATUS_LINES[status]}content-length: 0\r\n`;
      if (typeof head !== "string" || !head.startsWith(expected) || !head.endsWith("\r\n\r\n")) return false;
      if (property === undefined || property.writable !== true || !response.headersSent) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/** Whether the fast path writes its fields into the head text (tests turn it off to check the other way). */
export const headSplicing = { on: headTextIsWritable() };

const LENGTH = ["content-length", ""];
const NO_FIELDS: string[] = [];

/**
 * A reused list of header pairs (name, value, …) as Node's writeHead takes them, whose values at
 * `varying` change from answer to answer and the others never, written by write(): spliced as text
 * (the constant text between the changing values made once), or through writeHead's checks when
 * `headSplicing.on` is false. `lengthAt`: the index of the content-length name in the list, or -1
 * (304): spliced, the fields keep their order but for Content-Length, which Node writes after them.
 */
export class HeadFields {
  /** The constant text before each changing value, and after the last one. */
  readonly #texts: string[] = [];
  readonly #varying: number[] = [];
  readonly #statusLine: string;

  constructor(
    readonly status: 200 | 304,
    readonly pairs: string[],
    varying: readonly number[],
    readonly lengthAt: number,
  ) {
    this.#statusLine = STATUS_LINES[status];
    let text = "";
    for (let i = 0; i < pairs.length; i += 2) {
      if (i === lengthAt) continue;
      text += `${pairs[i]}: `;
      if (varying.includes(i + 1)) {
        this.#texts.push(text);
        this.#varying.push(i + 1);
        text = "";
      } else text += pairs[i + 1];
      text += "\r\n";
    }
    this.#texts.push(text);
  }

  /** writeHead(status, pairs) with the pairs as they are now. */
  write(response: ServerResponse): void {
    const pairs = this.pairs;
    if (!headSplicing.on) {
      response.writeHead(this.status, pairs);
      return;
    }
    if (this.lengthAt < 0) response.writeHead(this.status, NO_FIELDS);
    else {
      LENGTH[1] = pairs[this.lengthAt + 1] as string;
      response.writeHead(this.status, LENGTH);
    }
    const texts = this.#texts;
    const varying = this.#varying;
    let fields = texts[0] as string;
    for (let k = 0; k < varying.length; k++) fields += (pairs[varying[k] as number] as string) + texts[k + 1];
    const own = response as unknown as { _header: string };
    own._header = this.#statusLine + fields + own._header.slice(this.#statusLine.length);
  }
}
