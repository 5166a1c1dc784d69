// `portcullis node run`: the agent on a proxy host. It owns the core (supervisor.ts), serves the
// panel over mutual TLS (agent-server.ts), passes the panel's core calls to the local API, keeps the
// base document the panel sent, and renews its own certificate when the panel hands it a new one.

import { createPrivateKey, X509Certificate } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { harvestCounters, isRelayablePath, type RelayAnswer } from "../cores/core-relay.ts";
import { addInboundExtraMs } from "../cores/flavor-api.ts";
import { type BaseDocument, DEFAULT_BASE_DOCUMENT, parseBaseDocument } from "../cores/node-base-config.ts";
import { baseHash } from "../cores/node-material.ts";
import { changesOf } from "../cores/relay-record.ts";
import { redactLogLines } from "../lib/core-log.ts";
import { fingerprintOf, makeKeyAndRequest } from "../lib/node-pki.ts";
import { settlesWithin } from "../lib/settles-within.ts";
import { packageVersion } from "../lib/version.ts";
import { AgentRequestError, type AgentServer, startAgentServer } from "./agent-server.ts";
import { writeFileAtomic } from "./atomic-file.ts";
import { ConnectionTracker, destroySockets } from "./connections.ts";
import { CutSchedule } from "./cut-schedule.ts";
import { DesiredState } from "./desired-state.ts";
import { HeapSettler } from "./heap-settle.ts";
import { type NodeIdentity, readIdentity, writeCertificate } from "./identity.ts";
import { CoreSupervisor } from "./supervisor.ts";
import { TrafficJournal } from "./traffic-journal.ts";

export type AgentOptions = {
  dir: string;
  host: string;
  port: number;
  coreBinary: string;
  coreArgs?: readonly string[];
  /** The core API's port on 127.0.0.1; 0 picks one from the directory's last run or a free one. */
  coreApiPort: number;
  backoff?: { initialMs: number; maxMs: number };
  /** How often traffic counters are read into the journal (traffic-journal.ts). */
  trafficIntervalMs?: number;
  /** Deadline of a counter read with reset (core-relay.ts; default 120 s). */
  trafficReadTimeoutMs?: number;
  log?: (message: string, fields?: Record<string, unknown>) => void;
};

const BASE_FILE = "base.json";
/**
 * How long the panel's traffic request waits for the read with reset it starts; a later answer is
 * journaled when it comes and goes out with the next request. Below the panel's own deadline (5 s).
 */
const HARVEST_WAIT_MS = 3000;
/** Removed users' connections are cut when the panel's calls pause this long, or after the maximum. */
const CUT_SETTLE_MS = 250;
const CUT_MAX_WAIT_MS = 1500;

export class NodeAgent {
  private supervisor!: CoreSupervisor;
  private server!: AgentServer;
  private identity!: NodeIdentity;
  private base: BaseDocument = DEFAULT_BASE_DOCUMENT;
  private pendingKey: string | null = null;
  private readonly startedAt = Date.now();
  private desired!: DesiredState;
  private journal!: TrafficJournal;
  /** Open while the desired state is being re-applied: the panel's calls wait for it. */
  private gate: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  /** The read with reset in flight: never a second one while its answer is still on its way. */
  private harvesting: Promise<void> | null = null;
  private readonly connections = new ConnectionTracker();
  private cutTimer: NodeJS.Timeout | null = null;
  private cutDeadline: number | null = null;
  /** Users dropped with a replaced inbound wait for the panel's re-adds before being cut. */
  private readonly cuts = new CutSchedule();
  /** Hands a burst's garbage back once the work pauses (heap-settle.ts; with --expose-gc). */
  private readonly heap = new HeapSettler();
  private lastReplay: {
    at: string;
    inbounds: number;
    users: number;
    failed: number;
    duration_ms: number;
  } | null = null;

  constructor(private readonly options: AgentOptions) {}

  get port(): number {
    return this.server.port;
  }

  get core(): CoreSupervisor {
    return this.supervisor;
  }

