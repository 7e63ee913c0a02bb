import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { colours, progress } from '../src/cli/terminal.ts';

function sink(isTTY: boolean) {
  const chunks: string[] = [];
  const stream = Object.assign(
    new Writable({
      write(chunk, _encoding, done) {
        chunks.push(String(chunk));
        done();
      },
    }),
    { isTTY },
  );
  return { stream, text: () => chunks.join('') };
}

describe('the terminal output of the command line', () => {
  it('colours only on a TTY without NO_COLOR', () => {
    expect(colours(sink(true).stream, {}).red('x')).toBe('\u001b[31mx\u001b[39m');
    expect(colours(sink(true).stream, { NO_COLOR: '1' }).red('x')).toBe('x');
    expect(colours(sink(false).stream, {}).red('x')).toBe('x');
  });

  it('prints a line per tenth of the work when not on a TTY', () => {
    const out = sink(false);
    const bar = progress(out.stream, 'reindex', 200);
    for (let done = 0; done <= 200; done++) bar.update(done);
    bar.finish('done');
    const lines = out.text().trim().split('\n');
    expect(lines).toHaveLength(12);
    expect(lines[0]).toBe('reindex [........................] 0/200 (0%)');
    expect(lines[10]).toBe('reindex [########################] 200/200 (100%)');
    expect(lines[11]).toBe('done');
  });

  it('redraws in place on a TTY at most every 100 ms, and always at the end', () => {
    const out = sink(true);
    let t = 0;
    const bar = progress(out.stream, 'import', 4, () => t);
    bar.update(1);
    t = 50;
    bar.update(2);
    t = 150;
    bar.update(3);
    bar.update(4);
    bar.finish();
    const draws = out.text().split('\r').filter(Boolean);
    expect(draws.map((d) => /\d\/4/.exec(d)![0])).toEqual(['1/4', '3/4', '4/4', '4/4']);
    expect(out.text().endsWith('\n')).toBe(true);
  });
});
