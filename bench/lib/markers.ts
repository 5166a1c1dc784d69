// Recorded runs live between markers in docs/benchmarks/<benchmark>.md, written by the benchmark itself, so the
// numbers there are always a whole run's, never hand-copied.
import { readFileSync, writeFileSync } from "node:fs";

/** Replaces the text between `<!-- name -->` and `<!-- /name -->` in the file with `markdown`. */
export function writeBetweenMarkers(file: string, name: string, markdown: string): void {
  const text = readFileSync(file, "utf8");
  const startMarker = `<!-- ${name} -->`;
  const endMarker = `<!-- /${name} -->`;
  const start = text.indexOf(startMarker);
  const end = text.indexOf(endMarker);
  if (start < 0 || end < start) throw new Error(`${file} has no markers ${startMarker} … ${endMarker}`);
  writeFileSync(file, `${text.slice(0, start + startMarker.length)}\n${markdown}\n${text.slice(end)}`);
}
