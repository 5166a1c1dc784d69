// The core's stdout and stderr split into lines with a bound: whatever the core writes (one line of
// gigabytes without a newline, a flood of lines), the agent holds at most `maxBytes` of a line that
// has not ended. The rest of an over-long line is dropped up to its newline; the kept head loses its
// last word when cut (that word could be the start of a credential the masking in lib/core-log.ts
// would not recognise once cut) and ends with "…". Each line is a new string of its own bytes (not a
// slice keeping the whole chunk it came in alive), so the supervisor's ring of the last lines holds
// at most CORE_LOG_LINES × maxBytes.

/** A core's log line longer than this (bytes) is cut; its access-log lines are about 150. */
export const CORE_RAW_LINE_MAX_BYTES = 4096;

const NEWLINE = 0x0a;
/** The tail of a cut line that may be part of a token (lib/core-log.ts masks whole tokens). */
const TRAILING_TOKEN = /[A-Za-z0-9+/=_-]+$/;

export class BoundedLines {
  private parts: Buffer[] = [];
  private held = 0;
  private cut = false;

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxBytes = CORE_RAW_LINE_MAX_BYTES,
  ) {}

  /** Bytes held of the line not ended yet (never more than maxBytes). */
  get buffered(): number {
    return this.held;
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (start <= chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline;
      this.keep(chunk, start, end);
      if (newline === -1) return;
      this.emit();
      start = newline + 1;
    }
  }

  /** The stream ended: a last line without a newline is still a line. */
  end(): void {
    if (this.held > 0 || this.cut) this.emit();
  }

  private keep(chunk: Buffer, start: number, end: number): void {
    if (this.cut || end <= start) return;
    const room = this.maxBytes - this.held;
    const take = Math.min(room, end - start);
    // A copy: a view would keep the whole chunk alive for as long as the line is held.
    if (take > 0) this.parts.push(Buffer.from(chunk.subarray(start, start + take)));
    this.held += take;
    if (end - start > room) this.cut = true;
  }

  private emit(): void {
    let line = (this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts)).toString(
      "utf8",
    );
    if (line.endsWith("\r")) line = line.slice(0, -1);
    if (this.cut) line = `${line.replace(TRAILING_TOKEN, "")}…`;
    this.parts = [];
    this.held = 0;
    this.cut = false;
    this.onLine(line);
  }
}
