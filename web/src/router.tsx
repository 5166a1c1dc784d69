// A small history router: the dashboard has a handful of pages, so a route table and a Link are all
// it needs. Paths are relative to the mount point the service writes into <base href>.
import { Anchor, type AnchorProps } from "@mantine/core";
import { type MouseEvent, type ReactNode, useSyncExternalStore } from "react";

export const mountPath = new URL(document.baseURI).pathname.replace(/\/$/, "");
const listeners = new Set<() => void>();

function currentPath(): string {
  const path = window.location.pathname;
  const inside = path.startsWith(mountPath) ? path.slice(mountPath.length) : path;
  return inside === "" ? "/" : inside;
}

window.addEventListener("popstate", () => {
  for (const listener of listeners) listener();
});

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const url = mountPath + to;
  if (options.replace === true) window.history.replaceState(null, "", url);
  else window.history.pushState(null, "", url);
  window.scrollTo(0, 0);
  for (const listener of listeners) listener();
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The current path inside the mount point; re-renders on navigate() and back/forward. */
export function usePath(): string {
  useSyncExternalStore(subscribe, () => window.location.pathname);
  return currentPath();
}

export function href(to: string): string {
  return mountPath + to;
}

/** onClick for an <a href={href(to)}>: client-side navigation, but new tabs and modifiers still work. */
export function followLink(event: MouseEvent<HTMLElement>, to: string): void {
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  event.preventDefault();
  navigate(to);
}

export type Match = Record<string, string>;

/** "/users/:id" against "/users/42" → { id: "42" }; undefined when it does not match. */
export function matchRoute(pattern: string, path: string): Match | undefined {
  const want = pattern.split("/").filter(Boolean);
  const have = path.split("/").filter(Boolean);
  if (want.length !== have.length) return undefined;
  const params: Match = {};
  for (const [i, part] of want.entries()) {
    const value = have[i] ?? "";
    if (part.startsWith(":")) params[part.slice(1)] = decodeURIComponent(value);
    else if (part !== value) return undefined;
  }
  return params;
}

/** An in-app link: a real `<a href>` (new tab, copy address) that the router follows on a plain click. */
export function Link({ to, ...props }: { to: string } & Omit<AnchorProps, "href"> & { children: ReactNode }) {
  return <Anchor href={href(to)} onClick={(e) => followLink(e, to)} {...props} />;
}
