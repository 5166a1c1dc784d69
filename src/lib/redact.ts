// Cutting known secrets (tokens, passwords, keys) out of text that leaves the process: error
// messages, logs, API answers. One rule for every caller, so a secret is cut everywhere or nowhere.

/** Shorter "secrets" are left: cutting every "ab" would shred the text and reveal the secret anyway. */
export const MIN_REDACTED_LENGTH = 4;

export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= MIN_REDACTED_LENGTH) out = out.split(secret).join("[redacted]");
  }
  return out;
}
