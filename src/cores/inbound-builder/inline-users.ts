// Users carried INLINE in AddInbound: built users (buildUser) appended to a built inbound's proxy
// settings as entries of the proxy's repeated users field, so an inbound is (re)placed on a core
// with its users in one call instead of one AlterInbound AddUser each. Protobuf merges concatenated
// messages and appends repeated fields, so each user's encoded bytes are written once, framed as a
// field entry, after the proxy settings' bytes: nothing already encoded is encoded again.
// A size cap keeps the AddInbound request under the core's gRPC receive limit; the users that do not
// fit are left for AddUser.

import { type DescMessage, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { UserSchema as V2UserSchema } from "../../gen/v2ray/common/protocol_pb.ts";
import { InboundHandlerConfigSchema as V2InboundSchema } from "../../gen/v2ray/core_pb.ts";
import { ServerConfigSchema as V2TrojanServerSchema } from "../../gen/v2ray/proxy/trojan_pb.ts";
import { ConfigSchema as V2VlessInboundSchema } from "../../gen/v2ray/proxy/vless_inbound_pb.ts";
import { ConfigSchema as V2VmessInboundSchema } from "../../gen/v2ray/proxy/vmess_inbound_pb.ts";
import { UserSchema as XrayUserSchema } from "../../gen/xray/common/protocol_pb.ts";
import { InboundHandlerConfigSchema as XrayInboundSchema } from "../../gen/xray/core_pb.ts";
import * as ss2022Legacy from "../../gen/xray/proxy/shadowsocks_2022_legacy_pb.ts";
import { MultiUserServerConfigSchema as Ss2022ServerSchema } from "../../gen/xray/proxy/shadowsocks_2022_pb.ts";
import { ServerConfigSchema as XrayShadowsocksServerSchema } from "../../gen/xray/proxy/shadowsocks_pb.ts";
import { ServerConfigSchema as XrayTrojanServerSchema } from "../../gen/xray/proxy/trojan_pb.ts";
import { ConfigSchema as XrayVlessInboundSchema } from "../../gen/xray/proxy/vless_inbound_pb.ts";
import { ConfigSchema as XrayVmessInboundSchema } from "../../gen/xray/proxy/vmess_inbound_pb.ts";
import type { Problem } from "../core-types.ts";
import type { BuiltInbound, BuiltUser } from "./built.ts";
import { summarizeBuiltInbound, summarizeBuiltUser, UsersCheck } from "./guards.ts";

/**
 * grpc-go's default receive limit (v2ray and Xray keep it) is 4 MiB; an AddInbound request stays
 * at or under this many bytes, leaving room for the rest of the HTTP/2 frame and any estimate slack.
 */
export const INLINE_REQUEST_MAX_BYTES = 3 * 1024 * 1024;

/** The proxy settings' field holding the users, by proxy type; absent = users cannot go inline. */
const USERS_FIELD = new Map<string, number>(
  (
    [
      [V2VlessInboundSchema, "clients"],
      [V2VmessInboundSchema, "user"],
      [V2TrojanServerSchema, "users"],
      [XrayVlessInboundSchema, "clients"],
      [XrayVmessInboundSchema, "user"],
      [XrayTrojanServerSchema, "users"],
      [XrayShadowsocksServerSchema, "users"],
      // The legacy (pre-25.1) SS-2022 config shares the type name and the field number 3.
      [Ss2022ServerSchema, "users"],
    ] as [DescMessage, string][]
  ).map(([schema, name]) => [schema.typeName, fieldNumber(schema, name)]),
);

/** The field of a proxy settings type that holds its users inline, or undefined (relay-record.ts). */
export function inlineUsersFieldOf(proxyType: string): number | undefined {
  return USERS_FIELD.get(proxyType);
}

function fieldNumber(schema: DescMessage, name: string): number {
  const field = schema.fields.find((candidate) => candidate.localName === name);
  if (field === undefined) throw new Error(`${schema.typeName} has no field ${name}`);
  return field.number;
}

/** Whether this inbound's proxy settings can hold users inline (V2Ray shadowsocks holds its one already). */
export function takesInlineUsers(inbound: BuiltInbound): boolean {
  const type = inbound.config.proxySettings?.type;
  return type !== undefined && USERS_FIELD.has(type);
}

/** One user framed as an entry of the proxy's users field, with the bytes the layout expects there. */
export function inlineEntry(inbound: BuiltInbound, user: BuiltUser): Uint8Array {
  const number = USERS_FIELD.get(inbound.config.proxySettings?.type ?? "");
  if (number === undefined) throw new Error(`inbound ${inbound.ref.tag} cannot hold users inline`);
  if (user.layout !== inbound.layout || user.protocol !== inbound.ref.protocol) {
    throw new Error(`user ${user.email} was built for another layout or protocol than ${inbound.ref.tag}`);
  }
  const writer = new BinaryWriter();
  writer.tag(number, WireType.LengthDelimited).bytes(userBytes(user));
  return writer.finish();
}

/** Pre-25.1 SS-2022 holds the shadowsocks_2022.User itself (the AddUser account's own bytes). */
function userBytes(user: BuiltUser): Uint8Array {
  if (user.flavor === "v2ray") return toBinary(V2UserSchema, user.user);
  const account = user.user.account;
  if (account?.type === ss2022Legacy.UserSchema.typeName) return account.value;
  return toBinary(XrayUserSchema, user.user);
}

export type InlineSplit = {
  /** The inbound with the first `inlined` users inside its proxy settings. */
  inbound: BuiltInbound;
  /** How many of `users` (from the start) went inline; the rest go by AddUser. */
  inlined: number;
};

/**
 * Puts users from the start of `users` inline into `inbound` while the AddInbound request stays
 * within `maxRequestBytes`; the rest are left for AddUser. An inbound whose proxy holds no users
 * through the API comes back as it was with none inlined.
 */
export function withInlineUsers(
  inbound: BuiltInbound,
  users: readonly BuiltUser[],
  maxRequestBytes: number = INLINE_REQUEST_MAX_BYTES,
): InlineSplit {
  const appender = InlineAppender.for(inbound, maxRequestBytes);
  if (appender === undefined) return { inbound, inlined: 0 };
  for (const user of users) if (!appender.add(user)) break;
  return appender.finish();
}

/** Entries folded into one buffer at a time (InlineAppender). */
const FOLD_EVERY = 256;

/** Users encoded per slice in withInlineUsersInSlices: a few milliseconds of work. */
const APPEND_SLICE = 500;

/**
 * withInlineUsers a slice at a time, awaiting `breathe` between slices, so appending (and guarding)
 * 30,000 users does not hold the event loop for the few hundred milliseconds it takes: same result.
 */
export async function withInlineUsersInSlices(
  inbound: BuiltInbound,
  users: readonly BuiltUser[],
  maxRequestBytes: number,
  breathe: () => Promise<void> | undefined,
): Promise<InlineSplit> {
  const appender = InlineAppender.for(inbound, maxRequestBytes);
  if (appender === undefined) return { inbound, inlined: 0 };
  for (let from = 0; from < users.length; from += APPEND_SLICE) {
    await breathe();
    const slice = users.slice(from, from + APPEND_SLICE);
    if (!slice.every((user) => appender.add(user))) break;
  }
  return appender.finish();
}

/**
 * withInlineUsersInSlices fed a batch at a time, as the caller builds users: a full apply appends
 * each slice of built users and drops it, instead of holding an inbound's 20,000 built users (about
 * 800 bytes of heap each) until all are built. Same request, same split, as one call with all of them.
 */
export class InlineBatches {
  readonly #appender: InlineAppender | undefined;
  #isFull = false;

  constructor(
    private readonly inbound: BuiltInbound,
    maxRequestBytes: number,
    private readonly breathe: () => Promise<void> | undefined,
  ) {
    this.#appender = InlineAppender.for(inbound, maxRequestBytes);
  }

  /**
   * Appends users from the start of `users` while they fit, a slice at a time with `breathe` in
   * between; returns those that did not (from the first that did not fit on, all of them after it).
   */
  async add(users: readonly BuiltUser[]): Promise<readonly BuiltUser[]> {
    const appender = this.#appender;
    if (appender === undefined || this.#isFull) return users;
    for (let from = 0; from < users.length; from += APPEND_SLICE) {
      await this.breathe();
      const end = Math.min(users.length, from + APPEND_SLICE);
      for (let i = from; i < end; i++) {
        if (!appender.add(users[i] as BuiltUser)) {
          this.#isFull = true;
          return users.slice(i);
        }
      }
    }
    return [];
  }

  finish(): InlineSplit {
    return this.#appender?.finish() ?? { inbound: this.inbound, inlined: 0 };
  }
}

/**
 * Encodes users one at a time as entries of the proxy's users field, and puts each through the
 * request guard's user checks on the way (guards.ts UsersCheck, numbered after the inbound's own
 * users): the guard then takes these findings instead of decoding the whole request again.
 */
class InlineAppender {
  readonly #entries: Uint8Array[] = [];
  readonly #chunks: Uint8Array[] = [];
  #folded = 0;
  readonly #emails: string[] = [];
  readonly #problems: Problem[] = [];
  readonly #credentials: string[] = [];
  readonly #check: UsersCheck;
  #size: number;

  static for(inbound: BuiltInbound, maxRequestBytes: number): InlineAppender | undefined {
    const proxy = inbound.config.proxySettings;
    if (proxy === undefined || !takesInlineUsers(inbound)) return undefined;
    return new InlineAppender(inbound, proxy.value, maxRequestBytes);
  }

  private constructor(
    private readonly inbound: BuiltInbound,
    private readonly baseValue: Uint8Array,
    private readonly maxRequestBytes: number,
  ) {
    // The request wraps the config in up to three more length prefixes (≤ 5 bytes each past 3 MiB).
    this.#size = requestBytesWithout(inbound) + 16;
    // Every user already in the inbound (the builder's, and any appended before) comes first, so
    // an appended user repeating one is a duplicate; their own findings are the guard's (or were
    // recorded when they were appended), so they are not recorded again here.
    const own = summarizeBuiltInbound(inbound);
    let isRecording = false;
    const add = (path: string, message: string) => {
      if (isRecording) this.#problems.push({ path: `inbound.${path}`, message });
    };
    this.#check = new UsersCheck(own.expectedAccountType, add);
    for (const user of own.users ?? []) this.#check.next(user);
    isRecording = true;
    if (inbound.inline !== undefined) {
      this.#problems.push(...inbound.inline.problems);
      this.#credentials.push(...inbound.inline.credentials);
    }
  }

  /** false when the user would not fit (nothing is added then, nor any user after it). */
  add(user: BuiltUser): boolean {
    const entry = inlineEntry(this.inbound, user);
    if (this.#size + entry.byteLength > this.maxRequestBytes) return false;
    this.#size += entry.byteLength;
    this.#entries.push(entry);
    // Folded into one buffer every few hundred users: 30,000 small arrays would outlive the young
    // generation while the rest are encoded, and be the old generation's garbage afterwards.
    if (this.#entries.length >= FOLD_EVERY) this.#fold();
    this.#emails.push(user.email);
    const summary = summarizeBuiltUser(user);
    this.#check.next(summary);
    if (summary.credential !== null) this.#credentials.push(summary.credential);
    return true;
  }

  /** The entries so far into one chunk: #entries holds only those not folded yet. */
  #fold(): void {
    this.#chunks.push(concat(this.#entries));
    this.#folded += this.#entries.length;
    this.#entries.length = 0;
  }

  finish(): InlineSplit {
    const inbound = this.inbound;
    const proxy = inbound.config.proxySettings;
    const inlined = this.#folded + this.#entries.length;
    if (inlined === 0 || proxy === undefined) return { inbound, inlined: 0 };
    const value = concat([proxy.value, ...this.#chunks, ...this.#entries]);
    const emails = [...inbound.emails, ...this.#emails];
    const inline = {
      baseProxyValue: inbound.inline?.baseProxyValue ?? this.baseValue,
      problems: this.#problems,
      credentials: this.#credentials,
    };
    const widened: BuiltInbound =
      inbound.flavor === "v2ray"
        ? { ...inbound, emails, inline, config: withProxyValue(inbound.config, value) }
        : { ...inbound, emails, inline, config: withProxyValue(inbound.config, value) };
    return { inbound: widened, inlined };
  }
}

/** A shallow copy with the proxy settings' bytes replaced: the built inbound is never mutated. */
function withProxyValue<C extends BuiltInbound["config"]>(config: C, value: Uint8Array): C {
  const proxy = config.proxySettings;
  return proxy === undefined ? config : { ...config, proxySettings: { ...proxy, value } };
}

function requestBytesWithout(inbound: BuiltInbound): number {
  // The config's own encoding; the request adds one tag and one length prefix around it.
  return inbound.flavor === "v2ray"
    ? toBinary(V2InboundSchema, inbound.config).byteLength
    : toBinary(XrayInboundSchema, inbound.config).byteLength;
}

/** The parts in one array (protobuf's concatenation of encoded fields). */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.byteLength;
  const out = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}
