// A small, deterministic YAML writer for generated documents (mihomo): block mappings and sequences,
// every string double-quoted as JSON writes it (YAML 1.2's double-quoted scalars are a superset), so
// no value is ever read back as a number, boolean, null or date, whatever text it holds.
export type YamlValue = string | number | boolean | null | YamlValue[] | { [key: string]: YamlValue };

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

function key(name: string): string {
  return PLAIN_KEY.test(name) ? name : JSON.stringify(name);
}

function scalar(value: string | number | boolean | null): string {
  if (value === null) return "null";
  if (typeof value === "string") return JSON.stringify(value);
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

/** The document as YAML text, ending with a newline; `comments` become `# ` lines at the top. */
export function toYaml(value: { [key: string]: YamlValue }, comments: readonly string[] = []): string {
  const out = comments.map((line) => `# ${line.replace(/[\r\n]+/g, " ")}`);
  mapping(value, "", out);
  return `${out.join("\n")}\n`;
}
