// The reconciler's decision, as a pure function: given what the database wants on one core and what
// is known about the core, which calls bring the core to the database. No I/O, so every case of
// restart, outage, drift and queued removal is tested without a core (plan.test.ts).
import type { CoreProtocol } from "../../cores/core-types.ts";
import type { SyncState } from "../../domain/sync.ts";

export type DesiredGrant = {
  accessId: string;
  email: string;
  credential: string;
  level: number;
  isActive: boolean;
  syncState: SyncState;
};

export type DesiredInboundRow = {
  inboundId: string;
  tag: string;
  port: number;
  protocol: CoreProtocol;
  isActive: boolean;
  syncState: SyncState;
  /** V2Ray 4.x shadowsocks: the one user sits inside the inbound, so a user change is an apply. */
  holdsUserInline: boolean;
  /** Its grants in scope: all of them, except in `tracked` mode (only those not synced). */
  grants: DesiredGrant[];
};

export type QueuedRemoval = { id: string; tag: string; email: string | null };

export type DesiredServer = { inbounds: DesiredInboundRow[]; removals: QueuedRemoval[] };

export type ObservedUser = { credential: string | null; level: number };
export type ObservedInbound = {
  protocol: CoreProtocol | null;
  /** [from, to] pairs, as the core lists them. */
  portRanges: [number, number][];
  /** Keyed by lower-cased email (Xray compares emails case-insensitively). */
  users: Map<string, ObservedUser>;
};

/**
 * What is known about the core:
 * - `listed`: Xray's ListInbounds/GetInboundUsers, the core's real state;
 * - `restarted`: V2Ray 4.x that restarted, so it holds nothing Portcullis added;
 * - `unknown`: V2Ray 4.x whose state cannot be known (never fully applied): apply everything;
 * - `tracked`: V2Ray 4.x that kept its state: rows marked synced are on it, the rest is in scope.
 */
export type Observed =
  | { kind: "listed"; inbounds: Map<string, ObservedInbound> }
  | { kind: "restarted" }
  | { kind: "unknown" }
  | { kind: "tracked"; retryErrors: boolean };

/** Settles rows (and queue entries) once the call succeeded; `replace`: the core holds an older copy. */
export type ReconcileAction =
  | { kind: "remove_inbound"; tag: string; inboundIds: string[]; removalIds: string[] }
  | { kind: "remove_user"; tag: string; email: string; accessIds: string[]; removalIds: string[] }
  | { kind: "apply_inbound"; inboundId: string; tag: string }
  | { kind: "add_user"; inboundId: string; tag: string; accessId: string; email: string; replace: boolean }
  | { kind: "settle"; inboundIds: string[]; accessIds: string[]; removalIds: string[] };

const PHASES: ReconcileAction["kind"][] = [
  "remove_inbound",
  "remove_user",
  "apply_inbound",
  "add_user",
  "settle",
];

/** Ordered actions: removals, then whole inbounds (each with all its users), then single users. */
export function planReconcile(desired: DesiredServer, observed: Observed): ReconcileAction[] {
  const plan = new PlanBuilder();
  if (observed.kind === "listed") planListed(plan, desired, observed.inbounds);
  else if (observed.kind === "tracked") planTracked(plan, desired, observed.retryErrors);
  else planEmptyOrUnknown(plan, desired, observed.kind === "unknown");
  return plan.actions();
}

/** Whether a row's state asks for work: pending always, error only when errors are retried. */
function due(state: SyncState, retryErrors: boolean): boolean {
  return state === "pending" || (state === "error" && retryErrors);
}

function planListed(plan: PlanBuilder, desired: DesiredServer, core: Map<string, ObservedInbound>): void {
  for (const inbound of desired.inbounds) {
    const seen = core.get(inbound.tag);
    if (!inbound.isActive) {
      if (seen === undefined) plan.settleInbound(inbound);
      else plan.removeInbound(inbound.tag, { inboundIds: [inbound.inboundId] });
      continue;
    }
    const isStale = seen === undefined || seen.protocol !== inbound.protocol || !listens(seen, inbound.port);
    if (isStale) plan.apply(inbound);
    else planListedUsers(plan, inbound, seen);
  }
  const activeTags = new Set(desired.inbounds.filter((i) => i.isActive).map((i) => i.tag));
  for (const removal of desired.removals) {
    const seen = core.get(removal.tag);
    const user = removal.email === null ? undefined : seen?.users.get(removal.email.toLowerCase());
    if (removal.email === null && seen !== undefined && !activeTags.has(removal.tag)) {
      plan.removeInbound(removal.tag, { removalIds: [removal.id] });
    } else if (removal.email !== null && user !== undefined && !plan.wantsUser(removal.tag, removal.email)) {
      plan.removeUser(removal.tag, removal.email, { removalIds: [removal.id] });
    } else plan.dropRemoval(removal.id);
  }
}

