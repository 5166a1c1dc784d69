import type { Messages } from "./i18n.tsx";

export const ru: Messages = { ...(await import("./en.ts")).en };
