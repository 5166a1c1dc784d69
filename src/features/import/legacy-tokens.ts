// Marzban's and PasarGuard's subscription tokens, checked with the imported secret (issue 51). Two
// forms: the JWT (HS256, payload {sub: username, access: "subscription", iat: seconds}) and the older
// signed text: base64url("<username>,<unix seconds>") without padding, followed by the first 10
// characters of base64url(sha256(<that base64 text> + secret)). Pure: no I/O.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

export type TokenClaims = { username: string; issuedAtMs: number };

const JWT_HEADER = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9";

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The token's user and issue time when its signature holds; undefined otherwise. */
export function verifyMarzbanToken(token: string, secret: string): TokenClaims | undefined {
  if (token.length < 15 || token.length > 2048) return undefined;
  if (token.startsWith(`${JWT_HEADER}.`)) return verifyJwt(token, secret);
  return verifySigned(token, secret);
}

function verifyJwt(token: string, secret: string): TokenClaims | undefined {
  const parts = token.split(".");
  if (parts.length !== 3) return undefined;
  const [header, payload, signature] = parts as [string, string, string];
  const expected = createHmac("sha256", secret).update(`${header}.${payload}`).digest("base64url");
  if (!equal(signature, expected)) return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  const { sub, access, iat } = (claims ?? {}) as { sub?: unknown; access?: unknown; iat?: unknown };
  if (access !== "subscription" || typeof sub !== "string" || sub === "") return undefined;
  if (typeof iat !== "number" || !Number.isFinite(iat)) return undefined;
  return { username: sub, issuedAtMs: iat * 1000 };
}

function verifySigned(token: string, secret: string): TokenClaims | undefined {
  const text = token.slice(0, -10);
  const signature = token.slice(-10);
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  const expected = createHash("sha256")
    .update(`${text}${secret}`)
    .digest("base64")
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .slice(0, 10);
  if (!equal(signature, expected)) return undefined;
  const decoded = Buffer.from(text, "base64url").toString("utf8");
  const comma = decoded.lastIndexOf(",");
  if (comma <= 0) return undefined;
  const seconds = Number(decoded.slice(comma + 1));
  if (!Number.isInteger(seconds) || seconds < 0) return undefined;
  return { username: decoded.slice(0, comma), issuedAtMs: seconds * 1000 };
}

/** Test and fixture helpers: the two forms as Marzban issues them. */
export function signMarzbanJwt(username: string, issuedAtS: number, secret: string): string {
  const payload = Buffer.from(
    JSON.stringify({
      sub: username,
      access: "subscription",
      iat: issuedAtS,
      jti: `sub_${username}_${issuedAtS}`,
    }),
  ).toString("base64url");
  const signature = createHmac("sha256", secret).update(`${JWT_HEADER}.${payload}`).digest("base64url");
  return `${JWT_HEADER}.${payload}.${signature}`;
}

export function signMarzbanLegacy(username: string, issuedAtS: number, secret: string): string {
  const text = Buffer.from(`${username},${issuedAtS}`).toString("base64url");
  const signature = createHash("sha256")
    .update(`${text}${secret}`)
    .digest("base64")
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .slice(0, 10);
  return `${text}${signature}`;
}
