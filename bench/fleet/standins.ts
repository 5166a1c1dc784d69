// Stand-in V2Ray 4.x cores for `npm run bench:fleet`, many in this one child process (not in the
// panel's, whose CPU is measured alone): each a @grpc/grpc-js server on its own loopback port that
// serves the v2ray.core.* HandlerService and StatsService calls the panel makes (AddInbound,
// RemoveInbound, AlterInbound AddUser/RemoveUser, QueryStats, GetSysStats; anything else, like the
// xray.* probe, is UNIMPLEMENTED as on the real core). A core keeps the inbounds and users it is given,
// refuses what V2Ray refuses (a duplicate tag or email, an unknown tag or email) with V2Ray's texts,
// and is paced to the real core's rates measured by the benchmark in the same run: each core serves
// its calls one after another, AddUser taking 1/addRate s, RemoveUser 1/removeRate s, QueryStats
// the real core's measured latency and AddInbound its measured base plus per inline user cost (users
// carried in the AddInbound are held like added ones), so a core saturates where the real one did.
//
// Driven over the IPC channel (process.send): {cmd: "counts"} → users per core and calls per method;
// {cmd: "arm"} → each core's next QueryStats "user>>>" (with reset) answers traffic for every user it
// holds, and the bytes it answered are reported; {cmd: "restart", core} → that core loses everything
// and comes back at the same port with a new start time (a process restart); {cmd: "reset-calls"}.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type sendUnaryData,
  status,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import * as cmd from "../../src/gen/v2ray/app/proxyman_command_pb.ts";
import * as stats from "../../src/gen/v2ray/app/stats_command_pb.ts";
import type { TypedMessage } from "../../src/gen/v2ray/common/serial_pb.ts";
import { ConfigSchema as VlessInboundSchema } from "../../src/gen/v2ray/proxy/vless_inbound_pb.ts";
import { ConfigSchema as VmessInboundSchema } from "../../src/gen/v2ray/proxy/vmess_inbound_pb.ts";

export type Pacing = {
  addUserMs: number;
  removeUserMs: number;
  queryStatsMs: number;
  otherMs: number;
  /** The real core's cost per user carried inline in AddInbound, by proxy settings type. */
  inlineUserMs: Record<string, number>;
};
export type CoreCounts = {
  port: number;
  users: number;
  inbounds: number;
  calls: Record<string, number>;
};
export type Ask =
  | { cmd: "counts" }
  | { cmd: "arm" }
  | { cmd: "restart"; core: number }
  | { cmd: "reset-calls" };
export type ToStandins = Ask & { id: number };
export type Served = { core: number; at: number; bytes: number; users: number };
export type FromStandins =
  | { ready: number[] }
  | { id: number; counts: CoreCounts[] }
  | { id: number; ok: true }
  | { event: "served"; served: Served };

const HANDLER = "v2ray.core.app.proxyman.command.HandlerService";
const STATS = "v2ray.core.app.stats.command.StatsService";
const ADD_USER = "v2ray.core.app.proxyman.command.AddUserOperation";
const REMOVE_USER = "v2ray.core.app.proxyman.command.RemoveUserOperation";

class RefusedError extends Error {}

/** The emails of the users an AddInbound carries inline (the fleet's inbounds are VLESS and VMess). */
function inlineEmails(proxy: TypedMessage | undefined): string[] {
  if (proxy?.type === VlessInboundSchema.typeName)
    return fromBinary(VlessInboundSchema, proxy.value).clients.map((user) => user.email);
  if (proxy?.type === VmessInboundSchema.typeName)
    return fromBinary(VmessInboundSchema, proxy.value).user.map((user) => user.email);
  return [];
}

/** Per user and poll: a few MB up and down, different per user, so a lost or doubled row shows in the sum. */
function trafficOf(email: string): [number, number] {
  let h = 2166136261;
  for (let i = 0; i < email.length; i++) h = Math.imul(h ^ email.charCodeAt(i), 16777619) >>> 0;
  return [100_000 + (h % 900_000), 1_000_000 + ((h >>> 8) % 9_000_000)];
}

