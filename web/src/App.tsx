// The signed-in shell (navigation, theme, language, sign-out) and the route table.

import {
  ActionIcon,
  AppShell,
  Burger,
  Divider,
  Group,
  NavLink,
  ScrollArea,
  Select,
  Text,
  Title,
  Tooltip,
  useComputedColorScheme,
  useDirection,
  useMantineColorScheme,
} from "@mantine/core";
import { useDisclosure } from "@mantine/hooks";
import { useQueryClient } from "@tanstack/react-query";
import { lazy, type ReactNode, Suspense, useEffect } from "react";
import { accountApi } from "./api/admin.ts";
import { type Permission, useCan, useMe } from "./auth/me.ts";
import { session, useToken } from "./auth/session.ts";
import type { MessageKey } from "./i18n/en.ts";
import { LANGUAGES, type Language, useI18n } from "./i18n/i18n.tsx";
import { HomePage } from "./pages/HomePage.tsx";
import { SignInPage } from "./pages/SignInPage.tsx";
import { UsersPage } from "./pages/UsersPage.tsx";
import { followLink, href, type Match, matchRoute, navigate, usePath } from "./router.tsx";
import { ErrorAlert, notifyError } from "./ui/errors.tsx";
import { MoonIcon, SunIcon } from "./ui/icons.tsx";
import { PageLoader } from "./ui/PageLoader.tsx";
import { RoleBadge } from "./ui/RoleBadge.tsx";

// The overview (where operators land) and the users page (where a role that may not read servers
// lands) are in the first bundle; every other page loads when first opened.
const UserPage = lazy(() => import("./pages/UserPage.tsx").then((m) => ({ default: m.UserPage })));
const ServersPage = lazy(() => import("./pages/ServersPage.tsx").then((m) => ({ default: m.ServersPage })));
const ServerPage = lazy(() => import("./pages/ServerPage.tsx").then((m) => ({ default: m.ServerPage })));
const TemplatesPage = lazy(() =>
  import("./pages/TemplatesPage.tsx").then((m) => ({ default: m.TemplatesPage })),
);
const TemplatePage = lazy(() =>
  import("./pages/TemplatePage.tsx").then((m) => ({ default: m.TemplatePage })),
);
const CertificatesPage = lazy(() =>
  import("./pages/CertificatesPage.tsx").then((m) => ({ default: m.CertificatesPage })),
);
const AccountPage = lazy(() => import("./pages/AccountPage.tsx").then((m) => ({ default: m.AccountPage })));
const AdminsPage = lazy(() => import("./pages/AdminsPage.tsx").then((m) => ({ default: m.AdminsPage })));
const AuditPage = lazy(() => import("./pages/AuditPage.tsx").then((m) => ({ default: m.AuditPage })));
const WebhooksPage = lazy(() =>
  import("./pages/WebhooksPage.tsx").then((m) => ({ default: m.WebhooksPage })),
);
const SubscriptionSettingsPage = lazy(() =>
  import("./pages/SubscriptionSettingsPage.tsx").then((m) => ({ default: m.SubscriptionSettingsPage })),
);
const GroupsPage = lazy(() => import("./pages/GroupsPage.tsx").then((m) => ({ default: m.GroupsPage })));
const GroupPage = lazy(() => import("./pages/GroupPage.tsx").then((m) => ({ default: m.GroupPage })));
const PlansPage = lazy(() => import("./pages/PlansPage.tsx").then((m) => ({ default: m.PlansPage })));
const ImportPage = lazy(() => import("./pages/ImportPage.tsx").then((m) => ({ default: m.ImportPage })));
const WebhookPage = lazy(() => import("./pages/WebhookPage.tsx").then((m) => ({ default: m.WebhookPage })));

type Route = { pattern: string; render: (params: Match) => ReactNode };

