// Importing another panel (issue 51): a reader turns the peer's database into a PeerSnapshot, this
// service writes it. Order: the peer's inbounds become templates and inbounds on the server the
// operator names (an inbound already there with the same tag is taken as it is), their hosts, then the
// users in batches (one transaction each: the users, their grants with the peer's credentials
// unchanged, their old URL keys), then the admins. Every row has an id derived from what the peer
// had, and every insert skips what is there: a second run writes nothing, a run killed between
// batches is completed by the next one. The grants are stored pending; the reconciler adds them to
// the core. docs/MIGRATION.md is the operator's guide.
import { createHash, randomBytes } from "node:crypto";
import { Value } from "typebox/value";
import { AppError } from "../../lib/errors.ts";
import type { SecretBox } from "../../lib/secret-box.ts";
import { isSafeLine, isSafeText } from "../../lib/text.ts";
import { isUuid } from "../../lib/uuid.ts";
import { FINGERPRINTS } from "../../links/types.ts";
import { HostCreate } from "../inbounds/hosts.schemas.ts";
import type { HostsService } from "../inbounds/hosts.service.ts";
import type { InboundRow, InboundsRepository } from "../inbounds/inbounds.repository.ts";
import type { InboundsService } from "../inbounds/inbounds.service.ts";
import type { ServersService } from "../servers/servers.service.ts";
import type { CoreSync } from "../sync/core-sync.ts";
import { proxyUserIdFor } from "../sync/credentials.ts";
import type { TemplatesService } from "../templates/templates.service.ts";
import type { ImportGrantRow, ImportLinkRow, ImportRepository, ImportUserRow } from "./import.repository.ts";
import { addSkip, type PeerHost, type PeerInbound, type PeerSnapshot, type PeerUser } from "./peer.ts";

export type ImportOptions = {
  dryRun: boolean;
  /** The Portcullis server the peer's inbounds go to; without one, no inbounds, hosts or grants. */
  serverId: string | null;
  batchSize?: number;
  /** Called after each committed batch with the users handled so far (progress; tests stop here). */
  onBatch?: (done: number, total: number) => void | Promise<void>;
};

type Tally = { found: number; created: number; already: number; left_out: number };
const tally = (): Tally => ({ found: 0, created: 0, already: 0, left_out: 0 });

export type ImportReport = {
  source: string;
  dry_run: boolean;
  users: Tally;
  grants: Tally;
  inbounds: Tally & { mapped: Record<string, string> };
  templates: { created: number; already: number };
  hosts: Tally;
  admins: Tally;
  subscription_urls: { links: Tally; secret: "stored" | "already" | "none" };
  /** What was left out or changed, and why: reason → count. */
  left_out: Record<string, number>;
  duration_ms: number;
};

export const DEFAULT_BATCH = 1000;

