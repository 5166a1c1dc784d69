// Adding many users to one inbound on a core, many calls in flight: the grants of an applied inbound,
// a bulk grant, the reconciler's catch-up. The outcome is per grant, so one refused user does not
// mark the others, and a core that goes away stops the rest (they stay pending for the reconciler).
import type { CoreClient } from "../../cores/core-client.ts";
import type { InboundRef } from "../../cores/core-types.ts";
import type { BuiltUser } from "../../cores/inbound-builder/built.ts";
import type { SyncState } from "../../domain/sync.ts";
import { syncBreather } from "../../lib/breather.ts";
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
  /**
   * The inbound holds no user of this email (it was just put on the core, in this core process):
   * an AddUser whose answer never comes is remembered as sent (UnansweredAdds).
   */
  isSlotEmpty?: boolean;
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
      await syncBreather();
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

/**
 * AddUser. A user the core already has is either the very user an earlier AddUser sent into an empty
 * slot whose answer never came (a missed deadline: the core may have done it), which is kept, or
 * anything else (a removal that never reached it, an older credential or level), which is replaced.
 */
async function addOne(client: CoreClient, ref: InboundRef, push: UserPush): Promise<void> {
  let isSlotEmpty = push.isSlotEmpty === true;
  if (push.replaceFirst) {
    await removeUserIfPresent(client, ref.tag, push.email);
    isSlotEmpty = true;
  }
  try {
    await sendAdd(client, ref, push, isSlotEmpty);
  } catch (error) {
    if (!(error instanceof CoreConflictError)) throw error;
    if (unanswered.isSameAsSent(client, ref.tag, push.email, push.user)) {
      unanswered.forget(client, ref.tag, push.email);
      return;
    }
    await client.removeUser(ref.tag, push.email);
    unanswered.forget(client, ref.tag, push.email);
    await sendAdd(client, ref, push, true);
  }
}

async function sendAdd(client: CoreClient, ref: InboundRef, push: UserPush, isSlotEmpty: boolean) {
  try {
    await client.addUser(ref, push.user);
  } catch (error) {
    // No answer: into an empty slot, the core now holds this user or nothing; otherwise who knows.
    // (Any other answer, "already exists" included, leaves the slot as it was.)
    if (error instanceof CoreDownError) {
      if (isSlotEmpty) unanswered.sent(client, ref.tag, push.email, push.user);
      else unanswered.forget(client, ref.tag, push.email);
    }
    throw error;
  }
  unanswered.forget(client, ref.tag, push.email);
}

/**
 * AddUser calls sent into an empty slot whose answer never came, per core client, inbound tag and
 * email: the user exactly as sent. V2Ray cannot list users, so when the next pass's AddUser is
 * answered "already exists" and the user pushed is byte for byte the one remembered (nothing changed
 * its credential or level in between: those change the built user), the core holds this very user
 * and it is synced as it is, instead of being removed and added again. Anything else in the slot
 * (a forgotten or different entry) is replaced as before. A successful add, a removal through this
 * module and a replaced or removed inbound forget the entries; the memory is this instance's only,
 * so another instance (or a restarted one) takes the safe path.
 */
class UnansweredAdds {
  readonly #byClient = new WeakMap<CoreClient, Map<string, Map<string, string>>>();

  sent(client: CoreClient, tag: string, email: string, user: BuiltUser): void {
    const byTag = this.#byClient.get(client) ?? new Map<string, Map<string, string>>();
    this.#byClient.set(client, byTag);
    const byEmail = byTag.get(tag) ?? new Map<string, string>();
    byTag.set(tag, byEmail);
    byEmail.set(email.toLowerCase(), fingerprint(user));
  }

  isSameAsSent(client: CoreClient, tag: string, email: string, user: BuiltUser): boolean {
    const sent = this.#byClient.get(client)?.get(tag)?.get(email.toLowerCase());
    return sent !== undefined && sent === fingerprint(user);
  }

  forget(client: CoreClient, tag: string, email: string): void {
    const byEmail = this.#byClient.get(client)?.get(tag);
    if (byEmail === undefined) return;
    byEmail.delete(email.toLowerCase());
    if (byEmail.size === 0) this.#byClient.get(client)?.delete(tag);
  }

  forgetInbound(client: CoreClient, tag: string): void {
    this.#byClient.get(client)?.delete(tag);
  }
}

const unanswered = new UnansweredAdds();

/** The whole built user (bytes and numbers included), to compare what is pushed with what was sent. */
function fingerprint(user: BuiltUser): string {
  return JSON.stringify(user, (_key, value: unknown) => {
    if (value instanceof Uint8Array) return Buffer.from(value).toString("base64");
    return typeof value === "bigint" ? value.toString() : value;
  });
}

/** The inbound was put on the core afresh (or taken off it): nothing remembered for it holds any more. */
export function forgetUnansweredAdds(client: CoreClient, tag: string): void {
  unanswered.forgetInbound(client, tag);
}

export async function removeUserIfPresent(client: CoreClient, tag: string, email: string): Promise<void> {
  await client.removeUser(tag, email).catch(ignoreNotFound);
  unanswered.forget(client, tag, email);
}

export async function removeInboundIfPresent(client: CoreClient, tag: string): Promise<void> {
  await client.removeInbound(tag).catch(ignoreNotFound);
  unanswered.forgetInbound(client, tag);
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
