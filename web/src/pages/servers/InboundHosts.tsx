// An inbound's hosts on the server page (issue 48): each enabled host is one entry in every format, in
// this order. Listed with what each overrides; created and edited in a dialog, enabled or disabled in
// place, deleted after a question; reordered by dragging a row, by the move buttons, or with Alt+↑ /
// Alt+↓ on any control of a row (the focus stays on the moved host, and the move is read out).
import { ActionIcon, Badge, Button, Group, Paper, Stack, Switch, Text } from "@mantine/core";
import { type DragEvent, type KeyboardEvent, useEffect, useRef, useState } from "react";
import { hostsApi, type InboundPath, useHosts, useReorderHosts } from "../../api/hosts.ts";
import { keys } from "../../api/keys.ts";
import { useChange } from "../../api/mutation.ts";
import type { Host, Inbound, Server } from "../../api/types.ts";
import { useT } from "../../i18n/i18n.tsx";
import { ConfirmButton } from "../../ui/Confirm.tsx";
import { ListState } from "../../ui/Scaffold.tsx";
import { HostFormModal } from "./HostForm.tsx";

/** `list` with the item at `from` moved to `to` (both clamped to the list). */
export function moved<T>(list: readonly T[], from: number, to: number): T[] {
  const target = Math.max(0, Math.min(list.length - 1, to));
  const out = [...list];
  const [item] = out.splice(from, 1);
  if (item === undefined || target === from) return [...list];
  out.splice(target, 0, item);
  return out;
}

function ArrowIcon({ up }: { up: boolean }) {
  return (
    <svg
      width="16"
      height="16"
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      strokeWidth="2"
      aria-hidden
    >
      <path d={up ? "M12 19V5M5 12l7-7 7 7" : "M12 5v14M5 12l7 7 7-7"} />
    </svg>
  );
}

function GripIcon() {
  return (
    <svg width="16" height="16" viewBox="0 0 24 24" fill="currentColor" aria-hidden>
      {[5, 12, 19].flatMap((y) => [9, 15].map((x) => <circle key={`${x}-${y}`} cx={x} cy={y} r="1.6" />))}
    </svg>
  );
}

/** What the host changes, in a line: address:port, the security override, names and headers. */
function Summary({ host, server, inbound }: { host: Host; server: Server; inbound: Inbound }) {
  const t = useT();
  const address = `${host.address ?? server.hostname}:${host.port ?? inbound.port_override}`;
  return (
    <Stack gap={2} style={{ flex: 1, minWidth: 0 }}>
      <Group gap="xs" wrap="wrap">
        <Text fw={600} ff="monospace" data-testid="host-address">
          {address}
        </Text>
        {host.security !== "inbound" && (
          <Badge variant="light" size="sm">
            {t(`hosts.security.${host.security}`)}
          </Badge>
        )}
        {host.is_disabled && (
          <Badge variant="light" color="gray" size="sm">
            {t("hosts.disabledBadge")}
          </Badge>
        )}
        {host.follows_health && (
          <Badge variant="outline" color="gray" size="sm">
            {t("hosts.followsHealthBadge")}
          </Badge>
        )}
      </Group>
      <Text size="sm" c="dimmed" style={{ overflowWrap: "anywhere" }}>
        {host.remark ?? t("hosts.inboundsRemark")}
        {host.sni.length > 0 && ` · SNI ${host.sni.join(", ")}`}
        {host.host.length > 0 && ` · Host ${host.host.join(", ")}`}
        {host.path !== null && ` · ${host.path}`}
        {host.exclude_from.length > 0 && ` · ${t("hosts.notIn", { formats: host.exclude_from.join(", ") })}`}
      </Text>
    </Stack>
  );
}

type Focus = { id: string; control: string };

