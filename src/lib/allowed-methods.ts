// A request the router matched by path but not by method is a 405 with `Allow` (RFC 9110 §15.5.6),
// not a 404: the caller learns that the path is right and which methods it takes. The router is
// asked with the request's own target, so it decodes and strips it exactly as it did when routing.

/** What the not-found handler needs of Fastify: its router lookup, by method and target. */
export type RouteFinder = (route: { method: string; url: string }) => unknown;

/** The methods, of those registered anywhere, that have a route for this target; sorted. */
export function allowedMethods(findRoute: RouteFinder, methods: Iterable<string>, url: string): string[] {
  const allowed = new Set<string>();
  for (const method of methods) if (findRoute({ method, url }) !== null) allowed.add(method);
  return [...allowed].sort();
}