const ROUTES: Route[] = [
  { pattern: "/", render: () => <Home /> },
  { pattern: "/users", render: () => <UsersPage /> },
  { pattern: "/users/:id", render: (p) => <UserPage id={p.id ?? ""} /> },
  { pattern: "/groups", render: () => <GroupsPage /> },
  { pattern: "/groups/:id", render: (p) => <GroupPage id={p.id ?? ""} /> },
  { pattern: "/plans", render: () => <PlansPage /> },
  { pattern: "/servers", render: () => <ServersPage /> },
  { pattern: "/servers/:id", render: (p) => <ServerPage id={p.id ?? ""} /> },
  { pattern: "/templates", render: () => <TemplatesPage /> },
  { pattern: "/templates/:id", render: (p) => <TemplatePage id={p.id ?? "new"} /> },
  { pattern: "/certificates", render: () => <CertificatesPage /> },
  { pattern: "/account", render: () => <AccountPage tab="security" /> },
  { pattern: "/account/api-keys", render: () => <AccountPage tab="api-keys" /> },
  { pattern: "/account/telegram", render: () => <AccountPage tab="telegram" /> },
  { pattern: "/api-keys", render: () => <Redirect to="/account/api-keys" /> },
  { pattern: "/admins", render: () => <AdminsPage /> },
  { pattern: "/audit", render: () => <AuditPage /> },
  { pattern: "/webhooks", render: () => <WebhooksPage /> },
  { pattern: "/webhooks/:id", render: (p) => <WebhookPage id={p.id ?? ""} /> },
  { pattern: "/settings/subscription", render: () => <SubscriptionSettingsPage /> },
  { pattern: "/import", render: () => <ImportPage /> },
];

type NavItem = { to: string; label: MessageKey; needs: Permission };

/** What the caller's role may open; the owners' pages and the settings in a section of their own. */
const NAV: NavItem[] = [
  { to: "/", label: "nav.home", needs: "servers.read" },
  { to: "/users", label: "nav.users", needs: "users.read" },
  { to: "/groups", label: "nav.groups", needs: "inbounds.read" },
  { to: "/plans", label: "nav.plans", needs: "users.read" },
  { to: "/servers", label: "nav.servers", needs: "servers.read" },
  { to: "/templates", label: "nav.templates", needs: "templates.read" },
  { to: "/certificates", label: "nav.certificates", needs: "certificates.read" },
];
const OWNER_NAV: NavItem[] = [
  { to: "/admins", label: "nav.admins", needs: "admins.manage" },
  { to: "/audit", label: "nav.audit", needs: "audit.read" },
  { to: "/webhooks", label: "nav.webhooks", needs: "settings.write" },
  { to: "/settings/subscription", label: "nav.subscriptionSettings", needs: "settings.read" },
  { to: "/import", label: "nav.import", needs: "admins.manage" },
];

function Redirect({ to }: { to: string }) {
  useEffect(() => navigate(to, { replace: true }), [to]);
  return null;
}

/** Where signing in lands: the fleet for a role that reads servers, the users for the others. */
function Home() {
  const { me } = useMe();
  const can = useCan();
  if (me === undefined) return <PageLoader />;
  return can("servers.read") ? <HomePage /> : <Redirect to="/users" />;
}

function ThemeToggle() {
  const { setColorScheme } = useMantineColorScheme();
  const scheme = useComputedColorScheme("light");
  const { t } = useI18n();
  const label = scheme === "dark" ? t("shell.lightTheme") : t("shell.darkTheme");
  return (
    <Tooltip label={label}>
      <ActionIcon
        variant="default"
        size="lg"
        aria-label={label}
        onClick={() => setColorScheme(scheme === "dark" ? "light" : "dark")}
      >
        {scheme === "dark" ? <SunIcon /> : <MoonIcon />}
      </ActionIcon>
    </Tooltip>
  );
}

