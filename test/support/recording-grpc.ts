// A stand-in for an Xray core (none is installed here): a @grpc/grpc-js server with generic
// handlers on the `xray.*` method paths that decodes every request with the Xray-named messages,
// records it, and answers the way Xray does (same error texts, in-memory inbounds and users).
// Paths of the `v2ray.core.*` namespace are not served, so they answer UNIMPLEMENTED like Xray.

import {
  create,
  type DescMessage,
  fromBinary,
  type MessageInitShape,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
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
import * as cmd from "../../src/gen/xray/app/proxyman_command_pb.ts";
import * as stats from "../../src/gen/xray/app/stats_command_pb.ts";
import type { User } from "../../src/gen/xray/common/protocol_pb.ts";
import type { InboundHandlerConfig } from "../../src/gen/xray/core_pb.ts";
import type { Cleanup } from "./v2ray.ts";

export type RecordedCall = { path: string; authorization: string | null; request: unknown };

type StoredInbound = { config: InboundHandlerConfig; users: Map<string, User> };

export type RecordingXray = {
  address: string;
  calls: RecordedCall[];
  inbounds: Map<string, StoredInbound>;
  /** Counters QueryStats answers from; tests set them. */
  counters: Map<string, bigint>;
  close(): void;
};

export type RecordingOptions = {
  /** Serve TLS; with clientCaPem, require a client certificate signed by it (mTLS). */
  tls?: { certPem: string; keyPem: string; clientCaPem?: string };
};

class CoreError extends Error {
  readonly code = status.UNKNOWN;
  readonly details: string;
  constructor(details: string) {
    super(details);
    this.details = details;
  }
}

type Handler = (request: Uint8Array) => { decoded: unknown; respond: () => Uint8Array };

const H = "/xray.app.proxyman.command.HandlerService";
const S = "/xray.app.stats.command.StatsService";

/** In-memory Xray: what it holds and how it answers each call. */
class FakeXray {
  readonly calls: RecordedCall[] = [];
  readonly inbounds = new Map<string, StoredInbound>();
  readonly counters = new Map<string, bigint>();
  private readonly startedAt = Date.now();

  readonly handlers: Record<string, Handler> = {
    [`${S}/GetSysStats`]: this.route(stats.SysStatsRequestSchema, stats.SysStatsResponseSchema, () => ({
      Uptime: Math.floor((Date.now() - this.startedAt) / 1000),
      NumGoroutine: 12,
      Alloc: 1n << 20n,
    })),
    [`${S}/QueryStats`]: this.route(
      stats.QueryStatsRequestSchema,
      stats.QueryStatsResponseSchema,
      (request) => {
        const matched = [...this.counters].filter(([name]) => name.includes(request.pattern));
        if (request.reset) for (const [name] of matched) this.counters.set(name, 0n);
        return { stat: matched.map(([name, value]) => ({ name, value })) };
      },
    ),
    [`${H}/AddInbound`]: this.route(cmd.AddInboundRequestSchema, cmd.AddInboundResponseSchema, (request) => {
      const config = request.inbound;
      if (config === undefined) throw new CoreError("app/proxyman/command: inbound is nil");
      if (this.inbounds.has(config.tag)) {
        throw new CoreError(`app/proxyman/inbound: existing tag found: ${config.tag}`);
      }
      this.inbounds.set(config.tag, { config, users: usersOf(config) });
      return {};
    }),
    [`${H}/RemoveInbound`]: this.route(
      cmd.RemoveInboundRequestSchema,
      cmd.RemoveInboundResponseSchema,
      (request) => {
        if (!this.inbounds.delete(request.tag)) {
          throw new CoreError("not enough information for making a decision");
        }
        return {};
      },
    ),
    [`${H}/AlterInbound`]: this.route(
      cmd.AlterInboundRequestSchema,
      cmd.AlterInboundResponseSchema,
      (request) => {
        alterInbound(this.handlerOf(request.tag), request);
        return {};
      },
    ),
    [`${H}/ListInbounds`]: this.route(cmd.ListInboundsRequestSchema, cmd.ListInboundsResponseSchema, () => ({
      inbounds: [...this.inbounds.values()].map((inbound) => inbound.config),
    })),
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
  };

  /** Decodes with the Xray-named message and answers. */
  private route<In extends DescMessage, Out extends DescMessage>(
    input: In,
    output: Out,
    answer: (request: MessageShape<In>) => MessageInitShape<Out>,
  ): Handler {
    return (bytes) => {
      const decoded = fromBinary(input, bytes);
      return { decoded, respond: () => toBinary(output, create(output, answer(decoded))) };
    };
  }

  /** Records the call (with its decoded request) before answering, even when the answer is an error. */
  handle(path: string, bytes: Uint8Array, metadata: Metadata): Uint8Array {
    const authorization = metadata.get("authorization")[0];
    const call: RecordedCall = {
      path,
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

  private handlerOf(tag: string): StoredInbound {
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
  const fake = new FakeXray();
  const server = new Server();
  server.addService(serviceDefinition(fake.handlers), implementation(fake));
  const port = await bind(server, options);
  const close = () => server.forceShutdown();
  cleanup(close);
  const host = options.tls === undefined ? "127.0.0.1" : "localhost";
  return {
    address: `${host}:${port}`,
    calls: fake.calls,
    inbounds: fake.inbounds,
    counters: fake.counters,
    close,
  };
}

/** The users an inbound config starts with, keyed by lower-cased email as Xray does. */
function usersOf(config: InboundHandlerConfig): Map<string, User> {
  const users = config.proxySettings === undefined ? null : xrayProxyUsers(config.proxySettings);
  if (users === null) {
    throw new CoreError(`unknown proxy settings type ${config.proxySettings?.type ?? "(none)"}`);
  }
  return new Map(users.map((user) => [user.email.toLowerCase(), user]));
}

function alterInbound(inbound: StoredInbound, request: cmd.AlterInboundRequest): void {
  const operation = request.operation;
  const protocol = summarizeXrayInbound(inbound.config).protocol ?? "unknown";
  if (operation?.type === cmd.AddUserOperationSchema.typeName) {
    const user = fromBinary(cmd.AddUserOperationSchema, operation.value).user;
    if (user === undefined) {
      throw new CoreError("app/proxyman/command: failed to parse user > common/protocol: user is nil");
    }
    const key = user.email.toLowerCase();
    if (inbound.users.has(key)) throw new CoreError(`proxy/${protocol}: User ${user.email} already exists.`);
    inbound.users.set(key, user);
  } else if (operation?.type === cmd.RemoveUserOperationSchema.typeName) {
    const email = fromBinary(cmd.RemoveUserOperationSchema, operation.value).email;
    if (!inbound.users.delete(email.toLowerCase())) {
      throw new CoreError(`proxy/${protocol}: User ${email} not found.`);
    }
  } else {
    throw new CoreError(
      `app/proxyman/command: unknown operation > Serial: Unknown type: ${operation?.type ?? ""}`,
    );
  }
}

function serviceDefinition(handlers: Record<string, Handler>) {
  return Object.fromEntries(
    Object.keys(handlers).map((path) => [
      path,
      {
        path,
        requestStream: false,
        responseStream: false,
        requestSerialize: (value: Uint8Array) => Buffer.from(value),
        requestDeserialize: (bytes: Buffer) => new Uint8Array(bytes),
        responseSerialize: (value: Uint8Array) => Buffer.from(value),
        responseDeserialize: (bytes: Buffer) => new Uint8Array(bytes),
      },
    ]),
  );
}

function implementation(fake: FakeXray): UntypedServiceImplementation {
  return Object.fromEntries(
    Object.keys(fake.handlers).map((path) => [
      path,
      (call: ServerUnaryCall<Uint8Array, Uint8Array>, callback: sendUnaryData<Uint8Array>) => {
        try {
          callback(null, fake.handle(path, call.request, call.metadata));
        } catch (error) {
          const details = error instanceof Error ? error.message : String(error);
          callback({ code: error instanceof CoreError ? error.code : status.INTERNAL, details });
        }
      },
    ]),
  );
}

function bind(server: Server, options: RecordingOptions): Promise<number> {
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
    server.bindAsync("127.0.0.1:0", credentials, (error, port) =>
      error === null ? resolve(port) : reject(error),
    );
  });
}
