import type { Messages } from "./i18n.tsx";

export const fa: Messages = { ...(await import("./en.ts")).en };