/** A UUID made from text: the same peer row gives the same Portcullis id on every run. */
export function derivedId(text: string): string {
  const h = createHash("sha256").update(`portcullis-import:${text}`).digest("hex");
  const variant = ((Number.parseInt(h[16] ?? "0", 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** A peer's tag as a Portcullis tag: letters, digits and _ . : @ - (spaces and the rest become -). */
export function portcullisTag(tag: string): string {
  const cleaned = tag
    .replace(/[^A-Za-z0-9_.:@-]+/g, "-")
    .replace(/^[^A-Za-z0-9]+/, "")
    .slice(0, 100);
  return cleaned === "" ? "imported" : cleaned;
}

export class ImportService {
  constructor(
    private readonly repository: ImportRepository,
    private readonly templates: TemplatesService,
    private readonly inbounds: InboundsService,
    private readonly inboundRows: InboundsRepository,
    private readonly hosts: HostsService,
    private readonly servers: ServersService,
    private readonly sync: CoreSync,
    private readonly secretBox: SecretBox,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async run(snapshot: PeerSnapshot, options: ImportOptions): Promise<ImportReport> {
    const started = performance.now();
    const report: ImportReport = {
      source: snapshot.source,
      dry_run: options.dryRun,
      users: tally(),
      grants: tally(),
      inbounds: { ...tally(), mapped: {} },
      templates: { created: 0, already: 0 },
      hosts: tally(),
      admins: tally(),
      subscription_urls: { links: tally(), secret: "none" },
      left_out: { ...snapshot.skipped },
      duration_ms: 0,
    };
    const skip = (reason: string, n = 1) => addSkip(report.left_out, reason, n);
    if (options.serverId !== null) await this.servers.get(options.serverId);

    const inboundByTag = await this.#inbounds(snapshot, options, report, skip);
    await this.#hosts(snapshot.hosts, inboundByTag, options, report, skip);
    await this.repository.withBulkCache(() => this.#users(snapshot, inboundByTag, options, report, skip));
    await this.#secret(snapshot, options, report);
    await this.#admins(snapshot, options, report, skip);
    report.duration_ms = Math.round(performance.now() - started);
    return report;
  }

  /** peer tag → the Portcullis inbound it maps to (found or created); absent: left out. */
  async #inbounds(
    snapshot: PeerSnapshot,
    options: ImportOptions,
    report: ImportReport,
    skip: (reason: string, n?: number) => void,
  ): Promise<Map<string, InboundRow | null>> {
    const mapped = new Map<string, InboundRow | null>();
    report.inbounds.found = snapshot.inbounds.length;
    if (options.serverId === null) {
      if (snapshot.inbounds.length > 0)
        skip("inbounds: no --server to put them on", snapshot.inbounds.length);
      report.inbounds.left_out = snapshot.inbounds.length;
      return mapped;
    }
    const serverId = options.serverId;
    const existing = new Map((await this.inboundRows.listByServer(serverId)).map((row) => [row.tag, row]));
    for (const inbound of snapshot.inbounds) {
      const tag = portcullisTag(inbound.tag);
      const there = existing.get(tag);
      if (there !== undefined) {
        if (there.link_params.protocol !== inbound.protocol) {
          skip(`inbounds: "${tag}" exists on the server with another protocol`);
          report.inbounds.left_out++;
          continue;
        }
        report.inbounds.already++;
        report.inbounds.mapped[inbound.tag] = there.id;
        mapped.set(inbound.tag, there);
        continue;
      }
      if (options.dryRun) {
        report.inbounds.created++;
        report.inbounds.mapped[inbound.tag] = "(new)";
        mapped.set(inbound.tag, null);
        continue;
      }
      try {
        const template = await this.#template(snapshot, inbound, report);
        const created = await this.inbounds.create(serverId, {
          template_id: template,
          port: inbound.port,
          tag,
        });
        const row = await this.inboundRows.findInboundById(created.id);
        if (row === undefined) throw new Error("the new inbound is gone");
        report.inbounds.created++;
        report.inbounds.mapped[inbound.tag] = row.id;
        mapped.set(inbound.tag, row);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        skip(`inbounds: "${tag}" not created: ${error.message}`);
        report.inbounds.left_out++;
      }
    }
    return mapped;
  }

  /** The template of a peer inbound: its object without clients, port and tag; one per peer tag. */
  async #template(snapshot: PeerSnapshot, inbound: PeerInbound, report: ImportReport): Promise<string> {
    const name = `${snapshot.source}: ${inbound.tag}`.slice(0, 128);
    const found = await this.templates.findByName(name);
    if (found !== undefined) {
      report.templates.already++;
      return found.id;
    }
    const { tag: _tag, port: _port, settings, ...rest } = inbound.config;
    const own = { ...((settings ?? {}) as Record<string, unknown>) };
    delete own.clients;
    // 3x-ui writes an empty fallbacks list on every VLESS/Trojan inbound: it means none.
    if (Array.isArray(own.fallbacks) && own.fallbacks.length === 0) delete own.fallbacks;
    const users = snapshot.users.flatMap((user) => user.credentials.filter((c) => c.tag === inbound.tag));
    if (inbound.protocol === "shadowsocks") {
      own.method =
        mostCommon(users.map((c) => c.method).filter((m) => m !== "")) ??
        own.method ??
        "chacha20-ietf-poly1305";
      delete own.password;
    }
    const flow = inbound.protocol === "vless" ? (mostCommon(users.map((c) => c.flow)) ?? "") : "";
    const template = await this.templates.create({
      name,
      description: `Imported from ${snapshot.source} (inbound "${inbound.tag}")`.replace(
        /[^\x20-\x7e]/g,
        "?",
      ),
      config: { ...rest, port: "{{port}}", tag: "{{tag}}", settings: own },
      client_flow: flow === "xtls-rprx-vision" ? flow : "",
    });
    report.templates.created++;
    return template.id;
  }

  async #hosts(
    hosts: PeerHost[],
    inboundByTag: Map<string, InboundRow | null>,
    options: ImportOptions,
    report: ImportReport,
    skip: (reason: string, n?: number) => void,
  ): Promise<void> {
    report.hosts.found = hosts.length;
    const present = new Map<string, Set<string>>();
    for (const host of hosts) {
      const inbound = inboundByTag.get(host.tag);
      if (inbound === undefined) {
        skip("hosts: their inbound is not imported");
        report.hosts.left_out++;
        continue;
      }
      const body = hostBody(host, skip);
      if (!Value.Check(HostCreate, body)) {
        const first = [...Value.Errors(HostCreate, body)][0];
        skip(
          `hosts: not valid here (${first?.instancePath ?? ""} ${first?.message ?? ""})`.replace(
            /\s+\)/,
            ")",
          ),
        );
        report.hosts.left_out++;
        continue;
      }
      const key = JSON.stringify([body.address, body.port, body.remark, body.sni, body.host, body.path]);
      if (inbound === null) {
        report.hosts.created++;
        continue;
      }
      let keys = present.get(inbound.id);
      if (keys === undefined) {
        const listed = await this.hosts.list(inbound.server_id, inbound.id);
        keys = new Set(
          listed.map((h) => JSON.stringify([h.address, h.port, h.remark, h.sni, h.host, h.path])),
        );
        present.set(inbound.id, keys);
      }
      if (keys.has(key)) {
        report.hosts.already++;
        continue;
      }
      if (!options.dryRun) {
        try {
          await this.hosts.create(inbound.server_id, inbound.id, body);
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          skip(`hosts: ${error.message}`);
          report.hosts.left_out++;
          continue;
        }
      }
      keys.add(key);
      report.hosts.created++;
    }
  }

  async #users(
    snapshot: PeerSnapshot,
    inboundByTag: Map<string, InboundRow | null>,
    options: ImportOptions,
    report: ImportReport,
    skip: (reason: string, n?: number) => void,
  ): Promise<void> {
    const users = snapshot.users.filter((user) => {
      if (user.name.trim() === "" || user.name.length > 128 || !isSafeLine(user.name)) {
        skip("users: name is not one line of safe text (1-128 characters)");
        report.users.left_out++;
        return false;
      }
      return true;
    });
    report.users.found = snapshot.users.length;
    // Whose credential each inbound holds already, and whether the core can take the grants at all.
    const taken = new Map<string, Map<string, string>>();
    const refused = new Set<string>();
    for (const [tag, inbound] of inboundByTag) {
      if (inbound === null) continue;
      const held = await this.repository.credentialsOf(inbound.id);
      const protocol = inbound.link_params.protocol;
      taken.set(inbound.id, isUuidProtocol(protocol) ? lowerKeys(held) : held);
      const adding = users.filter((u) => u.credentials.some((c) => c.tag === tag)).length - held.size;
      try {
        if (adding > 0)
          await this.sync.checkCapacity(inbound, adding, { path: "inbound", message: "capacity" });
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        refused.add(tag);
      }
    }
    const protocolOf = new Map(snapshot.inbounds.map((x) => [x.tag, x.protocol]));
    const size = Math.max(1, options.batchSize ?? DEFAULT_BATCH);
    const now = this.now().toISOString();
    let done = 0;
    for (let start = 0; start < users.length; start += size) {
      const part = users.slice(start, start + size);
      const ids = part.map((user) => derivedId(`${snapshot.source}:user:${user.key}`));
      const existing = await this.repository.existingUserIds(ids);
      // New users' subscription tokens: 16 random bytes each, drawn once per batch.
      const tokens = randomBytes(16 * part.length).toString("hex");
      const batch = {
        users: [] as ImportUserRow[],
        grants: [] as ImportGrantRow[],
        links: [] as ImportLinkRow[],
      };
      part.forEach((user, i) => {
        const id = ids[i] as string;
        if (existing.has(id)) report.users.already++;
        else batch.users.push(this.#userRow(id, user, now, tokens.slice(32 * i, 32 * i + 32), skip));
        for (const link of user.links) {
          report.subscription_urls.links.found++;
          batch.links.push({
            source: snapshot.source,
            key: link.key,
            user_id: id,
            revoked_at: link.revoked_at,
          });
        }
        for (const credential of user.credentials) {
          report.grants.found++;
          const inbound = inboundByTag.get(credential.tag);
          if (inbound === undefined) {
            skip("grants: their inbound is not imported");
            report.grants.left_out++;
            continue;
          }
          if (refused.has(credential.tag)) {
            skip(`grants: inbound "${portcullisTag(credential.tag)}" cannot take more users on this core`);
            report.grants.left_out++;
            continue;
          }
          const protocol = inbound?.link_params.protocol ?? protocolOf.get(credential.tag);
          if ((protocol === "vless" || protocol === "vmess") && !isUuid(credential.credential)) {
            skip(`grants: a ${protocol} id that is not a UUID`);
            report.grants.left_out++;
            continue;
          }
          if (inbound === null) {
            report.grants.created++;
            continue;
          }
          // A UUID is the same whatever its letters' case (cores compare them parsed): stored in lower case.
          const value = isUuidProtocol(protocol)
            ? credential.credential.toLowerCase()
            : credential.credential;
          const holder = taken.get(inbound.id)?.get(value);
          if (holder !== undefined) {
            if (holder === id) report.grants.already++;
            else {
              skip("grants: another user has the same credential on the inbound");
              report.grants.left_out++;
            }
            continue;
          }
          taken.get(inbound.id)?.set(value, id);
          if (
            protocol === "shadowsocks" &&
            credential.method !== "" &&
            credential.method !== inbound.link_params.shadowsocksMethod
          ) {
            skip(
              "grants: shadowsocks method differs from the inbound's (the password is kept; clients need the inbound's method)",
            );
          }
          if (
            protocol === "vless" &&
            credential.flow !== "" &&
            credential.flow !== (inbound.link_params.vlessFlow ?? "")
          ) {
            skip("grants: VLESS flow differs from the inbound's (the inbound's is used)");
          }
          batch.grants.push({
            id: derivedId(`grant:${inbound.id}:${id}`),
            user_id: id,
            server_inbound_id: inbound.id,
            server_id: inbound.server_id,
            proxy_user_id: proxyUserIdFor(inbound.server_id, id),
            credential: value,
            level: 0,
            is_active: true,
            sync_state: "pending",
            sync_error: null,
            sync_revision: 0,
            uplink_bytes: 0,
            downlink_bytes: 0,
            created_at: now,
            updated_at: now,
          });
        }
      });
      if (options.dryRun) {
        report.users.created += batch.users.length;
        report.grants.created += batch.grants.length;
        report.subscription_urls.links.created += batch.links.length;
      } else {
        const written = await this.repository.insertBatch(batch);
        report.users.created += written.users;
        report.users.already += batch.users.length - written.users;
        report.grants.created += written.grants;
        report.grants.already += batch.grants.length - written.grants;
        report.subscription_urls.links.created += written.links;
        report.subscription_urls.links.already += batch.links.length - written.links;
      }
      done += part.length;
      await options.onBatch?.(done, users.length);
    }
  }

  #userRow(
    id: string,
    user: PeerUser,
    now: string,
    subToken: string,
    skip: (reason: string, n?: number) => void,
  ): ImportUserRow {
    let comment = user.comment;
    if (comment !== null && (comment.length > 1000 || !isSafeText(comment))) {
      skip("users: note left out (not safe text, or over 1000 characters)");
      comment = null;
    }
    return {
      id,
      name: user.name.trim(),
      comment,
      telegram_id: user.telegram_id,
      created_at: user.created_at,
      updated_at: now,
      sub_token: subToken,
      status: user.status,
      data_limit_bytes: user.data_limit_bytes,
      data_limit_reset: user.data_limit_reset,
      used_bytes: user.used_bytes,
      lifetime_used_bytes: Math.max(user.lifetime_used_bytes, user.used_bytes),
      last_reset_at: user.last_reset_at,
      expire_at: user.expire_at,
      on_hold_duration_seconds: user.on_hold_duration_seconds,
      on_hold_timeout_at: user.on_hold_timeout_at,
      online_at: user.online_at,
      sub_updated_at: user.sub_updated_at,
      sub_last_user_agent: user.sub_last_user_agent === null ? null : user.sub_last_user_agent.slice(0, 512),
      next_reset_at: null,
      expiring_notified_at: null,
      sub_by_id_revoked_at: null,
    };
  }

  async #secret(snapshot: PeerSnapshot, options: ImportOptions, report: ImportReport): Promise<void> {
    if (snapshot.secret === null) return;
    const stored = await this.repository.sealedSecret(snapshot.source);
    report.subscription_urls.secret = stored === undefined ? "stored" : "already";
    if (stored === undefined && !options.dryRun) {
      await this.repository.saveSecret(
        snapshot.source,
        this.secretBox.seal(snapshot.secret),
        this.now().toISOString(),
      );
    }
  }

  async #admins(
    snapshot: PeerSnapshot,
    options: ImportOptions,
    report: ImportReport,
    skip: (reason: string, n?: number) => void,
  ): Promise<void> {
    report.admins.found = snapshot.admins.length;
    const names = await this.repository.adminNames();
    const now = this.now().toISOString();
    for (const admin of snapshot.admins) {
      const id = derivedId(`${snapshot.source}:admin:${admin.username.toLowerCase()}`);
      if (!/^[A-Za-z0-9_.@-]{1,64}$/.test(admin.username)) {
        skip("admins: username not usable here");
        report.admins.left_out++;
        continue;
      }
      if (names.has(admin.username.toLowerCase())) {
        report.admins.already++;
        continue;
      }
      if (
        !options.dryRun &&
        !(await this.repository.insertAdmin(id, admin.username, "operator", admin.created_at, now))
      ) {
        report.admins.already++;
        continue;
      }
      names.add(admin.username.toLowerCase());
      report.admins.created++;
    }
  }
}

