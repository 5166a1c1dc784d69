// User-Agent patterns of the subscription settings, matched in time linear in the User-Agent
// (issue 45, finding 4: `^(a+)+$` and a 28-character User-Agent held V8's backtracking regex engine
// for 2.2 s per /sub request, without a token). The language is the part of JavaScript regular
// expressions a User-Agent rule needs — literals, `.`, classes, `\d \w \s \b` and their negations,
// `^ $`, groups, `|`, `* + ? {n,m}` — and nothing that needs backtracking: no backreferences, no
// lookaround. A pattern is compiled to a small program that runs as a Thompson NFA (every state
// advanced together, each at most once per character), so the work is bounded by
// program size × input length whatever the pattern. Case-insensitive, as the rules always were.

/** Instructions per pattern (a `{n,m}` repeats its body; `(.*a){20}` is about 100). */
export const MAX_PROGRAM = 1000;
/** The largest `{n,m}` bound. */
export const MAX_REPEAT = 100;
/** Only this much of a User-Agent is matched (real ones are under 200 characters). */
export const UA_MATCH_CHARS = 512;

export class PatternError extends Error {}

type CharTest = (code: number) => boolean;
type Node =
  | { t: "char"; test: CharTest }
  | { t: "assert"; kind: "^" | "$" | "b" | "B" }
  | { t: "cat"; items: Node[] }
  | { t: "alt"; items: Node[] }
  | { t: "rep"; node: Node; min: number; max: number };
type Inst =
  | { op: "char"; test: CharTest }
  | { op: "split"; x: number; y: number }
  | { op: "jmp"; x: number }
  | { op: "assert"; kind: "^" | "$" | "b" | "B" }
  | { op: "match" };

const inRange = (lo: number, hi: number) => (c: number) => c >= lo && c <= hi;
const DIGIT = inRange(48, 57);
const WORD: CharTest = (c) => DIGIT(c) || inRange(65, 90)(c) || inRange(97, 122)(c) || c === 95;
const SPACE_CODES = new Set([
  9, 10, 11, 12, 13, 32, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff,
]);
const SPACE: CharTest = (c) => SPACE_CODES.has(c) || (c >= 0x2000 && c <= 0x200a);
const LINE_END = new Set([10, 13, 0x2028, 0x2029]);
const not =
  (f: CharTest): CharTest =>
  (c) =>
    !f(c);
/** The other case of an ASCII letter (the rules are case-insensitive). */
const swapCase = (c: number) => (c >= 65 && c <= 90 ? c + 32 : c >= 97 && c <= 122 ? c - 32 : c);
const caseless =
  (f: CharTest): CharTest =>
  (c) =>
    f(c) || f(swapCase(c));

class Parser {
  #i = 0;
  constructor(private readonly src: string) {}

  parse(): Node {
    const node = this.#alt();
    if (this.#i < this.src.length) this.#fail(`unmatched ")" at ${this.#i}`);
    return node;
  }

  #fail(message: string): never {
    throw new PatternError(message);
  }
  #peek(offset = 0): string | undefined {
    return this.src[this.#i + offset];
  }

