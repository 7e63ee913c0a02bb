const DAY_MS = 86_400_000;

export const plural = (n: number, noun: string, many = `${noun}s`) => `${n} ${n === 1 ? noun : many}`;

/** "just now", "5 h ago", "3 d ago", "6 wk ago", measured against this browser's clock. */
export function ago(iso: string, now = Date.now()): string {
  const ms = Math.max(0, now - Date.parse(iso));
  if (ms < 60_000) return 'just now';
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ago`;
  if (ms < DAY_MS) return `${Math.floor(ms / 3_600_000)} h ago`;
  if (ms < 14 * DAY_MS) return `${Math.floor(ms / DAY_MS)} d ago`;
  return `${Math.floor(ms / (7 * DAY_MS))} wk ago`;
}

/** Age in whole days (0 for today), for the age indicator of shards. */
export function ageDays(iso: string, now = Date.now()): number {
  return Math.max(0, Math.floor((now - Date.parse(iso)) / DAY_MS));
}

export function date(iso: string): string {
  return new Date(iso).toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
}

export const percent = (x: number) => `${Math.round(x * 100)}%`;

const decimals = new Map<number, Intl.NumberFormat>();
/**
 * A number for people: at most `digits` decimals, no trailing zeros, thousands grouped ("1,107.86", "0.5", "3");
 * a positive number too small to show reads "<0.01" rather than "0". The API keeps full precision.
 */
export function decimal(x: number, digits = 2): string {
  let format = decimals.get(digits);
  if (!format) decimals.set(digits, (format = new Intl.NumberFormat('en', { maximumFractionDigits: digits })));
  const text = format.format(x);
  if (x > 0 && text === '0') return `<${format.format(10 ** -digits)}`;
  // Tiny negatives would read "-0".
  return text === '-0' ? '0' : text;
}

/** A span of days for people: "under a day", "1 day", "12.5 days". */
export function days(x: number): string {
  if (x < 1) return 'under a day';
  const text = decimal(x, 1);
  return `${text} ${text === '1' ? 'day' : 'days'}`;
}

/** What a soul still needs to be ready, in the server's words (Crystallization.needs): "2 more shards (1 of the 3 needed); …". */
export function needsText(needs: readonly { message: string }[]): string {
  // The server writes spans at fixed precision ("0.00 days apart"); people read them as the app's numbers do ("0 days").
  return needs.map((n) => n.message.replace(/\b\d+\.\d+\b/g, (number) => decimal(Number(number)))).join('; ');
}
