// Numbers with units ("547.9 KiB", "12 ms", "80 %") are left-to-right runs: in a right-to-left page
// the bidi algorithm would otherwise move the unit to the other side of its number, or swap the two
// halves of "547.9 KiB / 10.0 GiB". Each is isolated in a <bdi> (e2e/rtl.spec.ts checks every page).
import type { ReactNode } from "react";
import { formatBytes } from "./format.ts";

/** One number with its unit, isolated from the text around it. */
export function Iso({ children }: { children: ReactNode }) {
  return <bdi>{children}</bdi>;
}

export function Bytes({ value }: { value: number }) {
  return <Iso>{formatBytes(value)}</Iso>;
}

/** "↑ 1.2 MiB · ↓ 3.4 MiB": upload and download, each isolated. */
export function UpDown({ up, down }: { up: number; down: number }) {
  return (
    <>
      ↑ <Bytes value={up} /> · ↓ <Bytes value={down} />
    </>
  );
}
