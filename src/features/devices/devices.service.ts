// Device limits at subscription fetch time (docs/FAIR-USE.md, "Devices"): /sub asks judge() for a
// user whose devices are checked (a device limit above 0); the answer says whether the fetch gets the
// links or a placeholder, and why. The admins list and remove a user's devices; removing one frees a
// place. A refused new device is told once per user and hour as the event user.device_limit_reached.
import { randomUUID } from "node:crypto";
import { NotFoundError } from "../../lib/errors.ts";
import type { Emit } from "../notifications/notifier.ts";
import type { Admission, DeviceRecord, DevicesRepository } from "./devices.repository.ts";
import type { DeviceClaim, DeviceRefusal } from "./hwid.ts";

/** What a fetch of a checked user gets: the links (refusal undefined) or a placeholder saying why. */
export type DeviceVerdict = { refusal: DeviceRefusal | undefined };

/** The subscription settings judge() needs. */
export type DevicePolicy = { defaultLimit: number; requireHwid: boolean };
/** Where the policy is read (the subscription settings service). */
export type DevicePolicySource = { devicePolicy(): Promise<DevicePolicy> };

/** What /sub needs of this service (the subscriptions feature is given it by deps.ts). */
export type DeviceGate = Pick<DevicesService, "judge">;

/** A refused device is told at most this often per user (apps poll; one event per poll would flood). */
const EVENT_EVERY_MS = 3_600_000;

export class DevicesService {
  readonly #toldAt = new Map<string, number>();

  constructor(
    private readonly repo: DevicesRepository,
    /** The subscription settings' default_device_limit and require_hwid, as stored now. */
    private readonly policy: DevicePolicySource,
    private readonly now: () => Date = () => new Date(),
    private readonly emit: Emit = async () => {},
  ) {}

  /**
   * Judges one fetch of the user's subscription. No HWID: the links, unless the settings require one;
   * an HWID that cannot be one (too long, not printable ASCII, sent twice): refused as unsupported;
   * else the device is recorded if it is known or a place is free, and refused otherwise.
   */
  async judge(
    userId: string,
    userName: string,
    claim: DeviceClaim,
    policy: DevicePolicy,
  ): Promise<DeviceVerdict> {
    if (claim.kind === "invalid") return { refusal: "hwid_required" };
    if (claim.kind === "none") {
      return { refusal: policy.requireHwid ? "hwid_required" : undefined };
    }
    const nowDate = this.now();
    const admission = await this.repo.admit(
      userId,
      claim.device,
      policy.defaultLimit,
      randomUUID(),
      nowDate.toISOString(),
    );
    if (admission.outcome !== "refused") return { refusal: undefined };
    await this.#tell(userId, userName, admission, claim.device, nowDate.getTime());
    return { refusal: "device_limit" };
  }

  async #tell(
    userId: string,
    name: string,
    admission: Admission & { outcome: "refused" },
    device: { os: string | null; model: string | null; app: string | null },
    nowMs: number,
  ): Promise<void> {
    const last = this.#toldAt.get(userId);
    if (last !== undefined && nowMs - last < EVENT_EVERY_MS) return;
    this.#toldAt.set(userId, nowMs);
    if (this.#toldAt.size > 10_000) {
      for (const [id, at] of this.#toldAt) if (nowMs - at >= EVENT_EVERY_MS) this.#toldAt.delete(id);
    }
    await this.emit("user.device_limit_reached", {
      user_id: userId,
      name,
      devices: admission.active,
      device_limit: admission.limit,
      refused: { os: device.os, model: device.model, app: device.app },
    });
  }

  /** The user's limit (their own and the one applied) and devices, most recently seen first. */
  async list(userId: string) {
    const user = await this.repo.findLimit(userId);
    if (user === undefined) throw new NotFoundError("user", userId);
    const { defaultLimit } = await this.policy.devicePolicy();
    return {
      user_id: userId,
      device_limit: user.device_limit,
      effective_device_limit: user.device_limit ?? defaultLimit,
      devices: await this.repo.listDevices(userId),
    };
  }

  /** Removes one of the user's devices: its place is free for the next new device. */
  async remove(userId: string, deviceId: string): Promise<DeviceRecord> {
    if ((await this.repo.findLimit(userId)) === undefined) throw new NotFoundError("user", userId);
    const removed = await this.repo.deleteDevice(userId, deviceId);
    if (removed === undefined) throw new NotFoundError("device", deviceId);
    return removed;
  }
}
