// A flavor-neutral summary of an InboundHandlerConfig or User as it will go on the wire, decoded
// back from the actual message so the guards judge the bytes, not the builder's intentions.

import type { CoreProtocol } from "../core-types.ts";

export type UserSummary = {
  email: string;
  /** null when the user carries no account. */
  accountType: string | null;
  credential: string | null;
};

export type InboundSummary = {
  tag: string;
  receiverType: string | null;
  /** [from, to] pairs; empty when the receiver has no port. */
  ports: [number, number][];
  listen: "ip" | "domain" | "none";
  proxyType: string | null;
  protocol: CoreProtocol | null;
  /** The account type users of this proxy must carry. */
  expectedAccountType: string | null;
  /** null when the proxy settings could not be decoded. */
  users: UserSummary[] | null;
  /** Whether the proxy takes users through AlterInbound. */
  managesUsers: boolean;
};

/** Runs a decoder, turning malformed bytes into undefined. */
export function tryDecode<T>(decode: () => T): T | undefined {
  try {
    return decode();
  } catch {
    return undefined;
  }
}
