// A stand-in for an Xray core (none is installed here): a @grpc/grpc-js server that pretends to be
// one Xray release. It decodes every request the way that release's Go code would (its wire layout,
// Go's protobuf rules: go-proto.ts), records it, and answers the way Xray does: same error texts,
// the same order of checks (receiver settings, then proxy type; operation type before the inbound),
// in-memory inbounds and users, only the calls that release has, and Xray's v2ray.core.* aliases.
// So bytes with a field number of another layout fail a test, and the layout probe is answered as
// the real core would answer it. restart() brings it back at the same address, maybe as another
// release (an in-place upgrade).

import { create, type DescMessage, type MessageShape, toBinary } from "@bufbuild/protobuf";
import {
  type Metadata,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type sendUnaryData,
  status,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import { summarizeXrayInbound, xrayProxyUsers } from "../../src/cores/inbound-builder/inspect-xray.ts";
import { decodeReceiver, type XrayReceiver } from "../../src/cores/inbound-builder/xray-variants.ts";
import { LAYOUT_FACTS, type WireLayout } from "../../src/cores/wire-layout.ts";
import * as cmd from "../../src/gen/xray/app/proxyman_command_pb.ts";
import * as r6 from "../../src/gen/xray/app/proxyman_r6_pb.ts";
import * as r7 from "../../src/gen/xray/app/proxyman_r7_pb.ts";
import * as r8 from "../../src/gen/xray/app/proxyman_r8_pb.ts";
import * as stats from "../../src/gen/xray/app/stats_command_pb.ts";
import type { User } from "../../src/gen/xray/common/protocol_pb.ts";
import type { InboundHandlerConfig } from "../../src/gen/xray/core_pb.ts";
import * as ss2022Legacy from "../../src/gen/xray/proxy/shadowsocks_2022_legacy_pb.ts";
import * as ss2022 from "../../src/gen/xray/proxy/shadowsocks_2022_pb.ts";
import * as ss from "../../src/gen/xray/proxy/shadowsocks_pb.ts";
import * as trojan from "../../src/gen/xray/proxy/trojan_pb.ts";
import * as vlessIn from "../../src/gen/xray/proxy/vless_inbound_pb.ts";
import * as vless from "../../src/gen/xray/proxy/vless_pb.ts";
import * as vmessIn from "../../src/gen/xray/proxy/vmess_inbound_pb.ts";
import * as vmess from "../../src/gen/xray/proxy/vmess_pb.ts";
import * as grpcTransport from "../../src/gen/xray/transport/grpc_pb.ts";
import * as httpupgrade from "../../src/gen/xray/transport/httpupgrade_pb.ts";
import * as reality from "../../src/gen/xray/transport/reality_pb.ts";
import * as tls from "../../src/gen/xray/transport/tls_pb.ts";
import * as websocket from "../../src/gen/xray/transport/websocket_pb.ts";
import { GoDecodeError, goFromBinary } from "./go-proto.ts";
import type { Cleanup } from "./v2ray.ts";

/** Xray releases whose .proto files were read (docs/CORES.md): layout and the optional calls. */
export const XRAY_RELEASES = {
  "1.8.13": { layout: "xray-1.8", getInboundUsers: false, listInbounds: false, onlineUsers: false },
  "24.9.30": { layout: "xray-24.9", getInboundUsers: false, listInbounds: false, onlineUsers: false },
  "25.1.1": { layout: "xray-25.1", getInboundUsers: true, listInbounds: false, onlineUsers: false },
  "25.9.5": { layout: "xray-25.1", getInboundUsers: true, listInbounds: true, onlineUsers: false },
  "25.10.15": { layout: "xray-25.10", getInboundUsers: true, listInbounds: true, onlineUsers: false },
  "26.5.10": { layout: "xray-25.10", getInboundUsers: true, listInbounds: true, onlineUsers: true },
} as const satisfies Record<
  string,
  { layout: WireLayout; getInboundUsers: boolean; listInbounds: boolean; onlineUsers: boolean }
>;
export type XrayRelease = keyof typeof XRAY_RELEASES;

export type RecordedCall = { path: string; authorization: string | null; request: unknown };

/** An inbound the stand-in holds: its config as sent, the receiver as this release read it, users. */
export type StoredInbound = {
  config: InboundHandlerConfig;
  receiver?: XrayReceiver;
  users: Map<string, User>;
};

export type RecordingXray = {
  address: string;
  readonly release: XrayRelease;
  calls: RecordedCall[];
  inbounds: Map<string, StoredInbound>;
  /** Counters QueryStats answers from; tests set them. */
  counters: Map<string, bigint>;
  /** Set when a request would have panicked the real core (the stand-in then stops like it). */
  readonly panic: string | null;
  /** Stops and starts again at the same address, empty, as `release` (default: the same one). */
  restart(release?: XrayRelease): Promise<void>;
  close(): void;
};

export type RecordingOptions = {
  /** Which release to pretend to be. Default the newest, 26.5.10. */
  release?: XrayRelease;
  /** Serve TLS; with clientCaPem, require a client certificate signed by it (mTLS). */
  tls?: { certPem: string; keyPem: string; clientCaPem?: string };
};

class CoreError extends Error {
  readonly code = status.UNKNOWN;
}

class Panic extends Error {}

type Handler = (request: Uint8Array) => { decoded: unknown; respond: () => Uint8Array };

const H = "xray.app.proxyman.command.HandlerService";
const S = "xray.app.stats.command.StatsService";

const PROXIES: Record<string, "vless" | "vmess" | "trojan" | "shadowsocks"> = {
  [vlessIn.ConfigSchema.typeName]: "vless",
  [vmessIn.ConfigSchema.typeName]: "vmess",
  [trojan.ServerConfigSchema.typeName]: "trojan",
  [ss.ServerConfigSchema.typeName]: "shadowsocks",
  [ss2022.MultiUserServerConfigSchema.typeName]: "shadowsocks",
};

/** The message types a release's registry knows (what TypedMessage.GetInstance can resolve). */
function knownTypes(layout: WireLayout): Set<string> {
  const schemas: DescMessage[] = [
    r6.ReceiverConfigSchema,
    cmd.AddUserOperationSchema,
    cmd.RemoveUserOperationSchema,
    vlessIn.ConfigSchema,
    vless.AccountSchema,
    vmessIn.ConfigSchema,
    vmess.AccountSchema,
    trojan.ServerConfigSchema,
    trojan.AccountSchema,
    ss.ServerConfigSchema,
    ss.AccountSchema,
    ss2022.MultiUserServerConfigSchema,
    LAYOUT_FACTS[layout].ss2022 === "legacy" ? ss2022Legacy.UserSchema : ss2022.AccountSchema,
    tls.ConfigSchema,
    reality.ConfigSchema,
    websocket.ConfigSchema,
    grpcTransport.ConfigSchema,
    httpupgrade.ConfigSchema,
  ];
  return new Set(["xray.common.protocol.User", ...schemas.map((schema) => schema.typeName)]);
}

/** In-memory Xray of one release: what it holds and how it answers each call. */
class FakeXray {
  readonly calls: RecordedCall[] = [];
  readonly inbounds = new Map<string, StoredInbound>();
  readonly counters = new Map<string, bigint>();
  panic: string | null = null;
  private readonly startedAt = Date.now();
  private readonly layout: WireLayout;
  private readonly types: Set<string>;
  readonly handlers: Record<string, Handler>;

  constructor(readonly release: XrayRelease) {
    const facts = XRAY_RELEASES[release];
    this.layout = facts.layout;
    this.types = knownTypes(this.layout);
    this.handlers = {
      [`${S}/GetSysStats`]: this.route(stats.SysStatsRequestSchema, stats.SysStatsResponseSchema, () => ({
        Uptime: Math.floor((Date.now() - this.startedAt) / 1000),
        NumGoroutine: 12,
        Alloc: 1n << 20n,
        // Go's cumulative allocation: it only grows within a process, so a restart shows as a drop.
        TotalAlloc: (1n << 20n) + BigInt(this.calls.length) * 65_536n,
      })),
      [`${S}/QueryStats`]: this.route(
        stats.QueryStatsRequestSchema,
        stats.QueryStatsResponseSchema,
        (request) => this.queryStats(request),
      ),
      [`${H}/AddInbound`]: this.route(
        cmd.AddInboundRequestSchema,
        cmd.AddInboundResponseSchema,
        (request) => {
          this.addInbound(request.inbound);
          return {};
        },
      ),
      [`${H}/RemoveInbound`]: this.route(
        cmd.RemoveInboundRequestSchema,
        cmd.RemoveInboundResponseSchema,
        (r) => {
          if (!this.inbounds.delete(r.tag))
            throw new CoreError("not enough information for making a decision");
          return {};
        },
      ),
      [`${H}/AlterInbound`]: this.route(
        cmd.AlterInboundRequestSchema,
        cmd.AlterInboundResponseSchema,
        (r) => {
          this.alterInbound(r);
          return {};
        },
      ),
      ...(facts.listInbounds
        ? {
            [`${H}/ListInbounds`]: this.route(
              cmd.ListInboundsRequestSchema,
              cmd.ListInboundsResponseSchema,
              (r) => ({
                inbounds: [...this.inbounds.values()].map((inbound) =>
                  r.isOnlyTags ? { tag: inbound.config.tag } : inbound.config,
                ),
              }),
            ),
          }
        : {}),
      ...(facts.getInboundUsers
        ? {
            [`${H}/GetInboundUsers`]: this.route(
              cmd.GetInboundUserRequestSchema,
              cmd.GetInboundUserResponseSchema,
              (request) => ({
                users: [...this.handlerOf(request.tag).users.values()].filter(
                  (user) => request.email === "" || user.email === request.email,
                ),
              }),
            ),
            [`${H}/GetInboundUsersCount`]: this.route(
              cmd.GetInboundUserRequestSchema,
              cmd.GetInboundUsersCountResponseSchema,
              (request) => ({ count: BigInt(this.handlerOf(request.tag).users.size) }),
            ),
          }
        : {}),
      ...(facts.onlineUsers
        ? {
            [`${S}/GetAllOnlineUsers`]: this.route(
              stats.GetAllOnlineUsersRequestSchema,
              stats.GetAllOnlineUsersResponseSchema,
              () => ({ users: [] }),
            ),
          }
        : {}),
    };
  }

  /** Decodes with the request message and answers. */
  private route<In extends DescMessage, Out extends DescMessage>(
    input: In,
    output: Out,
    answer: (request: MessageShape<In>) => Parameters<typeof create<Out>>[1],
  ): Handler {
    return (bytes) => {
      const decoded = goFromBinary(input, bytes);
      return { decoded, respond: () => toBinary(output, create(output, answer(decoded))) };
    };
  }

  /** Records the call (with its decoded request) before answering, even when the answer is an error. */
  handle(path: string, calledPath: string, bytes: Uint8Array, metadata: Metadata): Uint8Array {
    const authorization = metadata.get("authorization")[0];
    const call: RecordedCall = {
      path: calledPath,
      authorization: typeof authorization === "string" ? authorization : null,
      request: null,
    };
    this.calls.push(call);
    const handler = this.handlers[path];
    if (handler === undefined) throw new Error(`no handler for ${path}`);
    const { decoded, respond } = handler(bytes);
    call.request = decoded;
    return respond();
  }

  private queryStats(request: stats.QueryStatsRequest) {
    const matched = [...this.counters].filter(([name]) => name.includes(request.pattern));
    if (request.reset) for (const [name] of matched) this.counters.set(name, 0n);
    return { stat: matched.map(([name, value]) => ({ name, value })) };
  }

  /** inbound.NewHandler: receiver settings, then proxy settings, then the proxy; then the manager. */
  private addInbound(config: InboundHandlerConfig | undefined): void {
    if (config === undefined) throw new Panic("AddInbound without inbound");
    const receiverSettings = config.receiverSettings;
    const proxySettings = config.proxySettings;
    if (receiverSettings === undefined || proxySettings === undefined) {
      throw new Panic("AddInbound without receiver or proxy settings");
    }
    const receiver = this.instance(receiverSettings.type, () => this.readReceiver(receiverSettings.value));
    const users = this.instance(proxySettings.type, () => this.proxyUsers(proxySettings));
    if ((receiver.portList?.range ?? []).length === 0 && receiver.listen !== undefined) {
      throw new Panic("receiver with listen but no port (taken for a unix socket)");
    }
    if (this.inbounds.has(config.tag))
      throw new CoreError(`app/proxyman/inbound: existing tag found: ${config.tag}`);
    this.inbounds.set(config.tag, { config, receiver, users });
  }

  /** TypedMessage.GetInstance: an unknown type is "proto: not found", then the bytes are parsed. */
  private instance<T>(type: string, parse: () => T): T {
    if (!this.types.has(type)) throw new CoreError("proto: not found");
    try {
      return parse();
    } catch (error) {
      if (error instanceof GoDecodeError) throw new CoreError(error.message);
      throw error;
    }
  }

  private readReceiver(bytes: Uint8Array): XrayReceiver {
    const variant = LAYOUT_FACTS[this.layout].receiver;
    if (variant === "v2ray") throw new Error("not an Xray layout");
    const schema =
      variant === "r6"
        ? r6.ReceiverConfigSchema
        : variant === "r7"
          ? r7.ReceiverConfigSchema
          : r8.ReceiverConfigSchema;
    const filtered = toBinary(schema, goFromBinary(schema, bytes) as never);
    return decodeReceiver(variant, filtered);
  }

  /** The users the proxy starts with, keyed by lower-cased email as Xray does. */
  private proxyUsers(proxy: NonNullable<InboundHandlerConfig["proxySettings"]>): Map<string, User> {
    const legacy = LAYOUT_FACTS[this.layout].ss2022 === "legacy";
    if (proxy.type === ss2022.MultiUserServerConfigSchema.typeName) {
      const schema = legacy ? ss2022Legacy.MultiUserServerConfigSchema : ss2022.MultiUserServerConfigSchema;
      const config = goFromBinary(schema, proxy.value);
      if (config.key === "") throw new CoreError("proxy/shadowsocks_2022: missing key");
      const keys = legacy
        ? (config as ss2022Legacy.MultiUserServerConfig).users.map((user) => user.key)
        : (config as ss2022.MultiUserServerConfig).users.map((user) => this.ss2022Key(user));
      if (keys.some((key) => key === ""))
        throw new CoreError("proxy/shadowsocks_2022: create service > bad key");
    } else if (PROXIES[proxy.type] === undefined) {
      throw new CoreError(`${proxy.type} is not registered`);
    }
    const users = xrayProxyUsers(proxy, this.layout) ?? [];
    return new Map(users.map((user) => [user.email.toLowerCase(), user]));
  }

  private ss2022Key(user: User): string {
    const account = user.account;
    if (account?.type !== ss2022.AccountSchema.typeName) return "";
    return goFromBinary(ss2022.AccountSchema, account.value).key;
  }

  /** AlterInbound: the operation type first ("unknown operation"), then the inbound, then the user. */
  private alterInbound(request: cmd.AlterInboundRequest): void {
    const operation = request.operation;
    if (operation === undefined) throw new Panic("AlterInbound without operation");
    if (!this.types.has(operation.type))
      throw new CoreError("app/proxyman/command: unknown operation > proto: not found");
    const isAdd = operation.type === cmd.AddUserOperationSchema.typeName;
    if (!isAdd && operation.type !== cmd.RemoveUserOperationSchema.typeName) {
      throw new CoreError("app/proxyman/command: not an inbound operation");
    }
    const inbound = this.handlerOf(request.tag);
    const protocol = summarizeXrayInbound(inbound.config, this.layout).protocol ?? "unknown";
    if (isAdd)
      this.addUser(inbound, protocol, goFromBinary(cmd.AddUserOperationSchema, operation.value).user);
    else {
      const email = goFromBinary(cmd.RemoveUserOperationSchema, operation.value).email;
      if (!inbound.users.delete(email.toLowerCase()))
        throw new CoreError(`proxy/${protocol}: User ${email} not found.`);
    }
  }

  private addUser(inbound: StoredInbound, protocol: string, user: User | undefined): void {
    if (user === undefined)
      throw new CoreError("app/proxyman/command: failed to parse user > common/protocol: user is nil");
    const account = user.account;
    if (account === undefined)
      throw new CoreError("app/proxyman/command: failed to parse user > account is missing");
    if (!this.types.has(account.type))
      throw new CoreError("app/proxyman/command: failed to parse user > proto: not found");
    const expected = summarizeXrayInbound(inbound.config, this.layout).expectedAccountType;
    // The proxies type-assert the account: another protocol's account panics the core.
    if (account.type !== expected) throw new Panic(`AddUser with ${account.type} on a ${protocol} inbound`);
    const key = user.email.toLowerCase();
    if (inbound.users.has(key)) throw new CoreError(`proxy/${protocol}: User ${user.email} already exists.`);
    inbound.users.set(key, user);
  }

  handlerOf(tag: string): StoredInbound {
    const inbound = this.inbounds.get(tag);
    if (inbound === undefined) {
      throw new CoreError(
        `app/proxyman/command: failed to get handler: ${tag} > app/proxyman/inbound: handler not found: ${tag}`,
      );
    }
    return inbound;
  }
}

export async function startRecordingXray(
  cleanup: Cleanup,
  options: RecordingOptions = {},
): Promise<RecordingXray> {
  let fake = new FakeXray(options.release ?? "26.5.10");
  let server = new Server();
  const serve = async (port: number) => {
    server = new Server();
    for (const namespace of ["xray", "v2ray.core"]) {
      server.addService(
        serviceDefinition(fake.handlers, namespace),
        implementation(fake, () => stop(), namespace),
      );
    }
    return bind(server, options, port);
  };
  const stop = () => server.forceShutdown();
  const port = await serve(0);
  cleanup(stop);
  const host = options.tls === undefined ? "127.0.0.1" : "localhost";
  return {
    address: `${host}:${port}`,
    get release() {
      return fake.release;
    },
    get calls() {
      return fake.calls;
    },
    get inbounds() {
      return fake.inbounds;
    },
    get counters() {
      return fake.counters;
    },
    get panic() {
      return fake.panic;
    },
    async restart(release?: XrayRelease) {
      stop();
      fake = new FakeXray(release ?? fake.release);
      await serve(port);
    },
    close: stop,
  };
}

/**
 * Xray registers its services under both names: `xray.*` and, "for compatibility", `v2ray.core.*`
 * (with Xray's own messages). V2Ray 4.x has only the second.
 */
function serviceDefinition(handlers: Record<string, Handler>, namespace: string) {
  return Object.fromEntries(
    Object.keys(handlers).map((path) => {
      const full = `/${path.replace(/^xray\./, `${namespace}.`)}`;
      return [
        full,
        {
          path: full,
          requestStream: false,
          responseStream: false,
          requestSerialize: (value: Uint8Array) => Buffer.from(value),
          requestDeserialize: (bytes: Buffer) => new Uint8Array(bytes),
          responseSerialize: (value: Uint8Array) => Buffer.from(value),
          responseDeserialize: (bytes: Buffer) => new Uint8Array(bytes),
        },
      ];
    }),
  );
}

function implementation(fake: FakeXray, stop: () => void, namespace: string): UntypedServiceImplementation {
  return Object.fromEntries(
    Object.keys(fake.handlers).map((path) => [
      `/${path.replace(/^xray\./, `${namespace}.`)}`,
      (call: ServerUnaryCall<Uint8Array, Uint8Array>, callback: sendUnaryData<Uint8Array>) => {
        try {
          const calledPath = `/${path.replace(/^xray\./, `${namespace}.`)}`;
          callback(null, fake.handle(path, calledPath, call.request, call.metadata));
        } catch (error) {
          if (error instanceof Panic) {
            // The real core dies with every inbound and user added through the API.
            fake.panic = error.message;
            stop();
            return;
          }
          const details = error instanceof Error ? error.message : String(error);
          callback({ code: error instanceof CoreError ? error.code : status.INTERNAL, details });
        }
      },
    ]),
  );
}

function bind(server: Server, options: RecordingOptions, port: number): Promise<number> {
  const tls = options.tls;
  const credentials =
    tls === undefined
      ? ServerCredentials.createInsecure()
      : ServerCredentials.createSsl(
          tls.clientCaPem === undefined ? null : Buffer.from(tls.clientCaPem),
          [{ private_key: Buffer.from(tls.keyPem), cert_chain: Buffer.from(tls.certPem) }],
          tls.clientCaPem !== undefined,
        );
  return new Promise((resolve, reject) => {
    server.bindAsync(`127.0.0.1:${port}`, credentials, (error, bound) =>
      error === null ? resolve(bound) : reject(error),
    );
  });
}