/** The users of an inbound the core has: add what is missing or different, remove what is not granted. */
function planListedUsers(plan: PlanBuilder, inbound: DesiredInboundRow, seen: ObservedInbound): void {
  plan.settleInbound(inbound);
  const wanted = new Set<string>();
  for (const grant of inbound.grants) {
    const key = grant.email.toLowerCase();
    const user = seen.users.get(key);
    if (!grant.isActive) {
      if (user === undefined) plan.settleGrant(grant);
      else plan.removeUser(inbound.tag, grant.email, { accessIds: [grant.accessId] });
      continue;
    }
    wanted.add(key);
    plan.keepUser(inbound.tag, grant.email);
    const differs =
      user !== undefined && (user.credential !== grant.credential || user.level !== grant.level);
    if (user === undefined || differs) plan.addUser(inbound, grant, differs);
    else plan.settleGrant(grant);
  }
  for (const email of seen.users.keys()) {
    if (!wanted.has(email)) plan.removeUser(inbound.tag, email, {});
  }
}

function planTracked(plan: PlanBuilder, desired: DesiredServer, retryErrors: boolean): void {
  for (const inbound of desired.inbounds) {
    if (due(inbound.syncState, retryErrors)) {
      if (inbound.isActive) plan.apply(inbound);
      else plan.removeInbound(inbound.tag, { inboundIds: [inbound.inboundId] });
    }
  }
  for (const inbound of desired.inbounds) {
    if (plan.isApplied(inbound.inboundId)) continue;
    for (const grant of inbound.grants) {
      if (!due(grant.syncState, retryErrors)) continue;
      if (!inbound.isActive) plan.settleGrant(grant);
      else if (inbound.holdsUserInline) plan.apply(inbound);
      else if (grant.isActive) plan.addUser(inbound, grant, false);
      else plan.removeUser(inbound.tag, grant.email, { accessIds: [grant.accessId] });
    }
  }
  for (const removal of desired.removals) {
    if (plan.isTagApplied(removal.tag)) plan.dropRemoval(removal.id);
    else if (removal.email === null) plan.removeInbound(removal.tag, { removalIds: [removal.id] });
    else plan.removeUser(removal.tag, removal.email, { removalIds: [removal.id] });
  }
}

/** A core that lost everything (restarted) or whose state is unknown: every active inbound is applied. */
function planEmptyOrUnknown(plan: PlanBuilder, desired: DesiredServer, isUnknown: boolean): void {
  for (const inbound of desired.inbounds) {
    if (inbound.isActive) {
      plan.apply(inbound);
    } else if (isUnknown && inbound.syncState !== "synced") {
      plan.removeInbound(inbound.tag, { inboundIds: [inbound.inboundId] });
    } else {
      plan.settleInbound(inbound);
      for (const grant of inbound.grants) plan.settleGrant(grant);
    }
  }
  for (const removal of desired.removals) {
    if (!isUnknown || plan.isTagApplied(removal.tag)) plan.dropRemoval(removal.id);
    else if (removal.email === null) plan.removeInbound(removal.tag, { removalIds: [removal.id] });
    else plan.removeUser(removal.tag, removal.email, { removalIds: [removal.id] });
  }
}

type Settles = { inboundIds?: string[]; accessIds?: string[]; removalIds?: string[] };

