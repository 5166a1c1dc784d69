// The body of one layout in a document format (mihomo, sing-box, xray-json), compiled once and
// rendered per request from a user's record. The pure renderer (links/formats/) writes the layout's
// document with a marker in place of each grant's credential; the text between markers is constant
// for every user of the layout, so it is kept as UTF-8 bytes (in a latin1 string: one character per
// byte) and a request joins it with each credential written between (as it is: credentials of the
// kinds written here need no escaping in a JSON string or a double-quoted YAML scalar). A credential
// of another kind, or a layout whose compiled template disagrees with the renderer on a probe, is
// rendered by the renderer itself.
import { createHash, randomBytes } from "node:crypto";
import type { UserValues } from "../../lib/user-values.ts";
import { packageVersion } from "../../lib/version.ts";
import type { LeftOut, SubscriptionEntry } from "../../links/formats/entries.ts";
import { renderMihomo } from "../../links/formats/mihomo.ts";
import { type Json, renderSingbox } from "../../links/formats/singbox.ts";
import { renderXrayJson } from "../../links/formats/xray-json.ts";
import type { YamlValue } from "../../links/formats/yaml.ts";
import { linkShapesOf } from "../access/links.ts";
import { grantEntries } from "../inbounds/host-entries.ts";
import { type LinkParams, linkTargetOf } from "../inbounds/link-params.ts";
import {
  credentialsAt,
  credentialText,
  KIND_BASE64,
  KIND_URL_SAFE,
  KIND_UUID,
  writeUuidText,
} from "./engine/user-record.ts";
import { withUserRemark } from "./subscription.ts";
import { userValuesAt } from "./user-values.ts";

export type DocumentFormat = "mihomo" | "sing-box" | "xray-json";

/** The operator's base documents, numbered: a template compiled for an older version is compiled again. */
export type DocumentBases = {
  version: number;
  mihomo: { [key: string]: YamlValue };
  singbox: { [key: string]: Json };
};

/**
 * The entries of a layout for these credentials: one per host entry (host-entries.ts) of each grant
 * whose inbound is active and gives a link; remarks with per-user variables filled from `user`.
 */
export function entriesOf(
  params: readonly (LinkParams | null)[],
  credentials: readonly string[],
  format: DocumentFormat,
  variant = 0,
  user?: UserValues,
): SubscriptionEntry[] {
  const active = grantEntries(params, format, variant);
  const shapes = linkShapesOf(active.map(({ p }) => p));
  return active.flatMap(({ p, grant }, i) =>
    shapes[i] == null
      ? []
      : [{ kind: "link" as const, target: linkTargetOf(withUserRemark(p, user), credentials[grant] ?? "") }],
  );
}

export function renderDocument(
  format: DocumentFormat,
  entries: readonly SubscriptionEntry[],
  bases: DocumentBases,
): { body: string; leftOut: LeftOut[] } {
  if (format === "mihomo") return renderMihomo(entries, bases.mihomo);
  if (format === "sing-box") return renderSingbox(entries, bases.singbox);
  return renderXrayJson(entries);
}

/** Scratch for the credentials of one answer (grown as needed). */
let out = Buffer.allocUnsafe(4096);
let credentials = new Int32Array(3 * 64);
/** Where each credential written into `out` ends (cuts[k + 1] for hole k; cuts[0] is 0). */
let cuts = new Int32Array(64);

/** A text's UTF-8 bytes as a latin1 string: a character per byte. */
function bytesOf(text: string): string {
  return Buffer.from(text, "utf8").toString("latin1");
}

export class DocumentTemplate {
  /** The constant text between credentials: UTF-8 bytes as a latin1 string (a character per byte). */
  readonly #chunks: readonly string[];
  /** The grant whose credential follows chunk k. */
  readonly #holes: readonly number[];
  readonly #allByBuilders: boolean;
  readonly tag: string;
  readonly bytes: number;
  readonly leftOut: readonly LeftOut[];
  /** Some remark has per-user variables: every body is rendered by the builders. */
  readonly #userRemarks: boolean;