class StandinCore {
  inbounds = new Map<string, Set<string>>();
  calls: Record<string, number> = {};
  startedAt = Date.now();
  armed = false;
  #busyUntil = 0;
  server: Server | undefined;

  constructor(
    readonly index: number,
    readonly port: number,
    private readonly pacing: Pacing,
  ) {}

  /** Served one after another: the answer leaves when the core's earlier calls and this one are done. */
  paced<T>(costMs: number, work: () => T): Promise<T> {
    const now = performance.now();
    this.#busyUntil = Math.max(now, this.#busyUntil) + costMs;
    const wait = this.#busyUntil - now;
    return new Promise((resolve, reject) => {
      setTimeout(() => {
        try {
          resolve(work());
        } catch (error) {
          reject(error);
        }
      }, wait);
    });
  }

  count(method: string): void {
    this.calls[method] = (this.calls[method] ?? 0) + 1;
  }

  users(): number {
    let n = 0;
    for (const users of this.inbounds.values()) n += users.size;
    return n;
  }

  handlers(): Record<string, (bytes: Uint8Array) => Promise<Uint8Array>> {
    const p = this.pacing;
    return {
      [`/${HANDLER}/AddInbound`]: (bytes) => {
        const inbound = fromBinary(cmd.AddInboundRequestSchema, bytes).inbound;
        const tag = inbound?.tag ?? "";
        const emails = inlineEmails(inbound?.proxySettings);
        this.count("AddInbound");
        this.calls.InlineUsers = (this.calls.InlineUsers ?? 0) + emails.length;
        const perUser = p.inlineUserMs[inbound?.proxySettings?.type ?? ""] ?? 0;
        return this.paced(p.otherMs + emails.length * perUser, () => {
          if (this.inbounds.has(tag)) throw new RefusedError(`existing tag found: ${tag}`);
          this.inbounds.set(tag, new Set(emails));
          return toBinary(cmd.AddInboundResponseSchema, create(cmd.AddInboundResponseSchema));
        });
      },
      [`/${HANDLER}/RemoveInbound`]: (bytes) => {
        const { tag } = fromBinary(cmd.RemoveInboundRequestSchema, bytes);
        this.count("RemoveInbound");
        return this.paced(p.otherMs, () => {
          if (!this.inbounds.delete(tag)) throw new RefusedError(`handler not found: ${tag}`);
          return toBinary(cmd.RemoveInboundResponseSchema, create(cmd.RemoveInboundResponseSchema));
        });
      },
      [`/${HANDLER}/AlterInbound`]: (bytes) => {
        const request = fromBinary(cmd.AlterInboundRequestSchema, bytes);
        const op = request.operation;
        if (op?.type === ADD_USER) {
          const email = fromBinary(cmd.AddUserOperationSchema, op.value).user?.email ?? "";
          this.count("AddUser");
          return this.paced(p.addUserMs, () => {
            const users = this.inbounds.get(request.tag);
            if (users === undefined) throw new RefusedError(`handler not found: ${request.tag}`);
            if (users.has(email)) throw new RefusedError(`User ${email} already exists.`);
            users.add(email);
            return toBinary(cmd.AlterInboundResponseSchema, create(cmd.AlterInboundResponseSchema));
          });
        }
        if (op?.type === REMOVE_USER) {
          const { email } = fromBinary(cmd.RemoveUserOperationSchema, op.value);
          this.count("RemoveUser");
          return this.paced(p.removeUserMs, () => {
            const users = this.inbounds.get(request.tag);
            if (users === undefined) throw new RefusedError(`handler not found: ${request.tag}`);
            if (!users.delete(email)) throw new RefusedError(`User ${email} not found.`);
            return toBinary(cmd.AlterInboundResponseSchema, create(cmd.AlterInboundResponseSchema));
          });
        }
        this.count("AlterInbound other");
        return Promise.reject(new RefusedError(`unknown operation: ${op?.type ?? "none"}`));
      },
      [`/${STATS}/QueryStats`]: (bytes) => {
        const { pattern, reset } = fromBinary(stats.QueryStatsRequestSchema, bytes);
        this.count("QueryStats");
        return this.paced(p.queryStatsMs, () => {
          const stat: { name: string; value: bigint }[] = [];
          if (pattern === "user>>>" && this.armed && reset) {
            this.armed = false;
            let total = 0;
            const emails = new Set<string>();
            for (const users of this.inbounds.values()) for (const email of users) emails.add(email);
            for (const email of emails) {
              const [up, down] = trafficOf(email);
              total += up + down;
              stat.push({ name: `user>>>${email}>>>traffic>>>uplink`, value: BigInt(up) });
              stat.push({ name: `user>>>${email}>>>traffic>>>downlink`, value: BigInt(down) });
            }
            const served: Served = { core: this.index, at: Date.now(), bytes: total, users: emails.size };
            send({ event: "served", served });
          }
          return toBinary(stats.QueryStatsResponseSchema, create(stats.QueryStatsResponseSchema, { stat }));
        });
      },
      [`/${STATS}/GetSysStats`]: async () => {
        this.count("GetSysStats");
        const uptime = Math.floor((Date.now() - this.startedAt) / 1000);
        return toBinary(
          stats.SysStatsResponseSchema,
          create(stats.SysStatsResponseSchema, { Uptime: uptime, NumGoroutine: 20 }),
        );
      },
    };
  }

