// JSON as requests and stored templates carry it, and the path a problem inside it is reported at:
// one definition for templates, the inbound builder and the lobby codec.

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `settings` + `clients` → `settings.clients`, + 0 → `settings.clients[0]`; the root is "". */
export function joinPath(base: string, key: string | number): string {
  if (typeof key === "number") return `${base}[${key}]`;
  return base === "" ? key : `${base}.${key}`;
}