  async start(): Promise<void> {
    const { dir } = this.options;
    this.identity = await readIdentity(dir);
    this.base = await this.readBase();
    this.supervisor = new CoreSupervisor({
      binary: this.options.coreBinary,
      ...(this.options.coreArgs === undefined ? {} : { args: this.options.coreArgs }),
      dir,
      apiPort: this.options.coreApiPort,
      ...(this.options.trafficReadTimeoutMs === undefined
        ? {}
        : { trafficReadTimeoutMs: this.options.trafficReadTimeoutMs }),
      ...(this.options.backoff === undefined ? {} : { backoff: this.options.backoff }),
      ...(this.options.log === undefined ? {} : { log: this.options.log }),
    });
    this.desired = await DesiredState.load(dir);
    this.journal = await TrafficJournal.open(dir);
    this.supervisor.on("line", (line) => this.connections.observe(line));
    // Every (re)start of the core, whoever caused it: the last desired state goes back on by itself.
    this.supervisor.on("ready", () => {
      this.gate = this.replay();
    });
    // The core first: it serves users whether or not the panel ever calls.
    await this.supervisor.start(this.base);
    const interval = this.options.trafficIntervalMs ?? 10_000;
    this.timer = setInterval(() => void this.harvest().catch(() => {}), interval);
    this.server = await startAgentServer({
      host: this.options.host,
      port: this.options.port,
      tls: this.identity,
      routes: {
        core: (path, body) => this.relay(path, body),
        json: {
          status: async () => this.status(),
          base: async (body, method) => this.setBase(body, method),
          renewal: async (body, method) => this.renewal(body, method),
          traffic: async (_body, method) => this.traffic(method),
          "traffic-ack": async (body, method) => this.acknowledge(body, method),
          online: async () => ({ users: this.connections.online() }),
          // The core's last lines (the supervisor's ring), credentials masked (lib/core-log.ts).
          logs: async (_body, method) => {
            if (method !== "GET") throw new AgentRequestError(405, "GET the core's recent lines");
            return { lines: redactLogLines(this.supervisor.recentLines()) };
          },
        },
      },
      ...(this.options.log === undefined ? {} : { log: this.options.log }),
    });
  }

  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    if (this.cutTimer !== null) clearTimeout(this.cutTimer);
    this.heap.stop();
    await this.server?.close();
    // What the core counted since the last read goes into the journal before the core stops.
    await this.harvesting?.catch(() => {});
    await this.harvest().catch(() => {});
    await this.supervisor?.stop();
  }

  /** A panel's core call: after any re-apply in progress; a change the core accepted is recorded. */
  private async relay(path: string, body: Buffer): Promise<RelayAnswer> {
    if (!isRelayablePath(path)) return { ok: false, code: 12, details: "not a core API method" };
    await this.gate;
    this.heap.touch();
    // Read before the call: an AddInbound's users inline give the core more time (as the panel's
    // own deadline for it allows), and each is recorded as the AddUser it replaces (relay-record.ts).
    const changes = changesOf(path, body);
    const inlined = changes.length > 1 ? changes.length - 1 : 0;
    const answer = await this.supervisor.relay.call(path, body, addInboundExtraMs(inlined));
    if (!answer.ok) return answer;
    for (const { change } of changes) {
      const before = change.kind === "remove-inbound" ? this.desired.emailsOf(change.tag) : [];
      this.cuts.noteChange(change, before, Date.now());
    }
    await Promise.all(changes.map(({ change, path, request }) => this.desired.record(change, path, request)));
    // The core now refuses a removed user's new connections; the open ones are cut once the
    // panel's changes settle (a V2Ray re-apply removes an inbound and adds it back with its users).
    if (changes.some(({ change }) => change.kind !== "add-user")) this.scheduleCut();
    return answer;
  }

  private scheduleCut(): void {
    const now = Date.now();
    this.cutDeadline ??= now + CUT_MAX_WAIT_MS;
    if (this.cutTimer !== null) clearTimeout(this.cutTimer);
    this.cutTimer = setTimeout(
      () => void this.cutRemoved(),
      Math.max(0, Math.min(CUT_SETTLE_MS, this.cutDeadline - now)),
    );
  }

  /** Cuts the connections of every user the log saw who is in no inbound of the desired state now. */
  private async cutRemoved(): Promise<void> {
    this.cutTimer = null;
    this.cutDeadline = null;
    const present = this.desired.emails();
    const absent = new Set(this.connections.emails().filter((email) => !present.has(email)));
    const { cut, retryInMs } = this.cuts.due(absent, Date.now());
    this.cuts.forgetExcept(absent);
    if (retryInMs !== undefined) {
      this.cutTimer = setTimeout(() => void this.cutRemoved(), Math.max(0, retryInMs));
    }
    if (cut.length > 0 || retryInMs !== undefined) {
      this.options.log?.("cutting removed users' connections", {
        users: cut.length,
        held_back: absent.size - cut.length,
      });
    }
    for (const email of cut) {
      const sources = this.connections.take(email);
      const result = await destroySockets(sources);
      if (result.error !== null) {
        this.options.log?.("could not cut a removed user's connections (needs CAP_NET_ADMIN)", {
          error: result.error,
        });
      }
    }
  }

  private async replay(): Promise<void> {
    // Collections as during the panel's calls (heap-settle.ts: one per 8 MiB of growth, one at the
    // pause after it). Without them the re-apply of 100,000 users took the agent from 120 to 275 MB
    // (bench:node, 2026-12-03): V8 let its old generation grow over the whole burst.
    const result = await this.desired.replay((path, request) => {
      this.heap.touch();
      return this.supervisor.relay.call(path, request);
    });
    this.heap.touch();
    this.lastReplay = {
      at: new Date().toISOString(),
      inbounds: result.inbounds,
      users: result.users,
      failed: result.failed,
      duration_ms: Math.round(result.durationMs),
    };
    if (result.inbounds > 0) this.options.log?.("desired state re-applied", this.lastReplay);
  }

  /** Reads the core's counters (with reset) into the journal; nothing while the core is down. */
  harvest(): Promise<void> {
    if (this.harvesting !== null) return this.harvesting;
    if (!this.supervisor.report().running) return Promise.resolve();
    this.heap.touch();
    const harvesting = this.journal
      .collect(() => harvestCounters(this.supervisor.relay, this.supervisor.report().flavor))
      .finally(() => {
        this.harvesting = null;
      });
    this.harvesting = harvesting;
    return harvesting;
  }

  private async traffic(method: string): Promise<unknown> {
    if (method !== "POST") throw new AgentRequestError(405, "POST to take the traffic batches");
    await settlesWithin(this.harvest(), HARVEST_WAIT_MS);
    return { epoch: this.journal.epoch, batches: await this.journal.pending() };
  }

  private async acknowledge(body: unknown, method: string): Promise<unknown> {
    const { epoch, seq } = (body ?? {}) as { epoch?: unknown; seq?: unknown };
    if (
      method !== "POST" ||
      typeof epoch !== "string" ||
      typeof seq !== "number" ||
      !Number.isSafeInteger(seq)
    ) {
      throw new AgentRequestError(400, "POST {epoch, seq}");
    }
    return { removed: await this.journal.acknowledge(epoch, seq) };
  }

  status(): Record<string, unknown> {
    const cert = new X509Certificate(this.identity.certPem);
    return {
      agent_version: packageVersion,
      agent_uptime_seconds: Math.floor((Date.now() - this.startedAt) / 1000),
      server_id: this.identity.serverId,
      core: this.supervisor.report(),
      base_sha256: baseHash(this.base),
      desired: this.desired.size,
      last_replay: this.lastReplay,
      certificate: {
        fingerprint: fingerprintOf(this.identity.certPem),
        not_after: new Date(cert.validTo).toISOString(),
      },
    };
  }

  private async setBase(body: unknown, method: string): Promise<unknown> {
    if (method !== "PUT") throw new AgentRequestError(405, "PUT the base document");
    const parsed = parseBaseDocument(body);
    if (!parsed.ok) {
      throw new AgentRequestError(
        400,
        `base document refused: ${parsed.problems.map((p) => `${p.path} ${p.message}`).join("; ")}`,
      );
    }
    if (baseHash(parsed.value) === baseHash(this.base))
      return { changed: false, base_sha256: baseHash(this.base) };
    await writeFileAtomic(join(this.options.dir, BASE_FILE), JSON.stringify(parsed.value), 0o600);
    this.base = parsed.value;
    await this.harvest().catch(() => {});
    await this.supervisor.applyBase(parsed.value);
    return { changed: true, base_sha256: baseHash(this.base) };
  }

  /**
   * POST: a new key is made here and its request returned; the key never leaves the host. PUT with
   * the signed certificate: checked (chains to the pinned CA, fits the new key), stored, and used for
   * every new handshake from then on.
   */
  private async renewal(body: unknown, method: string): Promise<unknown> {
    if (method === "POST") {
      const made = await makeKeyAndRequest(`portcullis-node ${this.identity.serverId}`);
      this.pendingKey = made.keyPem;
      return { csr: made.csrPem };
    }
    if (method !== "PUT") throw new AgentRequestError(405, "POST for a request, PUT the certificate");
    const certPem = (body as { cert?: unknown } | null)?.cert;
    if (typeof certPem !== "string" || this.pendingKey === null) {
      throw new AgentRequestError(400, "no renewal is pending, or no certificate was sent");
    }
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(certPem);
    } catch {
      throw new AgentRequestError(400, "not a PEM certificate");
    }
    if (
      !cert.verify(new X509Certificate(this.identity.caPem).publicKey) ||
      !cert.checkPrivateKey(createPrivateKey(this.pendingKey))
    ) {
      throw new AgentRequestError(400, "the certificate is not the panel CA's, or not for the pending key");
    }
    await writeCertificate(this.options.dir, certPem, this.pendingKey);
    this.identity = { ...this.identity, certPem, keyPem: this.pendingKey };
    this.pendingKey = null;
    this.server.setIdentity(this.identity);
    return { fingerprint: fingerprintOf(certPem), not_after: new Date(cert.validTo).toISOString() };
  }

  private async readBase(): Promise<BaseDocument> {
    const path = join(this.options.dir, BASE_FILE);
    if (!existsSync(path)) return DEFAULT_BASE_DOCUMENT;
    const parsed = parseBaseDocument(await readFile(path, "utf8"));
    return parsed.ok ? parsed.value : DEFAULT_BASE_DOCUMENT;
  }
}
