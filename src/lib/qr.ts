// QR codes as SVG (for a TOTP enrolment's otpauth:// URI, subscription URLs, share links): drawn
// by qrcode-generator (no dependencies), error correction M, smallest version that fits.
import qrcode from "qrcode-generator";

export function qrSvg(text: string, cellSize = 4, margin = 4): string {
  const code = qrcode(0, "M");
  code.addData(text, "Byte");
  code.make();
  return code.createSvgTag({ cellSize, margin, scalable: true });
}

export function qrSvgDataUri(text: string): string {
  return `data:image/svg+xml;base64,${Buffer.from(qrSvg(text)).toString("base64")}`;
}
