// Adding many users to one inbound on a core, many calls in flight: the grants of an applied inbound,
// a bulk grant, the reconciler's catch-up. The outcome is per grant, so one refused user does not
// mark the others, and a core that goes away stops the rest (they stay pending for the reconciler).
import type { CoreClient } from "../../cores/core-client.ts";
import type { InboundRef } from "../../cores/core-types.ts";
import type { BuiltUser } from "../../cores/inbound-builder/built.ts";
import type { SyncState } from "../../domain/sync.ts";
import { AppError, CoreConflictError, CoreDownError, CoreNotFoundError } from "../../lib/errors.ts";
import { eachWithWorkers, type Limiter } from "../../lib/limiter.ts";

/** Where a core's add rate levels off (probe §10: 64 in flight on one channel). */
export const USER_PUSH_PARALLELISM = 64;

export type UserPush = {
  accessId: string;
  email: string;
  user: BuiltUser;
  /** The core holds an older copy of this user (another credential or level): remove it first. */
  replaceFirst: boolean;
};

export type PushOutcome = {
  synced: string[];
  /** Refused by the core (or by the client's guards): the grant is in error with this message. */
  refused: Map<string, string>;
  /** Not sent because the core went away, the inbound vanished or the run was cancelled. */
  notSent: string[];
  /** The core became unreachable or timed out during the push. */
  down: CoreDownError | undefined;
  /** The core no longer has the inbound (it restarted): apply the inbound instead. */
  isInboundMissing: boolean;
};

export type StatusOf = { state: SyncState; error: string | null };

/** Grants that reached the core, handed over in batches while the push goes on (to be recorded). */
export type OnSynced = (accessIds: string[]) => void;
const SYNCED_BATCH = 2000;

export async function pushUsers(
  client: CoreClient,
  ref: InboundRef,
  pushes: readonly UserPush[],
  limit: Limiter,
  options: { signal?: AbortSignal; onSynced?: OnSynced } = {},
): Promise<PushOutcome> {
  const { signal, onSynced } = options;
  let reported = 0;
  const outcome: PushOutcome = {
    synced: [],
    refused: new Map(),
    notSent: [],
    down: undefined,
    isInboundMissing: false,
  };
  const stopped = () => outcome.down !== undefined || outcome.isInboundMissing || signal?.aborted === true;
  await eachWithWorkers(pushes, USER_PUSH_PARALLELISM, (push) =>
    limit(async () => {
      if (stopped()) return void outcome.notSent.push(push.accessId);
      try {
        await addOne(client, ref, push);
        outcome.synced.push(push.accessId);
        if (onSynced !== undefined && outcome.synced.length - reported >= SYNCED_BATCH) {
          onSynced(outcome.synced.slice(reported));
          reported = outcome.synced.length;
        }
      } catch (error) {
        record(outcome, push.accessId, error);
      }
    }),
  );
  if (onSynced !== undefined && outcome.synced.length > reported) onSynced(outcome.synced.slice(reported));
  return outcome;
}

function record(outcome: PushOutcome, accessId: string, error: unknown): void {
  if (!(error instanceof AppError)) throw error;
  if (error instanceof CoreDownError) {
    outcome.down ??= error;
    outcome.notSent.push(accessId);
  } else if (error instanceof CoreNotFoundError) {
    outcome.isInboundMissing = true;
    outcome.notSent.push(accessId);
  } else {
    outcome.refused.set(accessId, error.message);
  }
}

/** AddUser; a user the core already has (a removal that never reached it, or an older copy) is replaced. */
async function addOne(client: CoreClient, ref: InboundRef, push: UserPush): Promise<void> {
  if (push.replaceFirst) await removeUserIfPresent(client, ref.tag, push.email);
  try {
    await client.addUser(ref, push.user);
  } catch (error) {
    if (!(error instanceof CoreConflictError)) throw error;
    await client.removeUser(ref.tag, push.email);
    await client.addUser(ref, push.user);
  }
}

export async function removeUserIfPresent(client: CoreClient, tag: string, email: string): Promise<void> {
  await client.removeUser(tag, email).catch(ignoreNotFound);
}

export async function removeInboundIfPresent(client: CoreClient, tag: string): Promise<void> {
  await client.removeInbound(tag).catch(ignoreNotFound);
}

function ignoreNotFound(error: unknown): void {
  if (!(error instanceof CoreNotFoundError)) throw error;
}

/** The state each grant of a push ends in. */
export function statusesOf(outcome: PushOutcome): Map<string, StatusOf> {
  const statuses = new Map<string, StatusOf>();
  for (const id of outcome.synced) statuses.set(id, { state: "synced", error: null });
  for (const [id, message] of outcome.refused) statuses.set(id, { state: "error", error: message });
  const why = outcome.down?.message ?? (outcome.isInboundMissing ? "the core lost the inbound" : "cancelled");
  for (const id of outcome.notSent) statuses.set(id, { state: "pending", error: why });
  return statuses;
}