function mostCommon(values: string[]): string | undefined {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  let best: string | undefined;
  for (const [value, n] of counts) if (best === undefined || n > (counts.get(best) ?? 0)) best = value;
  return best;
}

const list = (value: string | null) =>
  value === null
    ? []
    : value
        .split(",")
        .map((part) => part.trim())
        .filter((part) => part !== "");

/** A peer host as the body POST …/hosts takes; placeholders Portcullis does not know are dropped. */
function hostBody(host: PeerHost, skip: (reason: string, n?: number) => void): HostCreate {
  const address = host.address === null || host.address.includes("{") ? null : host.address;
  if (host.address !== null && address === null)
    skip("hosts: address placeholder became the server's hostname");
  const security = host.security === "tls" ? "tls" : host.security === "none" ? "none" : "inbound";
  const alpn = host.alpn === null || host.alpn === "none" ? null : list(host.alpn);
  const fingerprint =
    host.fingerprint !== null && (FINGERPRINTS as readonly string[]).includes(host.fingerprint)
      ? (host.fingerprint as unknown as HostCreate["fingerprint"])
      : null;
  return {
    address,
    port: host.port,
    remark: host.remark,
    sni: list(host.sni).filter((name) => !name.includes("*")),
    host: list(host.host),
    path: host.path,
    alpn: alpn as HostCreate["alpn"],
    fingerprint,
    security,
    allow_insecure: host.allow_insecure,
    is_disabled: host.is_disabled,
  };
}

function isUuidProtocol(protocol: string | undefined): boolean {
  return protocol === "vless" || protocol === "vmess";
}

function lowerKeys(held: Map<string, string>): Map<string, string> {
  return new Map([...held].map(([credential, userId]) => [credential.toLowerCase(), userId]));
}