  #alt(): Node {
    const items = [this.#cat()];
    while (this.#peek() === "|") {
      this.#i++;
      items.push(this.#cat());
    }
    return items.length === 1 ? (items[0] as Node) : { t: "alt", items };
  }

  #cat(): Node {
    const items: Node[] = [];
    for (let ch = this.#peek(); ch !== undefined && ch !== "|" && ch !== ")"; ch = this.#peek()) {
      items.push(this.#quantified(this.#atom()));
    }
    return { t: "cat", items };
  }

  #quantified(atom: Node): Node {
    const bounds = this.#quantifier();
    if (bounds === undefined) return atom;
    if (atom.t === "assert") this.#fail("an anchor cannot be repeated");
    if (this.#peek() === "?") this.#i++; // lazy: the same for a yes/no match
    if (this.#quantifier(true) !== undefined) this.#fail(`nothing to repeat at ${this.#i}`);
    return { t: "rep", node: atom, min: bounds[0], max: bounds[1] };
  }

  /** `* + ? {n} {n,} {n,m}` at the cursor (consumed unless `peekOnly`), or undefined. */
  #quantifier(peekOnly = false): [number, number] | undefined {
    const ch = this.#peek();
    const simple: Record<string, [number, number]> = { "*": [0, Infinity], "+": [1, Infinity], "?": [0, 1] };
    if (ch !== undefined && simple[ch] !== undefined) {
      if (!peekOnly) this.#i++;
      return simple[ch];
    }
    if (ch !== "{") return undefined;
    const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.#i));
    if (m === null) return undefined; // a literal "{", as JavaScript reads it
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
    if (min > MAX_REPEAT || (max !== Infinity && max > MAX_REPEAT)) {
      this.#fail(`a repeat count is at most ${MAX_REPEAT}`);
    }
    if (max < min) this.#fail("numbers out of order in {} quantifier");
    if (!peekOnly) this.#i += m[0].length;
    return [min, max];
  }

  #atom(): Node {
    const ch = this.#peek() as string;
    this.#i++;
    switch (ch) {
      case "(":
        return this.#group();
      case "[":
        return { t: "char", test: this.#class() };
      case ".":
        return { t: "char", test: (c) => !LINE_END.has(c) };
      case "^":
      case "$":
        return { t: "assert", kind: ch };
      case "\\":
        return this.#escape();
      case "*":
      case "+":
      case "?":
        return this.#fail(`nothing to repeat at ${this.#i - 1}`);
      default: {
        if (ch === "{" && this.#quantifierAhead()) this.#fail(`nothing to repeat at ${this.#i - 1}`);
        const code = ch.charCodeAt(0);
        return { t: "char", test: caseless((c) => c === code) };
      }
    }
  }

  #quantifierAhead(): boolean {
    return /^\d+(,\d*)?\}/.test(this.src.slice(this.#i));
  }

  #group(): Node {
    if (this.#peek() === "?") {
      const next = this.#peek(1);
      if (next === ":") this.#i += 2;
      else if (next === "<" && /^\?<[A-Za-z_$][\w$]*>/.test(this.src.slice(this.#i))) {
        this.#i = this.src.indexOf(">", this.#i) + 1;
      } else {
        this.#fail("lookahead and lookbehind are not supported (they need backtracking)");
      }
    }
    const node = this.#alt();
    if (this.#peek() !== ")") this.#fail("unterminated group");
    this.#i++;
    return node;
  }

  #escape(): Node {
    const ch = this.#peek();
    if (ch === undefined) this.#fail("\\ at end of pattern");
    if (ch === "b" || ch === "B") {
      this.#i++;
      return { t: "assert", kind: ch };
    }
    return { t: "char", test: caseless(this.#escapedChar(false)) };
  }

  /** The character test of the escape after a backslash (inside a class `\b` is a backspace). */
  #escapedChar(inClass: boolean): CharTest {
    const ch = this.#peek() as string;
    this.#i++;
    const classes: Record<string, CharTest> = {
      d: DIGIT,
      D: not(DIGIT),
      w: WORD,
      W: not(WORD),
      s: SPACE,
      S: not(SPACE),
    };
    const known = classes[ch];
    if (known !== undefined) return known;
    if (/[1-9]/.test(ch) || ch === "k")
      this.#fail("backreferences are not supported (they need backtracking)");
    const controls: Record<string, number> = { n: 10, r: 13, t: 9, f: 12, v: 11, 0: 0 };
    const control = ch === "b" && inClass ? 8 : controls[ch];
    if (control !== undefined) return (c) => c === control;
    const hex = ch === "x" ? 2 : ch === "u" ? 4 : 0;
    if (hex > 0) {
      const digits = this.src.slice(this.#i, this.#i + hex);
      if (!new RegExp(`^[0-9a-fA-F]{${hex}}$`).test(digits)) this.#fail(`bad \\${ch} escape`);
      this.#i += hex;
      const code = Number.parseInt(digits, 16);
      return (c) => c === code;
    }
    if (/[A-Za-z0-9]/.test(ch)) this.#fail(`unknown escape \\${ch}`);
    const code = ch.charCodeAt(0);
    return (c) => c === code;
  }

  #class(): CharTest {
    const negated = this.#peek() === "^";
    if (negated) this.#i++;
    const parts: CharTest[] = [];
    while (this.#peek() !== "]") {
      if (this.#peek() === undefined) this.#fail("unterminated character class");
      const [from, fromCode] = this.#classAtom();
      if (this.#peek() === "-" && this.#peek(1) !== "]" && this.#peek(1) !== undefined) {
        this.#i++;
        const [, toCode] = this.#classAtom();
        if (fromCode === undefined || toCode === undefined) this.#fail("a class cannot be a range end");
        if (toCode < fromCode) this.#fail("range out of order in character class");
        parts.push(inRange(fromCode, toCode));
      } else parts.push(from);
    }
    this.#i++;
    const any = caseless((c) => parts.some((p) => p(c)));
    return negated ? not(any) : any;
  }

  /** One class member: its test, and its code when it is a single character. */
  #classAtom(): [CharTest, number | undefined] {
    const ch = this.#peek() as string;
    this.#i++;
    if (ch !== "\\") {
      const code = ch.charCodeAt(0);
      return [(c) => c === code, code];
    }
    const next = this.#peek();
    const test = this.#escapedChar(true);
    const single = next !== undefined && !/[dDwWsS]/.test(next);
    return [test, single ? firstMatch(test) : undefined];
  }
}

/** The code of the one character a single-character escape matches. */
function firstMatch(test: CharTest): number | undefined {
  for (let c = 0; c <= 0xffff; c++) if (test(c)) return c;
  return undefined;
}

/** Instructions `node` compiles to, computed before emitting so `(a{100}){100}` never allocates. */
function sizeOf(node: Node): number {
  switch (node.t) {
    case "char":
    case "assert":
      return 1;
    case "cat":
      return node.items.reduce((n, item) => n + sizeOf(item), 0);
    case "alt":
      return node.items.reduce((n, item) => n + sizeOf(item) + 2, 0);
    case "rep": {
      const body = sizeOf(node.node);
      const tail = node.max === Infinity ? body + 2 : (node.max - node.min) * (body + 1);
      return node.min * body + tail;
    }
  }
}

function emit(node: Node, prog: Inst[]): void {
  switch (node.t) {
    case "char":
      prog.push({ op: "char", test: node.test });
      return;
    case "assert":
      prog.push({ op: "assert", kind: node.kind });
      return;
    case "cat":
      for (const item of node.items) emit(item, prog);
      return;
    case "alt": {
      const jumps: { op: "jmp"; x: number }[] = [];
      node.items.forEach((item, i) => {
        const last = i === node.items.length - 1;
        const split = { op: "split" as const, x: prog.length + 1, y: 0 };
        if (!last) prog.push(split);
        emit(item, prog);
        if (!last) {
          const jump = { op: "jmp" as const, x: 0 };
          jumps.push(jump);
          prog.push(jump);
          split.y = prog.length;
        }
      });
      for (const jump of jumps) jump.x = prog.length;
      return;
    }
    case "rep": {
      for (let i = 0; i < node.min; i++) emit(node.node, prog);
      if (node.max === Infinity) {
        const split = { op: "split" as const, x: prog.length + 1, y: 0 };
        const start = prog.length;
        prog.push(split);
        emit(node.node, prog);
        prog.push({ op: "jmp", x: start });
        split.y = prog.length;
        return;
      }
      const splits: { op: "split"; x: number; y: number }[] = [];
      for (let i = node.min; i < node.max; i++) {
        const split = { op: "split" as const, x: prog.length + 1, y: 0 };
        splits.push(split);
        prog.push(split);
        emit(node.node, prog);
      }
      for (const split of splits) split.y = prog.length;
    }
  }
}

/** A compiled pattern: `test` is linear in the input (at most UA_MATCH_CHARS of it). */
export class UaPattern {
  readonly #prog: Inst[];

  private constructor(prog: Inst[]) {
    this.#prog = prog;
  }

  /** Compiles `source`, or throws PatternError saying what is not supported. */
  static compile(source: string): UaPattern {
    const ast = new Parser(source).parse();
    const size = sizeOf(ast) + 1;
    if (size > MAX_PROGRAM) {
      throw new PatternError(`the pattern is too large (${size} steps; at most ${MAX_PROGRAM})`);
    }
    const prog: Inst[] = [];
    emit(ast, prog);
    prog.push({ op: "match" });
    return new UaPattern(prog);
  }

  get size(): number {
    return this.#prog.length;
  }

  /** Does the pattern match anywhere in the first UA_MATCH_CHARS characters of `input`? */
  test(input: string): boolean {
    const text = input.length > UA_MATCH_CHARS ? input.slice(0, UA_MATCH_CHARS) : input;
    const n = this.#prog.length;
    const current = new Int32Array(n);
    const next = new Int32Array(n);
    let currentCount = 0;
    const seen = new Uint32Array(n);
    let generation = 0;
    const stack: number[] = [];
    for (let pos = 0; pos <= text.length; pos++) {
      generation++;
      // The pending states of this position, then a fresh start here (an unanchored search).
      let nextCount = 0;
      const add = (from: number): boolean => {
        stack.push(from);
        while (stack.length > 0) {
          const pc = stack.pop() as number;
          if (seen[pc] === generation) continue;
          seen[pc] = generation;
          const inst = this.#prog[pc] as Inst;
          if (inst.op === "match") return true;
          if (inst.op === "jmp") stack.push(inst.x);
          else if (inst.op === "split") stack.push(inst.y, inst.x);
          else if (inst.op === "assert") {
            if (holds(inst.kind, text, pos)) stack.push(pc + 1);
          } else next[nextCount++] = pc;
        }
        return false;
      };
      for (let i = 0; i < currentCount; i++) if (add(current[i] as number)) return true;
      if (add(0)) return true;
      if (pos === text.length) break;
      const code = text.charCodeAt(pos);
      // Advance every state that reads a character; they wait in `current` for the next position.
      let advanced = 0;
      for (let i = 0; i < nextCount; i++) {
        const pc = next[i] as number;
        const inst = this.#prog[pc] as Inst;
        if (inst.op === "char" && inst.test(code)) current[advanced++] = pc + 1;
      }
      currentCount = advanced;
    }
    return false;
  }
}

function holds(kind: "^" | "$" | "b" | "B", text: string, pos: number): boolean {
  if (kind === "^") return pos === 0;
  if (kind === "$") return pos === text.length;
  const before = pos > 0 && WORD(text.charCodeAt(pos - 1));
  const after = pos < text.length && WORD(text.charCodeAt(pos));
  return kind === "b" ? before !== after : before === after;
}
