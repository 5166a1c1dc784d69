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
  Stack,
  Table,
  Text,
  Textarea,
  TextInput,
  Tooltip,
} from "@mantine/core";
import { useState } from "react";
import { certificatesApi, useCertificates } from "../api/fleet.ts";
import { keys } from "../api/keys.ts";
import { useChange } from "../api/mutation.ts";
import type { Certificate, CertificateInput } from "../api/types.ts";
import { useCan } from "../auth/me.ts";
import { useI18n, useT } from "../i18n/i18n.tsx";
import { ConfirmButton } from "../ui/Confirm.tsx";
import { daysUntil, formatDate } from "../ui/format.ts";
import { DataTable, FormButtons, ListState, PageHeader } from "../ui/Scaffold.tsx";
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
  const [mode, setMode] = useState<"self_signed" | "publicca" | "import">("self_signed");
  const [importType, setImportType] = useState<"self_signed" | "publicca">("self_signed");
  const [name, setName] = useState("");
  const [domain, setDomain] = useState("");
  const [autoRenew, setAutoRenew] = useState(true);
  const [pem, setPem] = useState("");
  const [key, setKey] = useState("");
  const create = useChange(
    () => {
      const isImport = mode === "import";
      const body: CertificateInput = {
        name,
        domain,
        cert_type: isImport ? importType : mode,
        auto_renew: isImport && importType === "self_signed" ? false : autoRenew,
        ...(isImport ? { certificate_pem: pem, private_key: key } : {}),
      };
      return certificatesApi.create(body);
    },
    { invalidates: [keys.certificates.all], onSuccess: onClose },
  );
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
          <FormButtons onCancel={onClose} isSaving={create.isPending} label={t("common.create")} />
        </Stack>
      </form>
    </Modal>
  );
}

/** Rename, switch auto-renewal, or replace the pair (checked against the record's domain, which stays). */
function EditCertificateModal({ certificate, onClose }: { certificate: Certificate; onClose: () => void }) {
  const t = useT();
  const [name, setName] = useState(certificate.name);
  const [autoRenew, setAutoRenew] = useState(certificate.auto_renew);
  const [pem, setPem] = useState("");
  const [key, setKey] = useState("");
  const save = useChange(
    () =>
      certificatesApi.update(certificate.id, {
        name,
        auto_renew: autoRenew,
        ...(pem.trim() || key.trim() ? { certificate_pem: pem, private_key: key } : {}),
      }),
    { invalidates: [keys.certificates.all], onSuccess: onClose },
  );
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
          <FormButtons onCancel={onClose} isSaving={save.isPending} />
        </Stack>
      </form>
    </Modal>
  );
}

function CertificateRow({ certificate, canWrite }: { certificate: Certificate; canWrite: boolean }) {
  const { t, language } = useI18n();
  const invalidates = [keys.certificates.all];
  const renew = useChange(() => certificatesApi.renew(certificate.id), {
    invalidates,
    done: t("certificate.renewStarted"),
  });
  const remove = useChange(() => certificatesApi.remove(certificate.id), { invalidates });
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
        <Text
          size="xs"
          ff="monospace"
          dir="ltr"
          lineClamp={1}
          maw={200}
          title={certificate.fingerprint_sha256 ?? ""}
        >
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
            <ConfirmButton
              size="xs"
              variant="subtle"
              change={remove}
              question={t("certificate.deleteConfirm", { name: certificate.name })}
            >
              {t("common.delete")}
            </ConfirmButton>
          </Group>
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
  const certificates = useCertificates({ followPending: true });
  return (
    <Stack>
      <PageHeader title={t("nav.certificates")}>
        {canWrite && <Button onClick={() => setCreating(true)}>{t("certificate.new")}</Button>}
      </PageHeader>
      <ListState query={certificates} empty={t("certificate.empty")}>
        {(list) => (
          <DataTable
            minWidth={640}
            columns={[
              "certificate.name",
              "certificate.status",
              "certificate.expires",
              "certificate.fingerprint",
            ]}
            actions={canWrite}
          >
            {list.map((c) => (
              <CertificateRow key={c.id} certificate={c} canWrite={canWrite} />
            ))}
          </DataTable>
        )}
      </ListState>
      {isCreating && <CertificateModal onClose={() => setCreating(false)} />}
    </Stack>
  );
}
