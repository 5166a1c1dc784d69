// Templates and certificates: what inbounds are built from. Queries from keys.ts, and the calls.
import { useQuery } from "@tanstack/react-query";
import { api, byId, unwrap } from "./client.ts";
import { keys } from "./keys.ts";
import type {
  Certificate,
  CertificateInput,
  CertificateUpdate,
  TemplateInput,
  TemplateUpdate,
} from "./types.ts";

export function useTemplates() {
  return useQuery({ queryKey: keys.templates.list(), queryFn: () => unwrap(api.GET("/api/templates")) });
}

export function useTemplate(id: string, enabled = true) {
  return useQuery({
    queryKey: keys.templates.one(id),
    queryFn: () => unwrap(api.GET("/api/templates/{id}", byId(id))),
    enabled,
  });
}

export const templatesApi = {
  create: (body: TemplateInput) => unwrap(api.POST("/api/templates", { body })),
  update: (id: string, body: TemplateUpdate) => unwrap(api.PUT("/api/templates/{id}", { ...byId(id), body })),
  remove: (id: string) => unwrap(api.DELETE("/api/templates/{id}", byId(id))),
  /** The shipped starters whose names are free (POST /api/templates/starters). */
  installStarters: () => unwrap(api.POST("/api/templates/starters")),
};

/** `followPending`: ask again every 3 s while a public-CA issuance runs in the background. */
export function useCertificates(options: { followPending?: boolean } = {}) {
  return useQuery({
    queryKey: keys.certificates.all,
    queryFn: () => unwrap(api.GET("/api/certificates")),
    refetchInterval: (query) =>
      options.followPending && query.state.data?.some((c: Certificate) => c.status === "pending")
        ? 3_000
        : false,
  });
}

export const certificatesApi = {
  create: (body: CertificateInput) => unwrap(api.POST("/api/certificates", { body })),
  update: (id: string, body: CertificateUpdate) =>
    unwrap(api.PUT("/api/certificates/{id}", { ...byId(id), body })),
  renew: (id: string) => unwrap(api.POST("/api/certificates/{id}/renew", byId(id))),
  remove: (id: string) => unwrap(api.DELETE("/api/certificates/{id}", byId(id))),
};