function LanguageSelect() {
  const { language, setLanguage, t } = useI18n();
  return (
    <Select
      aria-label={t("shell.language")}
      data={LANGUAGES}
      value={language}
      onChange={(value) => value !== null && setLanguage(value as Language)}
      allowDeselect={false}
      w={120}
      size="sm"
    />
  );
}

const ACCOUNT: NavItem = { to: "/account", label: "nav.account", needs: "self" };

function NavLinks({ items, path, onFollow }: { items: NavItem[]; path: string; onFollow: () => void }) {
  const { t } = useI18n();
  return items.map((item) => (
    <NavLink
      key={item.to}
      component="a"
      href={href(item.to)}
      label={t(item.label)}
      active={path === item.to || (item.to !== "/" && path.startsWith(`${item.to}/`))}
      onClick={(event) => {
        followLink(event, item.to);
        onFollow();
      }}
    />
  ));
}

function Shell({ path, children }: { path: string; children: ReactNode }) {
  const [opened, { toggle, close }] = useDisclosure();
  const { t } = useI18n();
  const queryClient = useQueryClient();
  const { me, error: meError } = useMe();
  const can = useCan();
  const signOut = async () => {
    // Revoke the token on the server too; sign out locally whatever it answers, but say so.
    await accountApi.signOut().catch(notifyError);
    session.signOut();
    queryClient.clear();
  };
  return (
    <AppShell
      header={{ height: 56 }}
      navbar={{ width: 220, breakpoint: "sm", collapsed: { mobile: !opened } }}
      padding="md"
    >
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label={t("shell.menu")} />
            <Title order={1} size="h3">
              Portcullis
            </Title>
          </Group>
          <Group gap="xs" wrap="nowrap">
            <LanguageSelect />
            <ThemeToggle />
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label={t("shell.navigation")}>
        <AppShell.Section grow component={ScrollArea}>
          <NavLinks items={NAV.filter((item) => can(item.needs))} path={path} onFollow={close} />
          {OWNER_NAV.some((item) => can(item.needs)) && (
            <>
              <Divider my="xs" label={t("nav.administration")} labelPosition="left" />
              <NavLinks items={OWNER_NAV.filter((item) => can(item.needs))} path={path} onFollow={close} />
            </>
          )}
        </AppShell.Section>
        <AppShell.Section>
          <Divider mb="xs" />
          {me !== undefined && (
            <Group gap="xs" px="sm" pb={4} wrap="nowrap" data-testid="signed-in-as">
              <Text size="sm" truncate>
                {me.username}
              </Text>
              <RoleBadge role={me.role} />
            </Group>
          )}
          <NavLinks items={[ACCOUNT]} path={path} onFollow={close} />
          <NavLink component="button" label={t("shell.signOut")} onClick={signOut} />
        </AppShell.Section>
      </AppShell.Navbar>
      <AppShell.Main>
        {meError !== null && meError !== undefined && <ErrorAlert error={meError} />}
        <Suspense fallback={<PageLoader />}>{children}</Suspense>
      </AppShell.Main>
    </AppShell>
  );
}

function NotFound() {
  const { t } = useI18n();
  return <Text>{t("shell.notFound")}</Text>;
}

export function App() {
  const token = useToken();
  const path = usePath();
  const { dir } = useI18n();
  const { setDirection } = useDirection();
  const queryClient = useQueryClient();
  useEffect(() => setDirection(dir), [dir, setDirection]);
  // Signed out (or the session expired): nothing of the last admin's stays cached for the next one.
  useEffect(() => {
    if (token === null) queryClient.clear();
  }, [token, queryClient]);
  useEffect(() => {
    if (token !== null && path === "/login") navigate("/", { replace: true });
  }, [token, path]);

  if (token === null) return <SignInPage />;
  for (const route of ROUTES) {
    const params = matchRoute(route.pattern, path);
    if (params !== undefined) return <Shell path={path}>{route.render(params)}</Shell>;
  }
  return (
    <Shell path={path}>
      <NotFound />
    </Shell>
  );
}
