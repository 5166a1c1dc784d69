// The links text of one layout (a list of inbounds, in grant order), compiled once and written per
// request from a user's record: the text between the secrets is constant for every user of the
// layout and kept as bytes, copied between the secrets that secret-writers.ts writes straight from
// the stored credentials. The caller encodes the whole text to base64 in one native call. Anything
// the writers do not handle exactly goes through the builders themselves (renderLinks in
// subscription.ts), so every body equals the pure renderer's, byte for byte.
import { createHash } from "node:crypto";
import { packageVersion } from "../../lib/version.ts";
import type { LinkShape } from "../../links/shape.ts";
import { EMPTY_SUBSCRIPTION_LINE } from "../../links/subscription.ts";
import { linkShapesOf } from "../access/links.ts";
import { grantEntries } from "../inbounds/host-entries.ts";
import type { LinkParams } from "../inbounds/link-params.ts";
import type { TextBuffer } from "./base64.ts";
import { credentialsAt, credentialText } from "./engine/user-record.ts";
import { type SecretWriter, secretWriterFor, writtenVariant } from "./secret-writers.ts";
import { renderLinks } from "./subscription.ts";
import { userValuesAt } from "./user-values.ts";

/** One link: the grant (position in the layout) whose credential fills it, how, and the text after it. */
type Hole = {
  readonly grant: number;
  readonly writer: SecretWriter;
  /** Constant text from the secret's end to the next secret's written part, by the writer's variant. */
  readonly after: readonly Uint8Array[];
};

/** Characters of the layout's part of the ETag (48 bits). */
const LAYOUT_TAG_LENGTH = 8;

let credentials = new Int32Array(3 * 64);

export class LinksTemplate {
  /** Constant text before the first hole (or the whole text when there is none). */
  readonly #first: Uint8Array;
  readonly #holes: readonly Hole[];
  /** Set when some link has no writer: every body of this layout is rendered by the builders. */
  readonly #allByBuilders: boolean;
  /** The body when no grant gives a link (base64 of a comment line), else undefined. */
  readonly #empty: string | undefined;
  /** Changes whenever any constant of the body changes (or the code that writes it). */
  readonly tag: string;
  /** About what the compiled template keeps in memory. */
  readonly bytes: number;
  /** Links of active inbounds that no user of this layout gets (parameters no link can be made of). */
  readonly #alwaysSkipped: number;
  /** Links the last render left out (logged by the caller). */
  lastSkipped = 0;
  /** Some remark has per-user variables: filled from the record by the builders. */
  readonly #userRemarks: boolean;

  constructor(
    private readonly params: readonly (LinkParams | null)[],
    /** Which item of the hosts' SNI and Host lists this template writes (host-entries.ts). */
    private readonly variant = 0,
  ) {
    const active = grantEntries(params, "links", variant);
    const shapes = linkShapesOf(active.map(({ p }) => p));
    const links = active.flatMap(({ p, grant }, i) => {
      const shape = shapes[i];
      return shape == null ? [] : [{ grant, shape, writer: secretWriterFor(p, shape) }];
    });
    this.#userRemarks = active.some(({ p }) => p.userRemark === true);
    this.#allByBuilders = this.#userRemarks || links.some((link) => link.writer === undefined);
    this.#alwaysSkipped = active.length - links.length;
    // Text before link k's written part: its head and its secret's constant start.
    const lead = links.map(({ shape, writer }) => shape.head + (writer?.before ?? ""));
    this.#first = Buffer.from(lead[0] ?? "", "utf8");
    this.#holes = links.map(({ grant, shape, writer }, k) => {
      const next = k + 1 < links.length ? `\n${lead[k + 1]}` : "";
      const after = (writer?.after ?? [""]).map((text) => Buffer.from(`${text}${shape.tail}${next}`, "utf8"));
      return { grant, writer: writer as SecretWriter, after };
    });
    this.#empty =
      links.length === 0 ? Buffer.from(EMPTY_SUBSCRIPTION_LINE, "utf8").toString("base64") : undefined;
    this.tag = layoutTag(links);
    let bytes = 256 + this.#first.length;
    for (const hole of this.#holes) for (const text of hole.after) bytes += 64 + text.length;
    this.bytes = bytes;
  }

  /**
   * Writes the links text of the user whose record is at `at` into `out` (from its start; the text
   * is out.bytes[0, out.end)), or returns false: then renderByBuilders() gives the body.
   */
  renderInto(out: TextBuffer, page: Buffer, at: number): boolean {
    this.lastSkipped = this.#alwaysSkipped;
    const count = readCredentials(page, at);
    if (this.#empty !== undefined || this.#allByBuilders || count !== this.params.length) return false;
    out.end = 0;
    out.append(this.#first);
    const holes = this.#holes;
    for (let k = 0; k < holes.length; k++) {
      const { grant, writer, after } = holes[k] as Hole;
      const length = credentials[3 * grant + 2] as number;
      out.reserve(writer.room(length));
      const end = writer.write(
        page,
        credentials[3 * grant] as number,
        credentials[3 * grant + 1] as number,
        length,
        out.bytes,
        out.end,
      );
      if (end < 0) return false;
      out.end = end;
      out.append(after[writtenVariant.value] as Uint8Array);
    }
    return true;
  }

  /** The base64 body through the link builders (renderLinks), from the credentials as text. */
  renderByBuilders(page: Buffer, at: number): string {
    if (this.#empty !== undefined) return this.#empty;
    const count = readCredentials(page, at);
    const grants = this.params.map((link_params, i) => ({
      link_params: i < count ? link_params : null,
      credential:
        i < count
          ? credentialText(
              page,
              credentials[3 * i] as number,
              credentials[3 * i + 1] as number,
              credentials[3 * i + 2] as number,
            )
          : "",
    }));
    const user = this.#userRemarks ? userValuesAt(page, at, Date.now()) : undefined;
    const rendered = renderLinks(grants, this.variant, user);
    this.lastSkipped = rendered.skipped;
    return rendered.body;
  }
}

/** Where each credential of the record is, into the module's `credentials` (grown as needed). */
function readCredentials(page: Buffer, at: number): number {
  const count = page.readUInt16LE(at + 6);
  if (credentials.length < 3 * count) credentials = new Int32Array(3 * count);
  return credentialsAt(page, at, credentials);
}

/**
 * What the body of this layout depends on besides the credentials: the constant text of each link
 * and, through a fixed probe, how its secret is written; and the code's version.
 */
function layoutTag(links: readonly { grant: number; shape: LinkShape }[]): string {
  const hash = createHash("sha256").update(packageVersion);
  for (const { grant, shape } of links) {
    let probe: string;
    try {
      probe = shape.secret("0f1e2d3c-4b5a-4697-8877-66554433aa11");
    } catch {
      probe = "!";
    }
    hash.update(`\u0000${grant}\u0000${shape.head}\u0000${probe}\u0000${shape.tail}`);
  }
  return hash.digest("base64url").slice(0, LAYOUT_TAG_LENGTH);
}
