// Transport names as operators write them in streamSettings.network, in one place for the inbound
// builder, template facts and share links: the five Portcullis manages, and the aliases Xray accepts.

export const NETWORKS = ["tcp", "ws", "grpc", "httpupgrade", "xhttp"] as const;
export type Network = (typeof NETWORKS)[number];

/** Xray's other names: `raw` is the new name of tcp, `websocket` the long one of ws, `splithttp` the old one of xhttp. */
const ALIASES = new Map<string, Network>([
  ["raw", "tcp"],
  ["websocket", "ws"],
  ["splithttp", "xhttp"],
]);

/** The network `text` names (any case, aliases included), or undefined for one we do not manage. */
export function normaliseNetwork(text: string): Network | undefined {
  const lower = text.toLowerCase();
  return (NETWORKS as readonly string[]).includes(lower) ? (lower as Network) : ALIASES.get(lower);
}
