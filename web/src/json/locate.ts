// Where each value of a JSON text starts, by the path the API uses in its errors (`a.b[0].c`), so
// the template editor can put a validation error on its line. A small parser that keeps positions;
// JSON.parse still decides validity.
export type Position = { offset: number; line: number; column: number };

export function locatePaths(text: string): Map<string, Position> {
  const found = new Map<string, Position>();
  let i = 0;
  const position = (offset: number): Position => {
    const before = text.slice(0, offset);
    const line = before.split("\n").length;
    return { offset, line, column: offset - before.lastIndexOf("\n") };
  };
  const skip = () => {
    while (i < text.length && /\s/.test(text[i] ?? "")) i++;
  };
  const readString = (): string => {
    const start = i;
    i++;
    while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const join = (base: string, key: string | number) =>
    typeof key === "number" ? `${base}[${key}]` : base === "" ? key : `${base}.${key}`;
  const value = (path: string): void => {
    skip();
    found.set(path, position(i));
    const c = text[i];
    if (c === "{") {
      i++;
      skip();
      while (i < text.length && text[i] !== "}") {
        skip();
        const keyAt = i;
        const key = readString();
        skip();
        i++; // :
        value(join(path, key));
        found.set(`${join(path, key)}#key`, position(keyAt));
        skip();
        if (text[i] === ",") i++;
        skip();
      }
      i++;
    } else if (c === "[") {
      i++;
      skip();
      for (let n = 0; i < text.length && text[i] !== "]"; n++) {
        value(join(path, n));
        skip();
        if (text[i] === ",") i++;
        skip();
      }
      i++;
    } else if (c === '"') {
      readString();
    } else {
      while (i < text.length && /[^\s,\]}]/.test(text[i] ?? "")) i++;
    }
  };
  try {
    value("");
  } catch {
    // Malformed text: the positions found so far are still right.
  }
  return found;
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

/** JSON.parse's complaint as a line number, where the engine tells the offset. */
export function syntaxError(text: string): { message: string; position: Position | undefined } | undefined {
  try {
    JSON.parse(text);
    return undefined;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const at = /position (\d+)/.exec(message)?.[1];
    if (at === undefined) return { message, position: undefined };
    const offset = Number(at);
    const before = text.slice(0, offset);
    return {
      message,
      position: { offset, line: before.split("\n").length, column: offset - before.lastIndexOf("\n") },
    };
  }
}
