// The signed-in admin's own account, for every role: password, two-factor sign-in, API keys, Telegram
// notifications. Each tab has its own address (/account, /account/api-keys, /account/telegram).
import { Group, Stack, Tabs, Text, Title } from "@mantine/core";
import { useMe } from "../auth/me.ts";
import { useT } from "../i18n/i18n.tsx";
import { navigate } from "../router.tsx";
import { RoleBadge } from "../ui/RoleBadge.tsx";
import { ApiKeys } from "./account/ApiKeys.tsx";
import { ChangePassword } from "./account/ChangePassword.tsx";
import { Telegram } from "./account/Telegram.tsx";
import { TwoFactor } from "./account/TwoFactor.tsx";

export type AccountTab = "security" | "api-keys" | "telegram";
const PATHS: Record<AccountTab, string> = {
  security: "/account",
  "api-keys": "/account/api-keys",
  telegram: "/account/telegram",
};

export function AccountPage({ tab }: { tab: AccountTab }) {
  const t = useT();
  const { me } = useMe();
  return (
    <Stack>
      <div>
        <Title order={2}>{t("account.title")}</Title>
        {me !== undefined && (
          <Group gap="xs">
            <Text size="sm" c="dimmed">
              {me.username}
            </Text>
            <RoleBadge role={me.role} />
            {me.role !== me.admin_role && (
              <Text size="xs" c="dimmed">
                {t("account.keyNarrowed", { role: t(`role.${me.admin_role}`) })}
              </Text>
            )}
          </Group>
        )}
      </div>
      <Tabs value={tab} onChange={(value) => value !== null && navigate(PATHS[value as AccountTab])}>
        <Tabs.List>
          <Tabs.Tab value="security">{t("account.security")}</Tabs.Tab>
          <Tabs.Tab value="api-keys">{t("nav.apiKeys")}</Tabs.Tab>
          <Tabs.Tab value="telegram">{t("account.telegram")}</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="security" pt="md">
          {tab === "security" && (
            <Stack>
              <ChangePassword />
              <TwoFactor />
            </Stack>
          )}
        </Tabs.Panel>
        <Tabs.Panel value="api-keys" pt="md">
          {tab === "api-keys" && <ApiKeys />}
        </Tabs.Panel>
        <Tabs.Panel value="telegram" pt="md">
          {tab === "telegram" && <Telegram />}
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}