  async listen(): Promise<void> {
    const server = new Server();
    const handlers = this.handlers();
    const definition = Object.fromEntries(
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
    const implementation: UntypedServiceImplementation = Object.fromEntries(
      Object.entries(handlers).map(([path, handle]) => [
        path,
        (call: ServerUnaryCall<Uint8Array, Uint8Array>, callback: sendUnaryData<Uint8Array>) => {
          handle(call.request).then(
            (answer) => callback(null, answer),
            (error: unknown) => {
              const details = error instanceof Error ? error.message : String(error);
              callback({ code: error instanceof RefusedError ? status.UNKNOWN : status.INTERNAL, details });
            },
          );
        },
      ]),
    );
    server.addService(definition, implementation);
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${this.port}`, ServerCredentials.createInsecure(), (error) =>
        error === null ? resolve() : reject(error),
      ),
    );
    this.server = server;
  }

  /** A new process: everything the API added is gone, the uptime starts again, connections drop. */
  async restart(): Promise<void> {
    this.server?.forceShutdown();
    this.inbounds = new Map();
    this.armed = false;
    this.#busyUntil = 0;
    this.startedAt = Date.now();
    await this.listen();
  }
}

function send(message: FromStandins): void {
  process.send?.(message);
}

const ports = JSON.parse(process.env.STANDIN_PORTS ?? "[]") as number[];
const pacing = JSON.parse(process.env.STANDIN_PACING ?? "{}") as Pacing;
const cores = ports.map((port, index) => new StandinCore(index, port, pacing));
for (const core of cores) await core.listen();

process.on("message", (message: ToStandins) => {
  const reply = async (): Promise<FromStandins> => {
    switch (message.cmd) {
      case "counts":
        return {
          id: message.id,
          counts: cores.map((c) => ({
            port: c.port,
            users: c.users(),
            inbounds: c.inbounds.size,
            calls: { ...c.calls },
          })),
        };
      case "arm":
        for (const core of cores) core.armed = true;
        return { id: message.id, ok: true };
      case "restart":
        await cores[message.core]?.restart();
        return { id: message.id, ok: true };
      case "reset-calls":
        for (const core of cores) core.calls = {};
        return { id: message.id, ok: true };
    }
  };
  reply().then(send, (error: unknown) => {
    process.stderr.write(`stand-ins: ${String(error)}\n`);
    process.exit(1);
  });
});
process.on("disconnect", () => process.exit(0));
send({ ready: ports });
