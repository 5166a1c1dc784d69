// A small, deterministic YAML writer for generated documents (mihomo): block mappings and sequences,
// every string double-quoted, so no value is ever read back as a number, boolean, null or date,
// whatever text it holds. Safe for the strictest reader whatever a name holds (issue 45): go-yaml,
// like YAML 1.1, breaks lines at U+0085, U+2028 and U+2029 too, so those, every control character,
// and the bidi overrides and isolates are written as escapes, never as themselves, in scalars, keys
// and comments alike; the document's only raw line breaks are the writer's own LFs.
export type YamlValue = string | number | boolean | null | YamlValue[] | { [key: string]: YamlValue };

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** Characters a double-quoted scalar writes as an escape: `"` and `\\`, controls, YAML 1.1's line
 * breaks, the bidi controls, BOM and the non-characters U+FFFE/U+FFFF; lone surrogates (which no
 * YAML can hold) become U+FFFD. Astral characters are printable and stay as they are. */
const ESCAPED =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  /["\\\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ufffe\uffff]|[\ud800-\udfff]/gu;

function escapeChar(char: string): string {
  if (char === '"' || char === "\\") return `\\${char}`;
  const code = char.charCodeAt(0);
  if (code >= 0xd800 && code <= 0xdfff) return "\\uFFFD";
  return `\\u${code.toString(16).toUpperCase().padStart(4, "0")}`;
}

/** A double-quoted YAML scalar that every reader (1.1 and 1.2) reads back as exactly `text`. */
export function quoted(text: string): string {
  return `"${text.replace(ESCAPED, escapeChar)}"`;
}

function key(name: string): string {
  return PLAIN_KEY.test(name) ? name : quoted(name);
}

function scalar(value: string | number | boolean | null): string {
  if (value === null) return "null";
  if (typeof value === "string") return quoted(value);
  if (typeof value === "number" && !Number.isFinite(value)) throw new Error("YAML: a number must be finite");
  return String(value);
}

function inline(value: YamlValue): string | undefined {
  if (value === null || typeof value !== "object") return scalar(value);
  if (Array.isArray(value)) return value.length === 0 ? "[]" : undefined;
  return Object.keys(value).length === 0 ? "{}" : undefined;
}

function mapping(value: { [key: string]: YamlValue }, pad: string, out: string[], firstLead = pad): void {
  let lead = firstLead;
  for (const [name, item] of Object.entries(value)) {
    const text = inline(item);
    if (text !== undefined) out.push(`${lead}${key(name)}: ${text}`);
    else {
      out.push(`${lead}${key(name)}:`);
      block(item, `${pad}  `, out);
    }
    lead = pad;
  }
}

/** A non-empty sequence or mapping at this indentation. */
function block(value: YamlValue, pad: string, out: string[]): void {
  if (!Array.isArray(value)) {
    mapping(value as { [key: string]: YamlValue }, pad, out);
    return;
  }
  for (const item of value) {
    const text = inline(item);
    if (text !== undefined) out.push(`${pad}- ${text}`);
    else if (Array.isArray(item)) {
      out.push(`${pad}-`);
      block(item, `${pad}  `, out);
    } else mapping(item as { [key: string]: YamlValue }, `${pad}  `, out, `${pad}- `);
  }
}

/** A comment's text on one line: every break and control written as its escape (as in a scalar). */
function commentLine(text: string): string {
  return quoted(text).slice(1, -1);
}

/** The document as YAML text, ending with a newline; `comments` become `# ` lines at the top. */
export function toYaml(value: { [key: string]: YamlValue }, comments: readonly string[] = []): string {
  const out = comments.map((line) => `# ${commentLine(line)}`);
  mapping(value, "", out);
  return `${out.join("\n")}\n`;
}