/** Collects actions with their keys, so each tag, user and row appears once. */
class PlanBuilder {
  readonly #removeInbounds = new Map<string, Extract<ReconcileAction, { kind: "remove_inbound" }>>();
  readonly #removeUsers = new Map<string, Extract<ReconcileAction, { kind: "remove_user" }>>();
  readonly #applies = new Map<string, Extract<ReconcileAction, { kind: "apply_inbound" }>>();
  readonly #appliedTags = new Set<string>();
  readonly #adds = new Map<string, Extract<ReconcileAction, { kind: "add_user" }>>();
  /** tag + email of every user that is added (or kept): never removed in the same plan. */
  readonly #wantedUsers = new Set<string>();
  readonly #settled = {
    inboundIds: new Set<string>(),
    accessIds: new Set<string>(),
    removalIds: new Set<string>(),
  };

  apply(inbound: DesiredInboundRow): void {
    if (this.#applies.has(inbound.inboundId)) return;
    this.#applies.set(inbound.inboundId, {
      kind: "apply_inbound",
      inboundId: inbound.inboundId,
      tag: inbound.tag,
    });
    this.#appliedTags.add(inbound.tag);
    for (const grant of inbound.grants) {
      if (grant.isActive) this.#wantedUsers.add(userKey(inbound.tag, grant.email));
    }
  }

  isApplied(inboundId: string): boolean {
    return this.#applies.has(inboundId);
  }

  isTagApplied(tag: string): boolean {
    return this.#appliedTags.has(tag);
  }

  wantsUser(tag: string, email: string): boolean {
    return this.#wantedUsers.has(userKey(tag, email));
  }

  keepUser(tag: string, email: string): void {
    this.#wantedUsers.add(userKey(tag, email));
  }

  addUser(inbound: DesiredInboundRow, grant: DesiredGrant, replace: boolean): void {
    this.#wantedUsers.add(userKey(inbound.tag, grant.email));
    const { inboundId, tag } = inbound;
    const { accessId, email } = grant;
    this.#adds.set(accessId, { kind: "add_user", inboundId, tag, accessId, email, replace });
  }

  removeInbound(tag: string, settles: Settles): void {
    const action = this.#removeInbounds.get(tag) ?? {
      kind: "remove_inbound",
      tag,
      inboundIds: [],
      removalIds: [],
    };
    action.inboundIds.push(...(settles.inboundIds ?? []));
    action.removalIds.push(...(settles.removalIds ?? []));
    this.#removeInbounds.set(tag, action);
  }

  removeUser(tag: string, email: string, settles: Settles): void {
    const key = userKey(tag, email);
    const action = this.#removeUsers.get(key) ?? {
      kind: "remove_user",
      tag,
      email,
      accessIds: [],
      removalIds: [],
    };
    action.accessIds.push(...(settles.accessIds ?? []));
    action.removalIds.push(...(settles.removalIds ?? []));
    this.#removeUsers.set(key, action);
  }

  settleInbound(inbound: DesiredInboundRow): void {
    if (inbound.syncState !== "synced") this.#settled.inboundIds.add(inbound.inboundId);
  }

  settleGrant(grant: DesiredGrant): void {
    if (grant.syncState !== "synced") this.#settled.accessIds.add(grant.accessId);
  }

  dropRemoval(id: string): void {
    this.#settled.removalIds.add(id);
  }

  actions(): ReconcileAction[] {
    const removeUsers = [...this.#removeUsers.values()].filter(
      (action) => !this.#removeInbounds.has(action.tag) && !this.#appliedTags.has(action.tag),
    );
    for (const moot of [...this.#removeUsers.values()].filter((action) => !removeUsers.includes(action))) {
      for (const id of moot.removalIds) this.#settled.removalIds.add(id);
      for (const id of moot.accessIds) this.#settled.accessIds.add(id);
    }
    const adds = [...this.#adds.values()].filter((action) => !this.#applies.has(action.inboundId));
    const settle = this.#settleAction();
    const all: ReconcileAction[] = [
      ...this.#removeInbounds.values(),
      ...removeUsers,
      ...this.#applies.values(),
      ...adds,
      ...(settle === undefined ? [] : [settle]),
    ];
    return all.sort((a, b) => PHASES.indexOf(a.kind) - PHASES.indexOf(b.kind));
  }

  #settleAction(): ReconcileAction | undefined {
    const { inboundIds, accessIds, removalIds } = this.#settled;
    if (inboundIds.size + accessIds.size + removalIds.size === 0) return undefined;
    return {
      kind: "settle",
      inboundIds: [...inboundIds],
      accessIds: [...accessIds],
      removalIds: [...removalIds],
    };
  }
}

function listens(seen: ObservedInbound, port: number): boolean {
  return seen.portRanges.some(([from, to]) => from <= port && port <= to);
}

function userKey(tag: string, email: string): string {
  return `${tag}\n${email.toLowerCase()}`;
}
