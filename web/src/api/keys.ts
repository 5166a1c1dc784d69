// Every query key of the dashboard, from one factory: a resource's keys nest under its root, so a
// mutation invalidates `keys.users.all` (every list, page, search and user) or one user precisely,
// and no page spells a key by hand.
export const keys = {
  me: (token?: string | null) => (token === undefined ? (["me"] as const) : (["me", token] as const)),
  users: {
    all: ["users"] as const,
    lists: () => ["users", "list"] as const,
    page: (query: object) => ["users", "list", "page", query] as const,
    search: (q: string) => ["users", "list", "search", q] as const,
    one: (id: string) => ["users", "one", id] as const,
    access: (id: string) => ["users", "one", id, "access"] as const,
    usage: (id: string) => ["users", "one", id, "usage"] as const,
    devices: (id: string) => ["users", "one", id, "devices"] as const,
    fairUse: (id: string) => ["users", "one", id, "fair-use"] as const,
  },
  /** Every user's grants (a bulk grant changes many). */
  allAccess: ["users", "one"] as const,
  servers: {
    all: ["servers"] as const,
    list: () => ["servers", "list"] as const,
    one: (id: string) => ["servers", "one", id] as const,
    stats: (id: string) => ["servers", "one", id, "stats"] as const,
    usage: (id: string) => ["servers", "one", id, "usage"] as const,
    inbounds: (id: string) => ["servers", "one", id, "inbounds"] as const,
    hosts: (id: string, inboundId: string) => ["servers", "one", id, "inbounds", inboundId, "hosts"] as const,
    node: (id: string) => ["servers", "one", id, "node"] as const,
    nodeLog: (id: string) => ["servers", "one", id, "node", "log"] as const,
    nodeBase: (id: string) => ["servers", "one", id, "node", "base"] as const,
  },
  /** The home page: the fleet's overview and its traffic (under servers: a server change refreshes it). */
  overview: ["servers", "overview"] as const,
  fleetUsage: (days: number) => ["servers", "fleet-usage", days] as const,
  templates: {
    all: ["templates"] as const,
    list: () => ["templates", "list"] as const,
    one: (id: string) => ["templates", "one", id] as const,
  },
  certificates: { all: ["certificates"] as const },
  groups: {
    all: ["groups"] as const,
    list: () => ["groups", "list"] as const,
    one: (id: string) => ["groups", "one", id] as const,
    members: (id: string, after: string) => ["groups", "one", id, "members", after] as const,
  },
  plans: {
    all: ["plans"] as const,
    list: () => ["plans", "list"] as const,
  },
  admins: { all: ["admins"] as const },
  apiKeys: { all: ["api-keys"] as const },
  audit: (query: object) => ["audit", query] as const,
  importJob: ["import", "job"] as const,
  webhooks: {
    all: ["webhooks"] as const,
    one: (id: string) => ["webhooks", "one", id] as const,
    deliveries: (id: string) => ["webhooks", "one", id, "deliveries"] as const,
  },
  telegram: {
    all: ["telegram"] as const,
    deliveries: () => ["telegram", "deliveries"] as const,
  },
  subscriptionSettings: ["subscription-settings"] as const,
} as const;
