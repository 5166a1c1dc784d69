import type { Messages } from "./i18n.tsx";

export const zh: Messages = { ...(await import("./en.ts")).en };
