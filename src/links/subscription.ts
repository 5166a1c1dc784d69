// The body of GET /sub/{user_id}: what every client family decodes (share-links.md §5).
// Standard base64 with padding, because mihomo reads only the standard alphabet.

/** Sent when a user has no configurations: clients skip `#` lines, and the body still decodes. */
export const EMPTY_SUBSCRIPTION_LINE = "# no configurations";

export function encodeSubscription(links: readonly string[]): string {
  for (const link of links) {
    if (/[\r\n]/.test(link)) throw new Error("a share link must be a single line");
  }
  const body = links.length === 0 ? EMPTY_SUBSCRIPTION_LINE : links.join("\n");
  return Buffer.from(body, "utf8").toString("base64");
}