  constructor(
    readonly format: DocumentFormat,
    private readonly params: readonly (LinkParams | null)[],
    readonly bases: DocumentBases,
    /** Which item of the hosts' SNI and Host lists this template writes (host-entries.ts). */
    private readonly variant = 0,
  ) {
    const nonce = randomBytes(9).toString("hex");
    const markers = params.map((_, grant) => `m${nonce}g${grant}x`);
    const compiled = renderDocument(format, entriesOf(params, markers, format, variant), bases);
    this.leftOut = compiled.leftOut;
    const pattern = new RegExp(`m${nonce}g(\\d+)x`, "g");
    const chunks: string[] = [];
    const holes: number[] = [];
    let last = 0;
    for (const match of compiled.body.matchAll(pattern)) {
      chunks.push(bytesOf(compiled.body.slice(last, match.index)));
      holes.push(Number(match[1]));
      last = (match.index ?? 0) + match[0].length;
    }
    chunks.push(bytesOf(compiled.body.slice(last)));
    this.#chunks = chunks;
    this.#holes = holes;
    const hash = createHash("sha256").update(`${packageVersion}\u0000${format}\u0000${bases.version}`);
    for (const [k, chunk] of chunks.entries())
      hash.update(chunk, "latin1").update(`\u0000${holes[k] ?? ""}\u0000`);
    this.tag = hash.digest("base64url").slice(0, 8);
    this.bytes = 256 + chunks.reduce((sum, chunk) => sum + chunk.length + 64, 0);
    this.#userRemarks = grantEntries(params, format, variant).some(({ p }) => p.userRemark === true);
    this.#allByBuilders = this.#userRemarks || !this.#agreesOnProbes();
  }

  /**
   * The body of the record at `at`: its UTF-8 bytes as a latin1 string (write it with the latin1
   * encoding; Buffer.from(body, "latin1") gives the bytes). The credentials are written into one
   * scratch buffer and read back as one string; the body joins slices of it with the constant
   * chunks (a rope: the socket write copies it once, no buffer is allocated per request).
   */
  render(page: Buffer, at: number): string {
    const count = readCredentials(page, at);
    if (this.#allByBuilders || count !== this.params.length) return this.renderByBuilders(page, at);
    const holes = this.#holes;
    let need = 0;
    for (let k = 0; k < holes.length; k++) need += (credentials[3 * (holes[k] as number) + 2] as number) + 36;
    if (need > out.length) out = Buffer.allocUnsafe(Math.max(need, 2 * out.length));
    if (cuts.length < holes.length + 1) cuts = new Int32Array(2 * holes.length + 2);
    let o = 0;
    for (let k = 0; k < holes.length; k++) {
      const grant = holes[k] as number;
      const kind = credentials[3 * grant] as number;
      const start = credentials[3 * grant + 1] as number;
      const length = credentials[3 * grant + 2] as number;
      if (kind === KIND_UUID) o = writeUuidText(page, start, out, o);
      else if (kind === KIND_URL_SAFE || kind === KIND_BASE64) {
        page.copy(out, o, start, start + length);
        o += length;
      } else return this.renderByBuilders(page, at);
      cuts[k + 1] = o;
    }
    const written = out.toString("latin1", 0, o);
    const chunks = this.#chunks;
    let body = chunks[0] as string;
    for (let k = 0; k < holes.length; k++) {
      body += written.slice(cuts[k] as number, cuts[k + 1] as number);
      body += chunks[k + 1] as string;
    }
    return body;
  }

  /** The body through the pure renderer, from the credentials as text. */
  renderByBuilders(page: Buffer, at: number): string {
    const count = readCredentials(page, at);
    const texts = this.params.map((_, i) =>
      i < count
        ? credentialText(
            page,
            credentials[3 * i] as number,
            credentials[3 * i + 1] as number,
            credentials[3 * i + 2] as number,
          )
        : "",
    );
    const params = this.params.map((p, i) => (i < count ? p : null));
    const user = this.#userRemarks ? userValuesAt(page, at, Date.now()) : undefined;
    const entries = entriesOf(params, texts, this.format, this.variant, user);
    return bytesOf(renderDocument(this.format, entries, this.bases).body);
  }

  /** Whether the compiled chunks give what the renderer gives, for credentials of every kind written here. */
  #agreesOnProbes(): boolean {
    const probes = this.params.map((p, i) => probeFor(p, i));
    const entries = entriesOf(this.params, probes, this.format, this.variant);
    const expected = bytesOf(renderDocument(this.format, entries, this.bases).body);
    let text = "";
    for (let k = 0; k < this.#chunks.length; k++) {
      text += this.#chunks[k] as string;
      const grant = this.#holes[k];
      if (grant !== undefined) text += bytesOf(probes[grant] ?? "");
    }
    return text === expected;
  }
}

function probeFor(params: LinkParams | null, i: number): string {
  if (params?.protocol === "vless" || params?.protocol === "vmess")
    return `0f1e2d3c-4b5a-4697-8877-${String(i).padStart(12, "0")}`;
  if (params?.protocol === "shadowsocks" && params.shadowsocksMethod?.startsWith("2022-")) {
    return Buffer.alloc(params.shadowsocksMethod.includes("128") ? 16 : 32, i + 0xfb).toString("base64");
  }
  return `Ab0_-.~q8XzKp3${i}`;
}

/** Where each credential of the record is, into the module's `credentials` (grown as needed). */
function readCredentials(page: Buffer, at: number): number {
  const count = page.readUInt16LE(at + 6);
  if (credentials.length < 3 * count) credentials = new Int32Array(3 * count);
  return credentialsAt(page, at, credentials);
}
