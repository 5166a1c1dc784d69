// A `node` server's agent on its page (docs/NODES.md): enrollment (the one-time join command to copy
// to the proxy host), what the agent reports about itself and its core, the core's last log lines
// (read through the agent, masked; live while shown), and the base document the agent writes the
// core's config from (JSON; the API's refusals listed with their path and line; reset to default).

import {
  Alert,
  Badge,
  Button,
  Card,
  Code,
  Group,
  ScrollArea,
  SimpleGrid,
  Stack,
  Switch,
  Text,
} from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useMemo, useState } from "react";
import { ApiError } from "../../api/client.ts";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import { nodesApi, useAgentStatus, useNodeBase, useNodeLog } from "../../api/nodes.ts";
import type { Server } from "../../api/types.ts";
import { useCan } from "../../auth/me.ts";
import { useI18n, useT } from "../../i18n/i18n.tsx";
import { locateError, locatePaths } from "../../json/locate.ts";
import { CodeField, jsonSyntax, type LocatedError } from "../../ui/CodeField.tsx";
import { ConfirmButton } from "../../ui/Confirm.tsx";
import { Copy } from "../../ui/Copy.tsx";
import { ErrorAlert } from "../../ui/errors.tsx";
import { formatDate, formatDuration } from "../../ui/format.ts";
import { Iso } from "../../ui/Num.tsx";
import { SectionHeader } from "../../ui/Scaffold.tsx";

function Fact({ label, children, testId }: { label: string; children: React.ReactNode; testId?: string }) {
  return (
    <div>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text fw={600} data-testid={testId}>
        {children}
      </Text>
    </div>
  );
}

function Enrollment({ server }: { server: Server }) {
  const { t, language } = useI18n();
  const enroll = useChange(() => nodesApi.enroll(server.id), { invalidates: [keys.servers.node(server.id)] });
  const made = enroll.data;
  return (
    <Stack gap="xs" data-testid="node-enrollment">
      <Group justify="space-between">
        <Text fw={600}>{t("node.enroll")}</Text>
        <Button size="xs" variant="default" loading={enroll.isPending} onClick={() => enroll.mutate()}>
          {made ? t("node.enrollAgain") : t("node.enrollMake")}
        </Button>
      </Group>
      <Text size="sm" c="dimmed">
        {t("node.enrollHint")}
      </Text>
      {made && (
        <Stack gap={4}>
          <Group gap="xs" wrap="nowrap" align="flex-start">
            <Code
              block
              style={{ flex: 1, wordBreak: "break-all", whiteSpace: "pre-wrap" }}
              data-testid="join-command"
            >
              {made.command}
            </Code>
            <Copy value={made.command} label={t("node.copyCommand")} />
          </Group>
          <Text size="sm" data-testid="join-expiry">
            {t("node.singleUse", { at: formatDate(made.expires_at, language) })}
          </Text>
          <Text size="xs" c="dimmed">
            {t("node.caFingerprint")} <Code>{made.ca_fingerprint}</Code>
          </Text>
        </Stack>
      )}
    </Stack>
  );
}

function AgentReport({ server }: { server: Server }) {
  const { t, language } = useI18n();
  const status = useAgentStatus(server.id, true);
  const report = status.data;
  return (
    <Stack gap="xs" data-testid="agent-report">
      <SectionHeader
        title={t("node.agent")}
        onRefresh={() => void status.refetch()}
        isRefreshing={status.isFetching}
      />
      {status.error && (
        <Alert color="red" data-testid="agent-unreachable" title={t("node.agent.unreachable")}>
          {status.error instanceof Error ? status.error.message : String(status.error)}
          <Text size="sm" mt={4}>
            {t("node.unreachableHint")}
          </Text>
        </Alert>
      )}
      {report && (
        <SimpleGrid cols={{ base: 2, sm: 4 }}>
          <Fact label={t("node.agentVersion")}>{report.agent_version}</Fact>
          <Fact label={t("node.agentUptime")}>
            <Iso>{formatDuration(report.agent_uptime_seconds)}</Iso>
          </Fact>
          <Fact label={t("home.core")} testId="agent-core">
            {`${report.core.flavor ?? "—"} ${report.core.version ?? ""}`.trim()}
          </Fact>
          <Fact label={t("node.coreState")}>
            <Badge
              variant="light"
              color={report.core.running ? "teal" : "red"}
              data-testid="core-state"
              data-state={report.core.running ? "running" : "stopped"}
            >
              {t(report.core.running ? "node.agent.running" : "node.agent.stopped")}
            </Badge>
          </Fact>
          <Fact label={t("stats.uptime")}>
            {report.core.uptime_seconds === null ? (
              "—"
            ) : (
              <Iso>{formatDuration(report.core.uptime_seconds)}</Iso>
            )}
          </Fact>
          <Fact label={t("home.restarts")} testId="core-restarts">
            {report.core.restarts}
          </Fact>
          <Fact label={t("node.desired")}>
            {t("node.desiredCounts", { inbounds: report.desired.inbounds, users: report.desired.users })}
          </Fact>
          <Fact label={t("node.certificateUntil")}>{formatDate(report.certificate.not_after, language)}</Fact>
        </SimpleGrid>
      )}
      {report?.core.last_exit && (
        <Text size="sm" c="var(--mantine-color-red-light-color)">
          {t("node.lastExit")}: {report.core.last_exit}
        </Text>
      )}
    </Stack>
  );
}

