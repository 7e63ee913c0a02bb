import { randomUUID } from 'node:crypto';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Clock } from '../engine/index.ts';

import type { LogFormat, LogLevel } from './config.ts';

export type { Logger };

export type LoggerOptions = {
  level?: LogLevel;
  format?: LogFormat;
  /** Where the lines go; default standard output, written synchronously so that nothing is lost on exit. */
  destination?: { write(line: string): unknown };
  /** The time each line carries. */
  clock: Clock;
};

/** `auto` is for people at a terminal and for machines reading a pipe or a file: pretty on a TTY, else JSON. */
export function resolveLogFormat(format: LogFormat | undefined, isTTY: boolean): 'json' | 'pretty' {
  return format === 'auto' || format === undefined ? (isTTY ? 'pretty' : 'json') : format;
}

/** A pino logger: one JSON object a line, or with format `pretty` one human line per record. */
export function createLogger(options: LoggerOptions): Logger {
  const target = options.destination ?? pino.destination({ fd: 1, sync: true });
  const format = resolveLogFormat(options.format, options.destination === undefined && process.stdout.isTTY === true);
  const destination: DestinationStream = format === 'pretty' ? { write: (line) => void target.write(prettyLine(line)) } : (target as DestinationStream);
  return pino(
    {
      level: options.level ?? 'info',
      base: null,
      formatters: { level: (label) => ({ level: label }) },
      timestamp: () => `,"time":"${new Date(options.clock.now()).toISOString()}"`,
    },
    destination,
  );
}

const shownFirst = new Set(['time', 'level', 'msg']);

/** `2026-01-01T00:00:00.000Z INFO  request POST /graphql status=200 …`: the record's fields as key=value, strings quoted when they hold spaces. */
export function prettyLine(json: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const fields = Object.entries(record)
    .filter(([key, value]) => !shownFirst.has(key) && value !== null && value !== undefined)
    .map(([key, value]) => `${key}=${typeof value === 'string' && !/[\s"=]/.test(value) ? value : JSON.stringify(value)}`);
  return `${String(record.time)} ${String(record.level).toUpperCase().padEnd(5)} ${String(record.msg ?? '')}${fields.length > 0 ? ` ${fields.join(' ')}` : ''}\n`;
}

/** The longest client-supplied text (an operation name, a path) a log line carries. */
export const MAX_LOGGED_CHARS = 128;

/** A client-supplied text for a log line: as given when short, else its start and its length (a body may hold megabytes). */
export function loggable(text: string): string {
  return text.length <= MAX_LOGGED_CHARS ? text : `${text.slice(0, MAX_LOGGED_CHARS)}… (${text.length} characters)`;
}

/** A request id from the client's `x-request-id` when it is a plain token of at most 128 characters, else a new UUID. */
export function requestIdOf(header: string | string[] | undefined): string {
  const given = Array.isArray(header) ? header[0] : header;
  return given !== undefined && /^[\w.:@/+=-]{1,128}$/.test(given) ? given : randomUUID();
}
