// The signed-in shell (navigation, theme, language, sign-out) and the route table.
import {
  ActionIcon,
  AppShell,
  Burger,
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
import { api, unwrap } from "./api/client.ts";
import { session, useToken } from "./auth/session.ts";
import type { MessageKey } from "./i18n/en.ts";
import { LANGUAGES, type Language, useI18n } from "./i18n/i18n.tsx";
import { SignInPage } from "./pages/SignInPage.tsx";
import { UsersPage } from "./pages/UsersPage.tsx";
import { followLink, href, type Match, matchRoute, navigate, usePath } from "./router.tsx";
import { notifyError } from "./ui/errors.tsx";
import { MoonIcon, SunIcon } from "./ui/icons.tsx";
import { PageLoader } from "./ui/PageLoader.tsx";

// The users page is where operators land; every other page loads when first opened.
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
const ApiKeysPage = lazy(() => import("./pages/ApiKeysPage.tsx").then((m) => ({ default: m.ApiKeysPage })));

type Route = { pattern: string; render: (params: Match) => ReactNode };

const ROUTES: Route[] = [
  { pattern: "/users", render: () => <UsersPage /> },
  { pattern: "/users/:id", render: (p) => <UserPage id={p.id ?? ""} /> },
  { pattern: "/servers", render: () => <ServersPage /> },
  { pattern: "/servers/:id", render: (p) => <ServerPage id={p.id ?? ""} /> },
  { pattern: "/templates", render: () => <TemplatesPage /> },
  { pattern: "/templates/:id", render: (p) => <TemplatePage id={p.id ?? "new"} /> },
  { pattern: "/certificates", render: () => <CertificatesPage /> },
  { pattern: "/api-keys", render: () => <ApiKeysPage /> },
];

const NAV: { to: string; label: MessageKey }[] = [
  { to: "/users", label: "nav.users" },
  { to: "/servers", label: "nav.servers" },
  { to: "/templates", label: "nav.templates" },
  { to: "/certificates", label: "nav.certificates" },
  { to: "/api-keys", label: "nav.apiKeys" },
];

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

function Shell({ path, children }: { path: string; children: ReactNode }) {
  const [opened, { toggle, close }] = useDisclosure();
  const { t } = useI18n();
  const queryClient = useQueryClient();
  const signOut = async () => {
    // Revoke the token on the server too; sign out locally whatever it answers, but say so.
    await unwrap(api.POST("/api/auth/logout")).catch(notifyError);
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
          {NAV.map((item) => (
            <NavLink
              key={item.to}
              component="a"
              href={href(item.to)}
              label={t(item.label)}
              active={path === item.to || path.startsWith(`${item.to}/`)}
              onClick={(event) => {
                followLink(event, item.to);
                close();
              }}
            />
          ))}
        </AppShell.Section>
        <AppShell.Section>
          <NavLink component="button" label={t("shell.signOut")} onClick={signOut} />
        </AppShell.Section>
      </AppShell.Navbar>
      <AppShell.Main>
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
  useEffect(() => setDirection(dir), [dir, setDirection]);
  useEffect(() => {
    if (token !== null && (path === "/" || path === "/login")) navigate("/users", { replace: true });
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
