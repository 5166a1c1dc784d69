// Import from another panel (owners; issue 51): choose Marzban/PasarGuard or 3x-ui, upload its
// SQLite file or give its database URL, pick the server that takes over its inbounds, run the dry
// run and read its report, then import with a progress bar and the final report (docs/MIGRATION.md).

import {
  Alert,
  Button,
  FileInput,
  Group,
  Paper,
  Progress,
  SegmentedControl,
  Select,
  Stack,
  Table,
  Text,
  Textarea,
  TextInput,
} from "@mantine/core";
import { useState } from "react";
import { ApiError } from "../api/client.ts";
import { type ImportJob, type ImportReport, importApi, useImportJob } from "../api/import.ts";
import { useServers } from "../api/servers.ts";
import { useT } from "../i18n/i18n.tsx";
import { ErrorAlert } from "../ui/errors.tsx";
import { Iso } from "../ui/Num.tsx";
import { PageHeader } from "../ui/Scaffold.tsx";

type Kind = "marzban" | "3x-ui";

export function ImportPage() {
  const t = useT();
  const [kind, setKind] = useState<Kind>("marzban");
  const [from, setFrom] = useState<"file" | "url">("file");
  const [file, setFile] = useState<File | null>(null);
  const [url, setUrl] = useState("");
  const [xrayConfig, setXrayConfig] = useState("");
  const [serverId, setServerId] = useState<string | null>(null);
  const [uploadId, setUploadId] = useState<string>();
  const [uploadedFile, setUploadedFile] = useState<File>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [watching, setWatching] = useState(false);
  const servers = useServers();
  const job = useImportJob(watching);
  const current = job.data ?? null;
  const running = current?.state === "running";
  if (watching && current !== null && !running) setWatching(false);

  async function start(dryRun: boolean) {
    setBusy(true);
    setError(undefined);
    try {
      let config: Record<string, unknown> | undefined;
      if (kind === "marzban" && xrayConfig.trim() !== "") {
        try {
          config = JSON.parse(xrayConfig) as Record<string, unknown>;
        } catch {
          throw new ApiError({
            type: "about:blank",
            title: "Bad Request",
            status: 400,
            code: "validation_failed",
            detail: t("import.badXrayConfig"),
          });
        }
      }
      let source: { upload_id: string } | { url: string };
      if (from === "file") {
        if (file === null) throw new Error(t("import.chooseFile"));
        let id = uploadId;
        if (id === undefined || uploadedFile !== file) {
          id = await importApi.upload(file);
          setUploadId(id);
          setUploadedFile(file);
        }
        source = { upload_id: id };
      } else source = { url };
      await importApi.start({
        kind,
        dry_run: dryRun,
        ...(serverId === null ? {} : { server_id: serverId }),
        ...source,
        ...(config === undefined ? {} : { xray_config: config }),
      });
      // A real import deletes its upload when it ends: the next one uploads again.
      if (!dryRun) setUploadId(undefined);
      setWatching(true);
      await job.refetch();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  }

  const ready = from === "file" ? file !== null : url.trim() !== "";
  return (
    <Stack>
      <PageHeader title={t("nav.import")} hint={t("import.hint")} />
      <Paper withBorder p="md">
        <Stack>
          <SegmentedControl
            value={kind}
            onChange={(value) => setKind(value as Kind)}
            data={[
              { value: "marzban", label: t("import.kindMarzban") },
              { value: "3x-ui", label: "3x-ui" },
            ]}
          />
          <SegmentedControl
            value={from}
            onChange={(value) => setFrom(value as "file" | "url")}
            data={[
              { value: "file", label: t("import.fromFile") },
              { value: "url", label: t("import.fromUrl") },
            ]}
          />
          {from === "file" ? (
            <FileInput
              label={t("import.file")}
              description={t("import.fileHint")}
              value={file}
              onChange={setFile}
              clearable
            />
          ) : (
            <TextInput
              label={t("import.url")}
              description={t("import.urlHint")}
              placeholder="postgres://user:password@host:5432/marzban"
              value={url}
              onChange={(e) => setUrl(e.currentTarget.value)}
              dir="ltr"
              autoComplete="off"
            />
          )}
          {kind === "marzban" && (
            <Textarea
              label={t("import.xrayConfig")}
              description={t("import.xrayConfigHint")}
              value={xrayConfig}
              onChange={(e) => setXrayConfig(e.currentTarget.value)}
              autosize
              minRows={2}
              maxRows={8}
              dir="ltr"
              ff="monospace"
            />
          )}
          <Select
            label={t("import.server")}
            description={t("import.serverHint")}
            data={(servers.data ?? []).map((server) => ({ value: server.id, label: server.name }))}
            value={serverId}
            onChange={setServerId}
            clearable
          />
          <Group>
            <Button variant="default" loading={busy} disabled={!ready || running} onClick={() => start(true)}>
              {t("import.dryRun")}
            </Button>
            <Button loading={busy} disabled={!ready || running} onClick={() => start(false)}>
              {t("import.run")}
            </Button>
          </Group>
          {error !== undefined && <ErrorAlert error={error} />}
        </Stack>
      </Paper>
      {current !== null && <JobView job={current} />}
    </Stack>
  );
}

function JobView({ job }: { job: ImportJob }) {
  const t = useT();
  const { done, total } = job.progress;
  return (
    <Paper withBorder p="md" data-testid="import-job">
      <Stack>
        <Text fw={600}>
          {job.dry_run ? t("import.dryRunOf", { kind: job.kind }) : t("import.importOf", { kind: job.kind })}{" "}
          · {t(`import.state.${job.state}`)}
        </Text>
        <Progress
          value={(done / Math.max(1, total)) * 100}
          animated={job.state === "running"}
          color={job.state === "failed" ? "red" : undefined}
          aria-label={t("import.progress", { done, total })}
        />
        <Text size="sm" c="dimmed">
          {t("import.progress", { done, total })}
        </Text>
        {job.error !== null && (
          <Alert color="red" title={job.error.code}>
            {job.error.detail}
          </Alert>
        )}
        {job.report !== null && <ReportView report={job.report} />}
      </Stack>
    </Paper>
  );
}

function ReportView({ report }: { report: ImportReport }) {
  const t = useT();
  const rows = [
    ["import.users", report.users],
    ["import.grants", report.grants],
    ["import.inbounds", report.inbounds],
    ["import.hosts", report.hosts],
    ["import.admins", report.admins],
    ["import.oldUrls", report.subscription_urls.links],
  ] as const;
  const reasons = Object.entries(report.left_out).filter(([, n]) => n > 0);
  return (
    <Stack>
      <Table data-testid="import-report">
        <Table.Thead>
          <Table.Tr>
            <Table.Th />
            <Table.Th>{t("import.found")}</Table.Th>
            <Table.Th>{report.dry_run ? t("import.wouldCreate") : t("import.created")}</Table.Th>
            <Table.Th>{t("import.already")}</Table.Th>
            <Table.Th>{t("import.leftOut")}</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows.map(([label, tally]) => (
            <Table.Tr key={label} data-testid={`import-row-${label.slice("import.".length)}`}>
              <Table.Td>{t(label)}</Table.Td>
              <Table.Td>{tally.found}</Table.Td>
              <Table.Td>{tally.created}</Table.Td>
              <Table.Td>{tally.already}</Table.Td>
              <Table.Td>{tally.left_out}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {reasons.length > 0 && (
        <Stack gap={4}>
          <Text fw={600} size="sm">
            {t("import.reasons")}
          </Text>
          {reasons.map(([reason, n]) => (
            <Text key={reason} size="sm">
              <Iso>{n}</Iso> · <bdi dir="ltr">{reason}</bdi>
            </Text>
          ))}
        </Stack>
      )}
      <Text size="xs" c="dimmed">
        {t("import.took")} <Iso>{`${report.duration_ms} ms`}</Iso>
      </Text>
    </Stack>
  );
}
