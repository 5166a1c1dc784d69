// Certificates: status, days left, renew, delete; create (self-signed or public CA) or import a PEM
// pair (pasted or read from files in the browser; the private key is sent once and never shown).
import {
  Alert,
  Badge,
  Button,
  Checkbox,
  FileButton,
  Group,
  Modal,
  SegmentedControl,
  Skeleton,
  Stack,
  Table,
  Text,
  Textarea,
  TextInput,
  Title,
  Tooltip,
  VisuallyHidden,
} from "@mantine/core";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap } from "../api/client.ts";
import type { Certificate, CertificateInput } from "../api/types.ts";
import { useCan } from "../auth/me.ts";
import { useI18n, useT } from "../i18n/i18n.tsx";
import { useConfirm } from "../ui/Confirm.tsx";
import { ErrorAlert, notifyDone, notifyError } from "../ui/errors.tsx";
import { daysUntil, formatDate } from "../ui/format.ts";
import { CertificateStatusBadge } from "../ui/StatusBadge.tsx";

function Countdown({ notAfter }: { notAfter: string | null }) {
  const t = useT();
  if (notAfter === null) return <Text size="sm">—</Text>;
  const days = daysUntil(notAfter);
  const color = days < 0 ? "red" : days < 14 ? "orange" : days < 30 ? "yellow" : "teal";
  return (
    <Badge color={color} variant="light" data-testid="certificate-countdown">
      {days < 0 ? t("certificate.expiredAgo", { days: -days }) : t("certificate.daysLeft", { days })}
    </Badge>
  );
}

function PemField({
  label,
  value,
  onChange,
}: {
  label: string;
  value: string;
  onChange: (v: string) => void;
}) {
  const t = useT();
  return (
    <Stack gap={4}>
      <Textarea
        label={label}
        value={value}
        onChange={(e) => onChange(e.currentTarget.value)}
        autosize
        minRows={3}
        maxRows={8}
        ff="monospace"
        spellCheck={false}
        autoComplete="off"
      />
      <FileButton
        onChange={(file) => file && void file.text().then(onChange)}
        accept=".pem,.crt,.key,.cer,text/plain"
      >
        {(props) => (
          <Button {...props} size="compact-xs" variant="subtle" w="fit-content">
            {t("certificate.readFile")}
          </Button>
        )}
      </FileButton>
    </Stack>
  );
}

function CertificateModal({ onClose }: { onClose: () => void }) {
  const t = useT();
  const queryClient = useQueryClient();
  const [mode, setMode] = useState<"self_signed" | "publicca" | "import">("self_signed");
  const [importType, setImportType] = useState<"self_signed" | "publicca">("self_signed");
  const [name, setName] = useState("");
  const [domain, setDomain] = useState("");
  const [autoRenew, setAutoRenew] = useState(true);
  const [pem, setPem] = useState("");
  const [key, setKey] = useState("");
  const create = useMutation({
    mutationFn: () => {
      const isImport = mode === "import";
      const body: CertificateInput = {
        name,
        domain,
        cert_type: isImport ? importType : mode,
        auto_renew: isImport && importType === "self_signed" ? false : autoRenew,
        ...(isImport ? { certificate_pem: pem, private_key: key } : {}),
      };
      return unwrap(api.POST("/api/certificates", { body }));
    },
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: ["certificates"] });
      onClose();
    },
    onError: notifyError,
  });
  return (
    <Modal opened onClose={onClose} title={t("certificate.new")} size="lg">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <Stack>
          <SegmentedControl
            value={mode}
            onChange={(v) => setMode(v as typeof mode)}
            data={[
              { value: "self_signed", label: t("certificate.selfSigned") },
              { value: "publicca", label: t("certificate.publicCa") },
              { value: "import", label: t("certificate.import") },
            ]}
          />
          <TextInput
            label={t("certificate.name")}
            required
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
            data-autofocus
          />
          <TextInput
            label={t("certificate.domain")}
            description={t("certificate.domainHint")}
            required
            value={domain}
            onChange={(e) => setDomain(e.currentTarget.value)}
          />
          {mode === "import" && (
            <>
              <SegmentedControl
                value={importType}
                onChange={(v) => setImportType(v as typeof importType)}
                data={[
                  { value: "self_signed", label: t("certificate.importStatic") },
                  { value: "publicca", label: t("certificate.importAcme") },
                ]}
              />
              <PemField label={t("certificate.pem")} value={pem} onChange={setPem} />
              <PemField label={t("certificate.key")} value={key} onChange={setKey} />
            </>
          )}
          {!(mode === "import" && importType === "self_signed") && (
            <Checkbox
              label={t("certificate.autoRenew")}
              checked={autoRenew}
              onChange={(e) => setAutoRenew(e.currentTarget.checked)}
            />
          )}
          {mode === "publicca" && (
            <Alert color="blue" p="xs">
              {t("certificate.publicCaHint")}
            </Alert>
          )}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              {t("common.cancel")}
            </Button>
            <Button type="submit" loading={create.isPending}>
              {t("common.create")}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** Rename, switch auto-renewal, or replace the pair (checked against the record's domain, which stays). */
function EditCertificateModal({ certificate, onClose }: { certificate: Certificate; onClose: () => void }) {
  const t = useT();
  const queryClient = useQueryClient();
  const [name, setName] = useState(certificate.name);
  const [autoRenew, setAutoRenew] = useState(certificate.auto_renew);
  const [pem, setPem] = useState("");
  const [key, setKey] = useState("");
  const save = useMutation({
    mutationFn: () =>
      unwrap(
        api.PUT("/api/certificates/{id}", {
          params: { path: { id: certificate.id } },
          body: {
            name,
            auto_renew: autoRenew,
            ...(pem.trim() || key.trim() ? { certificate_pem: pem, private_key: key } : {}),
          },
        }),
      ),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: ["certificates"] });
      onClose();
    },
    onError: notifyError,
  });
  return (
    <Modal opened onClose={onClose} title={t("certificate.edit", { name: certificate.name })} size="lg">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate();
        }}
      >
        <Stack>
          <TextInput
            label={t("certificate.name")}
            required
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
          />
          <Checkbox
            label={t("certificate.autoRenew")}
            checked={autoRenew}
            onChange={(e) => setAutoRenew(e.currentTarget.checked)}
          />
          <Text size="sm" c="dimmed">
            {t("certificate.replaceHint", { domain: certificate.domain })}
          </Text>
          <PemField label={t("certificate.pem")} value={pem} onChange={setPem} />
          <PemField label={t("certificate.key")} value={key} onChange={setKey} />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              {t("common.cancel")}
            </Button>
            <Button type="submit" loading={save.isPending}>
              {t("common.save")}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

