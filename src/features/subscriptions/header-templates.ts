// The operator's templated headers (issue 48), compiled once when the settings are read: each value
// is split at its variables into constant parts, made header-safe once, so an answer joins the parts
// with the variables it uses, computed from the user's record alone (a name decoded only for
// {USERNAME}, a date formatted only for {EXPIRE_DATE}). Gives exactly headerSafe(fillTemplate(value,
// values)) of the same user: headerSafe() works character by character and a variable's value is
// never read again for variables, so the parts can be made safe apart.
import { headerSafe } from "../../lib/text.ts";
import { dataLeft, daysLeft, expireDate, UNLIMITED } from "../../lib/user-values.ts";
import {
  DOWNLOAD,
  EXPIRE,
  NAME,
  NAME_LENGTH,
  readU16,
  STATUS,
  STATUS_CODES,
  TOTAL,
  UPLOAD,
} from "./engine/user-record.ts";

/** The variables a header value may hold, by index (what `uses` bit i means). */
const VARIABLES = [
  "USERNAME",
  "DATA_LEFT",
  "DAYS_LEFT",
  "EXPIRE_DATE",
  "STATUS",
  "SUBSCRIPTION_URL",
] as const;
const INDEX: ReadonlyMap<string, number> = new Map(VARIABLES.map((name, i) => [name, i]));
const VARIABLE = /\{([A-Z_]+)\}/g;

/** One header: `parts[0] + value(vars[0]) + parts[1] + …`, the parts already header-safe. */
type CompiledHeader = {
  readonly name: string;
  readonly parts: readonly string[];
  readonly vars: readonly number[];
};

export class HeaderTemplates {
  readonly #headers: readonly CompiledHeader[];
  /** Bit i set: some header uses VARIABLES[i]. */
  readonly #uses: number;
  /** The variables' values of the answer being written (only the used ones are set). */
  readonly #values: string[] = VARIABLES.map(() => "");

  constructor(headers: readonly { name: string; value: string }[]) {
    let uses = 0;
    this.#headers = headers.map(({ name, value }) => {
      const parts: string[] = [];
      const vars: number[] = [];
      let from = 0;
      for (const match of value.matchAll(VARIABLE)) {
        const index = INDEX.get(match[1] as string);
        if (index === undefined) continue; // unknown: stays as written
        parts.push(value.slice(from, match.index));
        vars.push(index);
        uses |= 1 << index;
        from = match.index + match[0].length;
      }
      parts.push(value.slice(from));
      return { name, parts: parts.map(headerSafe), vars };
    });
    this.#uses = uses;
  }

  get length(): number {
    return this.#headers.length;
  }

  /** The headers' names in order (the value of header j goes at 2j + 1 of the list writeInto fills). */
  get names(): readonly string[] {
    return this.#headers.map((header) => header.name);
  }

  /** Pushes each header's name and value for the user whose record is at `at` onto `out`. */
  pushInto(out: string[], page: Buffer, at: number, nowMs: number, subscriptionUrl: string): void {
    const from = out.length;
    for (const { name } of this.#headers) out.push(name, "");
    this.writeInto(out, from, page, at, nowMs, subscriptionUrl);
  }

  /**
   * Writes each header's value for the user whose record is at `at` into out[from + 2j + 1] (the
   * names at out[from + 2j] are left as they are: a reused list holds them already).
   */
  writeInto(
    out: string[],
    from: number,
    page: Buffer,
    at: number,
    nowMs: number,
    subscriptionUrl: string,
  ): void {
    const uses = this.#uses;
    const values = this.#values;
    if (uses & 1) {
      const length = readU16(page, at + NAME_LENGTH);
      values[0] = safe(page.toString("utf8", at + NAME, at + NAME + length));
    }
    if (uses & 2) {
      const used = page.readDoubleLE(at + UPLOAD) + page.readDoubleLE(at + DOWNLOAD);
      values[1] = safe(dataLeft(page.readDoubleLE(at + TOTAL), used));
    }
    if (uses & 4) values[2] = safe(daysLeft(page.readDoubleLE(at + EXPIRE), nowMs));
    if (uses & 8) values[3] = safe(expireDate(page.readDoubleLE(at + EXPIRE)));
    if (uses & 16) values[4] = STATUS_CODES[page[at + STATUS] as number] ?? "";
    if (uses & 32) values[5] = safe(subscriptionUrl);
    const headers = this.#headers;
    for (let h = 0; h < headers.length; h++) {
      const { parts, vars } = headers[h] as CompiledHeader;
      let value = parts[0] as string;
      for (let i = 0; i < vars.length; i++)
        value += (values[vars[i] as number] as string) + (parts[i + 1] as string);
      out[from + 2 * h + 1] = value;
    }
  }
}

/** "∞" (no limit, never) as headerSafe() writes it: the value most users' variables have, made once. */
const SAFE_UNLIMITED = headerSafe(UNLIMITED);

/** headerSafe() for a value that is mostly printable ASCII already (then it is returned as it is). */
function safe(value: string): string {
  if (value === UNLIMITED) return SAFE_UNLIMITED;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return headerSafe(value);
  }
  return value;
}
