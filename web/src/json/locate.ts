// Where each value of a JSON text starts, by the path the API uses in its errors (`a.b[0].c`), so
// the template editor can put a validation error on its line; and where a syntax error is (V8's
// JSON.parse no longer says). A small parser that keeps positions; JSON.parse still decides validity.
export type Position = { offset: number; line: number; column: number };

class SyntaxAt extends Error {
  constructor(readonly offset: number) {
    super(`unexpected input at ${offset}`);
  }
}

function positionOf(text: string, offset: number): Position {
  const before = text.slice(0, offset);
  return { offset, line: before.split("\n").length, column: offset - before.lastIndexOf("\n") };
}

const LITERAL = /true|false|null|-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;

function parse(text: string): { positions: Map<string, Position>; errorAt: number | undefined } {
  const positions = new Map<string, Position>();
  let i = 0;
  const skip = () => {
    while (i < text.length && /\s/.test(text[i] ?? "")) i++;
  };
  const expect = (char: string) => {
    skip();
    if (text[i] !== char) throw new SyntaxAt(i);
    i++;
  };
  const readString = (): string => {
    if (text[i] !== '"') throw new SyntaxAt(i);
    const start = i++;
    while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    if (i >= text.length) throw new SyntaxAt(start);
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const join = (base: string, key: string | number) =>
    typeof key === "number" ? `${base}[${key}]` : base === "" ? key : `${base}.${key}`;
  const value = (path: string): void => {
    skip();
    positions.set(path, positionOf(text, i));
    const c = text[i];
    if (c === "{") {
      i++;
      skip();
      if (text[i] === "}") {
        i++;
        return;
      }
      for (;;) {
        skip();
        const keyAt = i;
        const key = readString();
        positions.set(`${join(path, key)}#key`, positionOf(text, keyAt));
        expect(":");
        value(join(path, key));
        skip();
        if (text[i] !== ",") {
          expect("}");
          return;
        }
        i++;
      }
    }
    if (c === "[") {
      i++;
      skip();
      if (text[i] === "]") {
        i++;
        return;
      }
      for (let n = 0; ; n++) {
        value(join(path, n));
        skip();
        if (text[i] !== ",") {
          expect("]");
          return;
        }
        i++;
      }
    }
    if (c === '"') {
      readString();
      return;
    }
    LITERAL.lastIndex = i;
    if (!LITERAL.test(text)) throw new SyntaxAt(i);
    i = LITERAL.lastIndex;
  };
  try {
    value("");
    skip();
    if (i < text.length) throw new SyntaxAt(i);
    return { positions, errorAt: undefined };
  } catch (error) {
    // Malformed text: the positions found so far are still right.
    return { positions, errorAt: error instanceof SyntaxAt ? error.offset : i };
  }
}

export function locatePaths(text: string): Map<string, Position> {
  return parse(text).positions;
}

/** The position of an API error path (`config.a.b[0]`, `xray: a.b`), or of its nearest existing parent. */
export function locateError(positions: Map<string, Position>, apiPath: string): Position | undefined {
  let path = apiPath.replace(/^\w+: /, "").replace(/^config\.?/, "");
  for (;;) {
    const hit = positions.get(`${path}#key`) ?? positions.get(path);
    if (hit !== undefined) return hit;
    if (path === "") return undefined;
    const cut = Math.max(path.lastIndexOf("."), path.lastIndexOf("["));
    path = cut < 0 ? "" : path.slice(0, cut);
  }
}

/** JSON.parse's complaint, with the line where this parser found the text going wrong. */
export function syntaxError(text: string): { message: string; position: Position | undefined } | undefined {
  try {
    JSON.parse(text);
    return undefined;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const { errorAt } = parse(text);
    return { message, position: errorAt === undefined ? undefined : positionOf(text, errorAt) };
  }
}
