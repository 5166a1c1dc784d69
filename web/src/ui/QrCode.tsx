// A QR code drawn as SVG elements (no data: URL, no canvas), so the CSP needs nothing for it.
import { useMemo } from "react";
import { encode } from "uqr";

export function QrCode({ value, size = 240, label }: { value: string; size?: number; label: string }) {
  const { path, modules } = useMemo(() => {
    const { data } = encode(value, { ecc: "M", border: 2 });
    let d = "";
    for (const [y, row] of data.entries()) {
      for (const [x, dark] of row.entries()) if (dark) d += `M${x} ${y}h1v1h-1z`;
    }
    return { path: d, modules: data.length };
  }, [value]);
  return (
    <svg
      role="img"
      aria-label={label}
      width={size}
      height={size}
      viewBox={`0 0 ${modules} ${modules}`}
      shapeRendering="crispEdges"
      data-testid="qr-code"
    >
      <rect width={modules} height={modules} fill="#fff" />
      <path d={path} fill="#000" />
    </svg>
  );
}
