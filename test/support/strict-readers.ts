// Readers of each subscription format as strict as the strictest client that reads it, for tests
// that feed hostile names through every format (test/attack/hostile-names.test.ts).
//
// YAML: go-yaml (mihomo's parser) follows YAML 1.1 and ends a line — so a comment — at CR, LF,
// U+0085, U+2028 and U+2029; the `yaml` package, even with version "1.1", breaks only at CR and LF
// (checked: the issue-45 PoC parses to no injected key there). So readYaml() first splits the text
// at every YAML 1.1 break, parses what go-yaml would see, and parses the text as written too: both
// must be the same document. It also refuses characters no YAML reader accepts raw (controls other
// than TAB and LF, C1, BOM inside the text).
// JSON: JSON.parse is already RFC 8259's strict reader (no raw control characters in strings).
// Headers: what Node's own check and every HTTP/1.1 reader accept: printable ASCII and TAB.
import { parse as parseYaml } from "yaml";

/** Every line break of YAML 1.1 (and so of go-yaml): CRLF, CR, LF, NEL, LS, PS. */
const YAML_11_BREAKS = /\r\n|[\r\n\u0085\u2028\u2029]/gu;
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const RAW_IN_YAML = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\ufeff\ufffe\uffff]|[\ud800-\udfff]/u;

export class StrictReadError extends Error {}

function codePoint(char: string): string {
  return `U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;
}

/** The document go-yaml would read from `text` (a mapping), or a StrictReadError saying why not. */
export function readYaml(text: string): Record<string, unknown> {
  const raw = RAW_IN_YAML.exec(text);
  if (raw !== null) throw new StrictReadError(`raw ${codePoint(raw[0])} at ${raw.index}`);
  const options = { version: "1.1", uniqueKeys: true, strict: true, prettyErrors: false } as const;
  const asGoYamlSees = parseYaml(text.split(YAML_11_BREAKS).join("\n"), options) as unknown;
  const asWritten = parseYaml(text, options) as unknown;
  if (JSON.stringify(asGoYamlSees) !== JSON.stringify(asWritten)) {
    throw new StrictReadError("the document reads differently when U+0085/U+2028/U+2029 break lines");
  }
  if (typeof asGoYamlSees !== "object" || asGoYamlSees === null || Array.isArray(asGoYamlSees)) {
    throw new StrictReadError("not a mapping");
  }
  return asGoYamlSees as Record<string, unknown>;
}

/** A problem for each header value an HTTP/1.1 reader would refuse or split (CR, LF, controls, non-ASCII). */
export function headerProblems(headers: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    for (const one of Array.isArray(value) ? value : [value]) {
      if (typeof one !== "string") continue;
      const bad = /[^\t\u0020-\u007e]/u.exec(one);
      if (bad !== null) problems.push(`${name}: raw ${codePoint(bad[0])}`);
    }
  }
  return problems;
}
