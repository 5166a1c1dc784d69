// RFC 6238 time-based one-time passwords (HMAC-SHA1, 30-second steps, 6 digits: what every
// authenticator app scans from an otpauth:// URI), base32 secrets (RFC 4648), and recovery codes.
// Pure: the clock is a parameter.
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export const STEP_SECONDS = 30;
const DIGITS = 6;
/** Codes of the previous and next step are accepted too (clock drift, a code typed at the edge). */
const WINDOW = 1;
const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

export function base32Encode(bytes: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

export function base32Decode(text: string): Buffer {
  const clean = text.replace(/=+$/, "").toUpperCase();
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const char of clean) {
    const index = BASE32.indexOf(char);
    if (index === -1) throw new Error("not base32");
    value = (value << 5) | index;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** A new 160-bit secret, base32 (RFC 4226 recommends the HMAC-SHA1 output size). */
export function newTotpSecret(): string {
  return base32Encode(randomBytes(20));
}

export function stepAt(nowMs: number): number {
  return Math.floor(nowMs / 1000 / STEP_SECONDS);
}

/** The code of one step (RFC 4226 dynamic truncation). */
export function codeAt(secret: string, step: number): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac("sha1", base32Decode(secret)).update(counter).digest();
  const offset = (mac[mac.length - 1] as number) & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** DIGITS).padStart(DIGITS, "0");
}

/**
 * The step a code matches, within ±WINDOW of now, and only if it is later than `lastStep` (a code
 * is accepted once); undefined when it does not match.
 */
export function matchingStep(
  secret: string,
  code: string,
  nowMs: number,
  lastStep: number | null,
): number | undefined {
  if (!/^\d{6}$/.test(code)) return undefined;
  const now = stepAt(nowMs);
  for (let step = now - WINDOW; step <= now + WINDOW; step++) {
    if (lastStep !== null && step <= lastStep) continue;
    const expected = Buffer.from(codeAt(secret, step));
    if (timingSafeEqual(expected, Buffer.from(code))) return step;
  }
  return undefined;
}

export function otpauthUri(secret: string, username: string, issuer = "Portcullis"): string {
  const label = encodeURIComponent(`${issuer}:${username}`);
  const params = new URLSearchParams({ secret, issuer, algorithm: "SHA1", digits: "6", period: "30" });
  return `otpauth://totp/${label}?${params.toString()}`;
}

/** Ten one-time recovery codes, `xxxxx-xxxxx` base32 (50 bits each): shown once, stored hashed. */
export function newRecoveryCodes(count = 10): string[] {
  return Array.from({ length: count }, () => {
    const text = base32Encode(randomBytes(7)).slice(0, 10).toLowerCase();
    return `${text.slice(0, 5)}-${text.slice(5)}`;
  });
}

/** High-entropy codes need no slow hash; normalised so spacing and case do not matter. */
export function hashRecoveryCode(code: string): string {
  const normal = code.toLowerCase().replace(/[^a-z2-7]/g, "");
  return createHash("sha256").update(`recovery:${normal}`).digest("hex");
}
