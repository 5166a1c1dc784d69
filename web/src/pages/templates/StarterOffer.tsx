// A fresh install has no templates: offer the shipped starters (POST /api/templates/starters) where
// a template would be picked or listed, so the first inbound is two clicks away. A role that may not
// write templates is told who can.
import { Button, Card, Stack, Text, Title } from "@mantine/core";
import { templatesApi } from "../../api/fleet.ts";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import { useCan } from "../../auth/me.ts";
import { useT } from "../../i18n/i18n.tsx";

export function StarterOffer({ compact = false }: { compact?: boolean }) {
  const t = useT();
  const canWrite = useCan()("templates.write");
  const install = useChange(templatesApi.installStarters, {
    invalidates: [keys.templates.all],
    done: (outcomes) =>
      t("templates.startersInstalled", { count: outcomes.filter((o) => o.status === "installed").length }),
  });
  return (
    <Card withBorder p={compact ? "sm" : "lg"} data-testid="starter-offer">
      <Stack gap="xs" align={compact ? "stretch" : "center"} ta={compact ? undefined : "center"}>
        {!compact && <Title order={3}>{t("templates.emptyTitle")}</Title>}
        <Text size="sm" c="dimmed">
          {canWrite ? t("templates.startersHint") : t("templates.startersAsk")}
        </Text>
        {canWrite && (
          <Button
            onClick={() => install.mutate()}
            loading={install.isPending}
            data-testid="install-starters"
            size={compact ? "xs" : "sm"}
          >
            {t("templates.installStarters")}
          </Button>
        )}
      </Stack>
    </Card>
  );
}