function HostRow({
  host,
  index,
  count,
  path,
  canWrite,
  server,
  inbound,
  onMove,
  drag,
}: {
  host: Host;
  index: number;
  count: number;
  path: InboundPath;
  canWrite: boolean;
  server: Server;
  inbound: Inbound;
  onMove: (from: number, to: number, control: string) => void;
  drag: {
    start: (index: number) => void;
    over: (index: number) => void;
    drop: () => void;
    isOver: boolean;
  };
}) {
  const t = useT();
  const n = index + 1;
  const hostPath = { ...path, host_id: host.id };
  const invalidates = [keys.servers.hosts(path.server_id, path.inbound_id)];
  const [isEditing, setEditing] = useState(false);
  const setDisabled = useChange(
    (isDisabled: boolean) => hostsApi.update(hostPath, { is_disabled: isDisabled }),
    {
      invalidates,
    },
  );
  const remove = useChange(() => hostsApi.remove(hostPath), { invalidates, done: t("hosts.deleted") });
  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    if (!canWrite || !event.altKey || (event.key !== "ArrowUp" && event.key !== "ArrowDown")) return;
    event.preventDefault();
    const control = (event.target as HTMLElement).closest<HTMLElement>("[data-control]")?.dataset.control;
    onMove(index, index + (event.key === "ArrowUp" ? -1 : 1), control ?? "grip");
  };
  return (
    <Paper
      withBorder
      p="xs"
      role="listitem"
      aria-label={t("hosts.rowLabel", { n })}
      data-testid="host-row"
      data-host={host.id}
      draggable={canWrite}
      onDragStart={(event: DragEvent) => {
        event.dataTransfer.effectAllowed = "move";
        event.dataTransfer.setData("text/plain", host.id);
        drag.start(index);
      }}
      onDragOver={(event: DragEvent) => {
        event.preventDefault();
        drag.over(index);
      }}
      onDrop={(event: DragEvent) => {
        event.preventDefault();
        drag.drop();
      }}
      onKeyDown={onKeyDown}
      style={{
        opacity: host.is_disabled ? 0.75 : 1,
        outline: drag.isOver ? "2px dashed var(--mantine-primary-color-filled)" : undefined,
      }}
    >
      <Group gap="xs" wrap="nowrap" align="center">
        {canWrite && (
          <ActionIcon
            variant="subtle"
            color="gray"
            style={{ cursor: "grab" }}
            aria-label={t("hosts.grip", { n })}
            title={t("hosts.gripHint")}
            data-control="grip"
          >
            <GripIcon />
          </ActionIcon>
        )}
        <Badge variant="light" color="gray" miw={32}>
          {n}
        </Badge>
        <Summary host={host} server={server} inbound={inbound} />
        {canWrite ? (
          <Group gap={4} wrap="nowrap">
            <Switch
              aria-label={t("hosts.enabled", { n })}
              checked={!host.is_disabled}
              disabled={setDisabled.isPending}
              onChange={(e) => setDisabled.mutate(!e.currentTarget.checked)}
              data-control="enabled"
              mr="xs"
            />
            <ActionIcon
              variant="default"
              aria-label={t("hosts.moveUp", { n })}
              disabled={index === 0}
              data-control="up"
              onClick={() => onMove(index, index - 1, "up")}
            >
              <ArrowIcon up />
            </ActionIcon>
            <ActionIcon
              variant="default"
              aria-label={t("hosts.moveDown", { n })}
              disabled={index === count - 1}
              data-control="down"
              onClick={() => onMove(index, index + 1, "down")}
            >
              <ArrowIcon up={false} />
            </ActionIcon>
            <Button
              size="xs"
              variant="subtle"
              aria-label={t("hosts.editN", { n })}
              data-control="edit"
              onClick={() => setEditing(true)}
            >
              {t("common.edit")}
            </Button>
            <ConfirmButton
              size="xs"
              variant="subtle"
              change={remove}
              aria-label={t("hosts.deleteN", { n })}
              question={t("hosts.deleteConfirm", { n })}
            >
              {t("common.delete")}
            </ConfirmButton>
          </Group>
        ) : null}
      </Group>
      {isEditing && (
        <HostFormModal path={path} tag={inbound.tag} host={host} onClose={() => setEditing(false)} />
      )}
    </Paper>
  );
}

export function InboundHosts({
  server,
  inbound,
  canWrite,
}: {
  server: Server;
  inbound: Inbound;
  canWrite: boolean;
}) {
  const t = useT();
  const path = { server_id: server.id, inbound_id: inbound.id };
  const hosts = useHosts(path);
  const reorder = useReorderHosts(path);
  const [isCreating, setCreating] = useState(false);
  const [said, setSaid] = useState("");
  const [focus, setFocus] = useState<Focus>();
  const [dragging, setDragging] = useState<{ from: number; over: number }>();
  const list = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (focus === undefined) return;
    const row = list.current?.querySelector(`[data-host="${focus.id}"]`);
    const enabled = (control: string) =>
      row?.querySelector<HTMLElement>(`[data-control="${control}"]:not(:disabled)`) ?? undefined;
    // At the top or the bottom the button pressed is disabled: the other move button keeps the keyboard there.
    const other = focus.control === "up" ? "down" : focus.control === "down" ? "up" : focus.control;
    (enabled(focus.control) ?? enabled(other) ?? enabled("grip"))?.focus();
    setFocus(undefined);
  }, [focus]);
  const move = (from: number, to: number, control: string) => {
    const current = hosts.data ?? [];
    const host = current[from];
    if (host === undefined || to < 0 || to >= current.length || to === from) return;
    reorder(moved(current, from, to));
    setSaid(t("hosts.movedTo", { address: host.address ?? server.hostname, n: to + 1 }));
    setFocus({ id: host.id, control });
  };
  const drag = {
    start: (index: number) => setDragging({ from: index, over: index }),
    over: (index: number) =>
      setDragging((d) => (d === undefined || d.over === index ? d : { ...d, over: index })),
    drop: () => {
      if (dragging !== undefined) move(dragging.from, dragging.over, "grip");
      setDragging(undefined);
    },
  };
  return (
    <Stack gap="xs" data-testid="inbound-hosts" onDragEnd={() => setDragging(undefined)}>
      <Group justify="space-between">
        <Text size="sm" c="dimmed">
          {t("hosts.hint")}
        </Text>
        {canWrite && (
          <Button size="xs" variant="light" onClick={() => setCreating(true)}>
            {t("hosts.add")}
          </Button>
        )}
      </Group>
      <ListState
        query={hosts}
        skeleton={40}
        empty={
          <Text size="sm" data-testid="hosts-implicit">
            {t("hosts.implicit", { address: `${server.hostname}:${inbound.port_override}` })}
          </Text>
        }
      >
        {(items) => (
          <Stack gap={6} ref={list} role="list" aria-label={t("hosts.listLabel", { tag: inbound.tag })}>
            {items.map((host, index) => (
              <HostRow
                key={host.id}
                host={host}
                index={index}
                count={items.length}
                path={path}
                canWrite={canWrite}
                server={server}
                inbound={inbound}
                onMove={move}
                drag={{
                  ...drag,
                  isOver: dragging !== undefined && dragging.over === index && dragging.from !== index,
                }}
              />
            ))}
          </Stack>
        )}
      </ListState>
      <Text size="xs" c="dimmed" aria-live="polite" data-testid="hosts-said">
        {said}
      </Text>
      {isCreating && <HostFormModal path={path} tag={inbound.tag} onClose={() => setCreating(false)} />}
    </Stack>
  );
}
