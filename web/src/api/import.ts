// Importing another panel (owners; issue 51): the upload (raw bytes, not JSON), the job's start, and
// the latest job, followed while it runs. docs/API.md "Import from another panel".
import { useQuery } from "@tanstack/react-query";
import { session } from "../auth/session.ts";
import { ApiError, api, unwrap } from "./client.ts";
import { keys } from "./keys.ts";
import type { paths } from "./schema";

export type ImportJob = paths["/api/import/job"]["get"]["responses"]["200"]["content"]["application/json"];
export type ImportStart = NonNullable<
  paths["/api/import/jobs"]["post"]["requestBody"]
>["content"]["application/json"];
export type ImportReport = NonNullable<ImportJob["report"]>;

/** The latest job (null before any), polled every ½ s while it runs or while `watch` is set. */
export function useImportJob(watch: boolean) {
  return useQuery({
    queryKey: keys.importJob,
    queryFn: async () => {
      try {
        return await unwrap(api.GET("/api/import/job"));
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return null;
        throw error;
      }
    },
    refetchInterval: (query) => (watch || query.state.data?.state === "running" ? 500 : false),
  });
}

export const importApi = {
  /** POST /api/import/uploads with the file as application/octet-stream → the upload's id. */
  async upload(file: File): Promise<string> {
    let response: Response;
    try {
      response = await fetch(`${window.location.origin}/api/import/uploads`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${session.token() ?? ""}`,
          "content-type": "application/octet-stream",
        },
        body: file,
      });
    } catch (error) {
      throw new ApiError({
        type: "about:blank",
        title: "Network error",
        status: 0,
        code: "network_error",
        detail: `the service did not answer: ${error instanceof Error ? error.message : String(error)}`,
      });
    }
    const body = (await response.json().catch(() => ({}))) as { id?: string; code?: string; detail?: string };
    if (!response.ok || body.id === undefined) {
      throw new ApiError({
        type: "about:blank",
        title: response.statusText,
        status: response.status,
        code: body.code ?? "http_error",
        detail: body.detail ?? `HTTP ${response.status} ${response.statusText}`,
      });
    }
    return body.id;
  },
  start: (body: ImportStart) => unwrap(api.POST("/api/import/jobs", { body })),
};
