// Reads untrusted JSON objects with paths for every problem, and reports every key that nobody
// read: an ignored key must be named, never silently dropped.

import { isJsonObject, type JsonObject, joinPath } from "../../lib/json.ts";
import type { Problem } from "../core-types.ts";

export class ObjectReader {
  private readonly seen = new Set<string>();

  constructor(
    readonly value: JsonObject,
    readonly path: string,
    readonly problems: Problem[],
  ) {}

  /** Wraps `value` if it is an object; otherwise records a problem at `path`. */
  static of(value: unknown, path: string, problems: Problem[]): ObjectReader | undefined {
    if (isJsonObject(value)) return new ObjectReader(value, path, problems);
    problems.push({ path: path === "" ? "(root)" : path, message: "must be an object" });
    return undefined;
  }

  at(key: string): string {
    return joinPath(this.path, key);
  }

  problem(key: string, message: string): void {
    this.problems.push({ path: this.at(key), message });
  }

  has(key: string): boolean {
    return this.value[key] !== undefined;
  }

  raw(key: string): unknown {
    this.seen.add(key);
    return this.value[key];
  }

  string(key: string): string | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (typeof value === "string") return value;
    this.problem(key, "must be a string");
    return undefined;
  }

  bool(key: string): boolean | undefined {
    const value = this.raw(key);
    if (value === undefined || typeof value === "boolean") return value;
    this.problem(key, "must be true or false");
    return undefined;
  }

  int(key: string, min: number, max: number): number | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (typeof value === "number" && Number.isInteger(value) && value >= min && value <= max) return value;
    this.problem(key, `must be an integer from ${min} to ${max}`);
    return undefined;
  }

  /** An array of strings; a single string is accepted where Xray accepts one (`alpn`). */
  strings(key: string, allowSingle = false): string[] | undefined {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (allowSingle && typeof value === "string") return [value];
    if (Array.isArray(value) && value.every((item) => typeof item === "string")) return value;
    this.problem(key, "must be an array of strings");
    return undefined;
  }

  object(key: string): ObjectReader | undefined {
    const value = this.raw(key);
    if (value === undefined || value === null) return undefined;
    return ObjectReader.of(value, this.at(key), this.problems);
  }

  array(key: string): unknown[] | undefined {
    const value = this.raw(key);
    if (value === undefined || value === null) return undefined;
    if (Array.isArray(value)) return value;
    this.problem(key, "must be an array");
    return undefined;
  }

  /** Keys Xray knows that change nothing on a server inbound; documented in docs/CORES.md. */
  harmless(...keys: string[]): void {
    for (const key of keys) this.seen.add(key);
  }

  /** A key the target core cannot honour: reported if present. */
  unsupported(key: string, message: string): void {
    if (this.raw(key) !== undefined) this.problem(key, message);
  }

  /** Reports every key that was not read. Call last. */
  finish(): void {
    for (const key of Object.keys(this.value)) {
      if (!this.seen.has(key)) this.problem(key, "unknown or unsupported key");
    }
  }
}