function CertificateRow({ certificate, canWrite }: { certificate: Certificate; canWrite: boolean }) {
  const { t, language } = useI18n();
  const queryClient = useQueryClient();
  const [confirm, confirmModal] = useConfirm();
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["certificates"] });
  const path = { id: certificate.id };
  const renew = useMutation({
    mutationFn: () => unwrap(api.POST("/api/certificates/{id}/renew", { params: { path } })),
    onSuccess: () => {
      void refresh();
      notifyDone(t("certificate.renewStarted"));
    },
    onError: notifyError,
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE("/api/certificates/{id}", { params: { path } })),
    onSuccess: refresh,
    onError: notifyError,
  });
  const [isEditing, setEditing] = useState(false);
  return (
    <Table.Tr data-testid="certificate-row">
      <Table.Td>
        <Text fw={500}>{certificate.name}</Text>
        <Text size="xs" c="dimmed">
          {certificate.domain} ·{" "}
          {certificate.cert_type === "publicca" ? t("certificate.publicCa") : t("certificate.selfSigned")}
          {certificate.auto_renew ? ` · ${t("certificate.autoRenew")}` : ""}
        </Text>
        {certificate.last_error && (
          <Text size="xs" c="var(--mantine-color-red-light-color)">
            {certificate.last_error}
          </Text>
        )}
      </Table.Td>
      <Table.Td>
        <CertificateStatusBadge status={certificate.status} />
      </Table.Td>
      <Table.Td>
        <Tooltip label={formatDate(certificate.not_after, language)}>
          <span>
            <Countdown notAfter={certificate.not_after} />
          </span>
        </Tooltip>
      </Table.Td>
      <Table.Td>
        <Text size="xs" ff="monospace" lineClamp={1} maw={200} title={certificate.fingerprint_sha256 ?? ""}>
          {certificate.fingerprint_sha256 ?? "—"}
        </Text>
      </Table.Td>
      {canWrite && (
        <Table.Td>
          <Group gap={4} wrap="nowrap">
            <Button size="xs" variant="light" loading={renew.isPending} onClick={() => renew.mutate()}>
              {t("certificate.renew")}
            </Button>
            <Button size="xs" variant="subtle" onClick={() => setEditing(true)}>
              {t("common.edit")}
            </Button>
            <Button
              size="xs"
              color="red"
              variant="subtle"
              loading={remove.isPending}
              onClick={() =>
                confirm(t("certificate.deleteConfirm", { name: certificate.name }), () => remove.mutate())
              }
            >
              {t("common.delete")}
            </Button>
          </Group>
          {confirmModal}
          {isEditing && <EditCertificateModal certificate={certificate} onClose={() => setEditing(false)} />}
        </Table.Td>
      )}
    </Table.Tr>
  );
}

export function CertificatesPage() {
  const t = useT();
  const [isCreating, setCreating] = useState(false);
  const canWrite = useCan()("certificates.write");
  const certificates = useQuery({
    queryKey: ["certificates"],
    queryFn: () => unwrap(api.GET("/api/certificates")),
    // A public-CA issuance runs in the background: follow it while one is pending.
    refetchInterval: (query) => (query.state.data?.some((c) => c.status === "pending") ? 3_000 : false),
  });
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{t("nav.certificates")}</Title>
        {canWrite && <Button onClick={() => setCreating(true)}>{t("certificate.new")}</Button>}
      </Group>
      {certificates.error && <ErrorAlert error={certificates.error} />}
      {certificates.isLoading && <Skeleton h={120} />}
      {certificates.data?.length === 0 && (
        <Text c="dimmed" ta="center" py="lg">
          {t("certificate.empty")}
        </Text>
      )}
      {(certificates.data?.length ?? 0) > 0 && (
        <Table.ScrollContainer minWidth={640}>
          <Table>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("certificate.name")}</Table.Th>
                <Table.Th>{t("certificate.status")}</Table.Th>
                <Table.Th>{t("certificate.expires")}</Table.Th>
                <Table.Th>{t("certificate.fingerprint")}</Table.Th>
                {canWrite && (
                  <Table.Th>
                    <VisuallyHidden>{t("admins.actions")}</VisuallyHidden>
                  </Table.Th>
                )}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {certificates.data?.map((c) => (
                <CertificateRow key={c.id} certificate={c} canWrite={canWrite} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {isCreating && <CertificateModal onClose={() => setCreating(false)} />}
    </Stack>
  );
}
