// The signed-in session: the bearer token lives in sessionStorage (gone with the tab, never a
// cookie, so no CSRF surface) and is sent by the API client on every call.
import { useSyncExternalStore } from "react";

const KEY = "portcullis.token";
const listeners = new Set<() => void>();
let expiredNotice = false;

function emit(): void {
  for (const listener of listeners) listener();
}

export const session = {
  token(): string | null {
    return sessionStorage.getItem(KEY);
  },
  signIn(token: string): void {
    expiredNotice = false;
    sessionStorage.setItem(KEY, token);
    emit();
  },
  signOut(): void {
    sessionStorage.removeItem(KEY);
    emit();
  },
  /** The API answered 401 to a signed-in call: the token expired or was revoked. */
  expire(): void {
    if (session.token() === null) return;
    expiredNotice = true;
    session.signOut();
  },
  wasExpired(): boolean {
    return expiredNotice;
  },
  subscribe(listener: () => void): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};

export function useToken(): string | null {
  return useSyncExternalStore(session.subscribe, session.token);
}