function CoreLog({ server }: { server: Server }) {
  const { t, language } = useI18n();
  const [isLive, setLive] = useState(true);
  const log = useNodeLog(server.id, { enabled: true, live: isLive });
  return (
    <Stack gap="xs">
      <SectionHeader title={t("node.log")} onRefresh={() => void log.refetch()} isRefreshing={log.isFetching}>
        <Switch
          size="sm"
          label={t("node.logLive")}
          checked={isLive}
          onChange={(e) => setLive(e.currentTarget.checked)}
        />
      </SectionHeader>
      {log.error && <ErrorAlert error={log.error} />}
      {log.data && (
        <>
          <Text size="xs" c="dimmed" data-testid="node-log-at">
            {t("node.logAt", {
              count: log.data.lines.length,
              at: formatDate(log.data.collected_at, language),
            })}
          </Text>
          <ScrollArea.Autosize mah={360} type="auto">
            {/* The lines are the core's (left to right whatever the page's direction). */}
            <Code block dir="ltr" data-testid="node-log" style={{ whiteSpace: "pre" }}>
              {log.data.lines.length === 0 ? t("node.logEmpty") : log.data.lines.join("\n")}
            </Code>
          </ScrollArea.Autosize>
        </>
      )}
    </Stack>
  );
}

/** The API's refusals of the document sent, each at its line in the text (while it is unchanged). */
function locate(
  error: unknown,
  sent: string | undefined,
  text: string,
): { located: LocatedError[]; other: boolean } {
  if (sent !== text) return { located: [], other: false };
  if (!(error instanceof ApiError)) return { located: [], other: error instanceof Error };
  const positions = locatePaths(text);
  const located = (error.problem.errors ?? []).map(({ path, message }) => {
    const inDocument = path.replace(/^body\.document\.?/, "");
    return {
      path: inDocument === "" ? "document" : inDocument,
      message,
      at: locateError(positions, inDocument),
    };
  });
  return { located, other: located.length === 0 };
}

function BaseDocument({ server }: { server: Server }) {
  const t = useT();
  const canWrite = useCan()("servers.write");
  const queryClient = useQueryClient();
  const base = useNodeBase(server.id);
  const stored = useMemo(() => (base.data ? JSON.stringify(base.data.document, null, 2) : ""), [base.data]);
  const [text, setText] = useState(stored);
  useEffect(() => setText(stored), [stored]);
  const onSuccess = (saved: { document: unknown; is_default: boolean }) => {
    queryClient.setQueryData(keys.servers.nodeBase(server.id), saved);
  };
  const save = useChange(
    (sent: string) => nodesApi.setBase(server.id, JSON.parse(sent) as Record<string, unknown>),
    {
      done: t("common.saved"),
      onSuccess,
      quiet: true,
    },
  );
  const reset = useChange(() => nodesApi.setBase(server.id, null), { done: t("node.baseReset"), onSuccess });
  const syntax = jsonSyntax(t, text);
  const { located, other } = locate(save.error, save.variables, text);
  return (
    <Stack gap="xs" data-testid="node-base">
      <Group justify="space-between">
        <Group gap="xs">
          <Text fw={600}>{t("node.base")}</Text>
          {base.data && (
            <Badge variant="light" color={base.data.is_default ? "gray" : "blue"} data-testid="base-kind">
              {t(base.data.is_default ? "node.baseDefault" : "node.baseCustom")}
            </Badge>
          )}
        </Group>
      </Group>
      {base.error && <ErrorAlert error={base.error} />}
      {base.data && (
        <>
          <CodeField
            label={t("node.baseDocument")}
            description={t("node.baseHint")}
            value={text}
            onChange={setText}
            readOnly={!canWrite}
            syntaxError={syntax}
            errors={located}
            testId="node-base-document"
          />
          {save.isError && other && <ErrorAlert error={save.error} />}
          {save.isError && !other && save.error instanceof ApiError && (
            <Text size="sm" c="var(--mantine-color-red-light-color)" role="alert" data-testid="base-refused">
              {save.error.problem.detail}
            </Text>
          )}
          {canWrite && (
            <Group justify="flex-end">
              <ConfirmButton size="xs" variant="default" change={reset} question={t("node.baseResetConfirm")}>
                {t("node.baseResetButton")}
              </ConfirmButton>
              <Button
                size="xs"
                disabled={syntax !== undefined || text === stored}
                loading={save.isPending}
                onClick={() => save.mutate(text)}
              >
                {t("common.save")}
              </Button>
            </Group>
          )}
        </>
      )}
    </Stack>
  );
}

export function NodeSection({ server }: { server: Server }) {
  const t = useT();
  const canWrite = useCan()("servers.write");
  if (server.connection !== "node") return null;
  return (
    <Card withBorder data-testid="node-section">
      <Stack>
        <Text size="sm" c="dimmed">
          {t("node.intro")}
        </Text>
        {canWrite && <Enrollment server={server} />}
        <AgentReport server={server} />
        <CoreLog server={server} />
        <BaseDocument server={server} />
      </Stack>
    </Card>
  );
}
