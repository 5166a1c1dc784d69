// The fast path's answers written as text into the head Node keeps for a response, instead of
// through writeHead's field list and end(body). Two costs go (docs/benchmarks/HISTORY.md, session 26):
//
// - writeHead checks every field it is given, each name and value with a regular expression and
//   each name lowercased, and builds the head by concatenation: for a /sub answer's twelve fields
//   that cost more than the lookup. The plain base64 answers' values need no check: each comes from
//   a fixed alphabet (numbers, base64, hex, the quoted entity tag, a file name of [A-Za-z0-9._-] or
//   its RFC 5987 form; a property test in subscription-index.test.ts holds every value to Node's
//   own validateHeaderValue, for any user name) and nothing an admin types reaches them. So
//   writeHead gets only what Node decides the connection by (Content-Length) and the fields go, as
//   text, right after its status line: Node still writes Date, Connection and Keep-Alive, closes or
//   keeps the connection, and sends no body for HEAD and 304.
// - end(body) sends the head and body as one string, then an empty chunk that carries the end: two
//   chunks, which the socket writes with writev through a copy on the C++ heap. With the body
//   appended to the head and end() given none, the one string goes out in one write from the
//   stack. Any answer whose body is a string can take this, checked head or not (endWith()).
//
// The head is ServerResponse's `_header`: text that writeHead leaves there and end() sends as it
// is. It is not documented, so it is checked once, when this module loads, on a response whose
// socket is a stream that keeps what it is given; on a Node.js where it is not what this expects,
// `headSplicing.on` is false and answers go through writeHead's checks and end(body) as before. The
// wire test (fast-path.test.ts) runs both ways.
import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import { Writable } from "node:stream";

/** The status lines writeHead writes first for the statuses the fast path answers. */
const STATUS_LINES: Readonly<Record<200 | 304, string>> = {
  200: "HTTP/1.1 200 OK\r\n",
  304: "HTTP/1.1 304 Not Modified\r\n",
};

/**
 * Whether writeHead leaves the head as text in `_header` (its status line first, the fields it was
 * given next) and end() sends that text as it is, a field and a body added to it, in one write: for
 * 200 and 304, on a response whose socket is a stream that keeps what it is given.
 */
export function headTextIsWritable(): boolean {
  try {
    for (const status of [200, 304] as const) {
      const request = new IncomingMessage(new Socket());
      request.method = "GET";
      request.httpVersionMajor = 1;
      request.httpVersionMinor = 1;
      const response = new ServerResponse(request);
      const written: Buffer[] = [];
      const socket = new Writable({
        write(chunk: Buffer, _encoding, callback) {
          if (chunk.length > 0) written.push(chunk);
          callback();
        },
      });
      response.assignSocket(socket as unknown as Socket);
      const body = status === 200 ? "b" : "";
      response.writeHead(status, ["content-length", String(body.length)]);
      const own = response as unknown as { _header: unknown };
      const head = own._header;
      const line = STATUS_LINES[status];
      if (typeof head !== "string" || !head.startsWith(`${line}content-length: ${body.length}\r\n`))
        return false;
      if (!head.endsWith("\r\n\r\n") || !response.headersSent) return false;
      const expected = `${line}x-probe: 1\r\n${head.slice(line.length)}${body}`;
      own._header = expected;
      response.end();
      if (written.length !== 1 || written[0]?.toString("latin1") !== expected) return false;
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

/** The head Node keeps for a response once writeHead() returns (checked by headTextIsWritable()). */
type HeadText = { _header: string };

/**
 * Ends a response whose head is written: with `body` (undefined: none) appended to the head text,
 * so both go out as one string in one write, or by end(body) when `headSplicing.on` is false.
 */
export function endWith(response: ServerResponse, body: string | undefined): void {
  if (body === undefined) response.end();
  else if (headSplicing.on) {
    (response as unknown as HeadText)._header += body;
    response.end();
  } else response.end(body, "latin1");
}

/**
 * A reused list of header pairs (name, value, …) as Node's writeHead takes them, whose values at
 * `varying` change from answer to answer and the others never. answer() writes it (spliced as text:
 * the constant text between the changing values made once; or through writeHead's checks when
 * `headSplicing.on` is false) and the body. `lengthAt`: the index of the content-length name in the
 * list, or -1 (304): spliced, the fields keep their order but for Content-Length, which Node writes
 * after them.
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

  /** Answers with the pairs as they are now and `body` (undefined: none, as for HEAD and 304), and ends the response. */
  answer(response: ServerResponse, body: string | undefined): void {
    const pairs = this.pairs;
    if (!headSplicing.on) {
      response.writeHead(this.status, pairs);
      endWith(response, body);
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
    const own = response as unknown as HeadText;
    own._header = this.#statusLine + fields + own._header.slice(this.#statusLine.length);
    endWith(response, body);
  }
}
