// "Audit log": the entries that name an object (a user, a server), for owners.
import { Button } from "@mantine/core";
import { useT } from "../i18n/i18n.tsx";
import { followLink, href } from "../router.tsx";

export function AuditLink({ target, size = "xs" }: { target: string; size?: "xs" | "sm" }) {
  const t = useT();
  const to = `/audit?target=${target}`;
  return (
    <Button
      size={size}
      variant="default"
      component="a"
      href={href(to)}
      onClick={(e) => followLink(e, to)}
      data-testid="audit-link"
    >
      {t("nav.audit")}
    </Button>
  );
}
