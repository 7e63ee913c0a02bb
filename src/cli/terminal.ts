/** What the command line prints to people: colours only on a terminal, and a progress line for long work. */
import type { CommandIo } from './command.ts';

type Stream = CommandIo['stdout'];

/** Colours only on a TTY, and never when NO_COLOR is set (https://no-color.org). */
export function colours(stream: Stream, env: NodeJS.ProcessEnv) {
  const on = stream.isTTY === true && !env.NO_COLOR;
  const wrap = (open: number, close: number) => (text: string) => (on ? `\u001b[${open}m${text}\u001b[${close}m` : text);
  return { bold: wrap(1, 22), dim: wrap(2, 22), red: wrap(31, 39), green: wrap(32, 39), yellow: wrap(33, 39) };
}

export type Progress = { update(done: number): void; finish(message?: string): void };

/**
 * A progress bar redrawn in place on a TTY (at most every 100 ms of `now`), and on anything else one line per
 * tenth of the work, so logs stay short. `now` is injected for deterministic tests.
 */
export function progress(stream: Stream, label: string, total: number, now: () => number = () => performance.now()): Progress {
  const tty = stream.isTTY === true;
  let lastDraw = -Infinity;
  let lastTenth = -1;
  const line = (done: number) => {
    const share = total === 0 ? 1 : Math.min(1, done / total);
    const width = 24;
    const filled = Math.round(share * width);
    return `${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} (${Math.floor(share * 100)}%)`;
  };
  return {
    update(done) {
      if (tty) {
        const t = now();
        if (t - lastDraw < 100 && done < total) return;
        lastDraw = t;
        stream.write(`\r${line(done)}\u001b[K`);
        return;
      }
      const tenth = total === 0 ? 10 : Math.floor((done / total) * 10);
      if (tenth === lastTenth) return;
      lastTenth = tenth;
      stream.write(`${line(done)}\n`);
    },
    finish(message) {
      if (tty) stream.write(`\r${line(total)}\u001b[K\n`);
      if (message) stream.write(`${message}\n`);
    },
  };
}
