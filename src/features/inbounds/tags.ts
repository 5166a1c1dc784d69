// Generated inbound tags: `<template name slug>-<port>`, suffixed -2, -3… when taken. A tag names the
// inbound on its core (and in users' link remarks), so it stays short and within the builder's rules.

/** Lower-case letters, digits and single dashes; "inbound" when nothing is left. */
export function slugOf(name: string): string {
  const slug = name
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 60)
    .replace(/-+$/, "");
  return slug === "" ? "inbound" : slug;
}

/** The tags to try, in order: `slug-port`, then `slug-port-2`, `slug-port-3`… */
export function* tagCandidates(templateName: string, port: number): Generator<string> {
  const base = `${slugOf(templateName)}-${port}`;
  yield base;
  for (let n = 2; ; n++) yield `${base}-${n}`;
}
