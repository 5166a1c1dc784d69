// One way to change something: call the API, then invalidate what the change touched (keys from
// keys.ts), say it was done or show the API's problem. Pages pass what differs (a field-error
// target, a success message, their own follow-up).
import { type QueryKey, type UseMutationResult, useMutation, useQueryClient } from "@tanstack/react-query";
import { navigate } from "../router.tsx";
import { notifyDone, notifyError } from "../ui/errors.tsx";

export type ChangeOptions<T, V> = {
  /** Keys whose queries are stale after the change (every prefix match is refetched). */
  invalidates?: readonly QueryKey[] | ((result: T, variables: V) => readonly QueryKey[]);
  /** A query of something the change deleted: dropped, not refetched (it would be a 404). */
  forgets?: QueryKey;
  /** Shown as a success toast. */
  done?: string | ((result: T) => string);
  onSuccess?: (result: T, variables: V) => void | Promise<void>;
  /** Called before the error toast, e.g. to put field errors on a form. */
  onError?: (error: unknown) => void;
  /** Leave the error to the caller (no toast). */
  quiet?: boolean;
};

export function useChange<T, V = void>(
  call: (variables: V) => Promise<T>,
  options: ChangeOptions<T, V> = {},
): UseMutationResult<T, Error, V> {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: call,
    onSuccess: async (result, variables) => {
      if (options.forgets !== undefined) queryClient.removeQueries({ queryKey: options.forgets });
      const stale =
        typeof options.invalidates === "function"
          ? options.invalidates(result, variables)
          : (options.invalidates ?? []);
      await Promise.all(stale.map((queryKey) => queryClient.invalidateQueries({ queryKey })));
      if (options.done !== undefined)
        notifyDone(typeof options.done === "function" ? options.done(result) : options.done);
      await options.onSuccess?.(result, variables);
    },
    onError: (error) => {
      options.onError?.(error);
      if (!options.quiet) notifyError(error);
    },
  });
}

/**
 * Deleting what a page shows: forget its query, refresh its family's lists, go back to the list
 * (`/users` for `keys.users`).
 */
export function useRemoval<T>(
  call: () => Promise<T>,
  family: { all: readonly [string]; one: (id: string) => QueryKey },
  id: string,
  done?: string,
): UseMutationResult<T, Error, void> {
  return useChange(call, {
    forgets: family.one(id),
    invalidates: [family.all],
    done,
    onSuccess: () => navigate(`/${family.all[0]}`),
  });
}
