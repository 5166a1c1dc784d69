// Where each value of a YAML text is, by the dotted path the API uses in its errors
// (`proxy-groups.0.proxies.1`), and where a syntax error is: the mihomo base document's counterpart of
// locate.ts. The `yaml` package (the one the service validates with) keeps every node's source range.
import { isMap, isScalar, isSeq, type Node, parseDocument } from "yaml";
import type { Position } from "./locate.ts";

function positionOf(text: string, offset: number): Position {
  const before = text.slice(0, offset);
  return { offset, line: before.split("\n").length, column: offset - before.lastIndexOf("\n") };
}

/** The position of a dotted path in the text (a key's line for a mapping entry), or its nearest parent's. */
export function locateYaml(text: string, path: string): Position | undefined {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) return undefined;
  let node: unknown = doc.contents;
  let found: number | undefined = (doc.contents as Node | null)?.range?.[0];
  for (const segment of path === "" ? [] : path.split(".")) {
    if (isMap(node)) {
      const pair = node.items.find(
        (p) => (isScalar(p.key) ? String(p.key.value) : String(p.key)) === segment,
      );
      if (pair === undefined) break;
      found = (pair.key as Node | null)?.range?.[0] ?? found;
      node = pair.value;
    } else if (isSeq(node) && /^\d+$/.test(segment)) {
      const item = node.items[Number(segment)] as Node | undefined;
      if (item === undefined) break;
      found = item.range?.[0] ?? found;
      node = item;
    } else break;
  }
  return found === undefined ? undefined : positionOf(text, found);
}

/** The parser's first complaint (its first line) and the line it points at, or undefined when it parses. */
export function yamlSyntaxError(text: string): { message: string; line: number | undefined } | undefined {
  const error = parseDocument(text).errors[0];
  if (error === undefined) return undefined;
  return { message: error.message.split("\n")[0] ?? error.message, line: error.linePos?.[0].line };
}
