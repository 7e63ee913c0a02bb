import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('examples/library.ts', () => {
  it('runs the README library example end to end', () => {
    const out = execFileSync(process.execPath, ['examples/library.ts'], { encoding: 'utf8' });
    expect(out).toContain('ready: true');
    expect(out).toContain('# Evidence: Mira');
    expect(out).toContain('# Mira\n\n*Quartermaster of the northern keep*');
    expect(out).toContain('## Traits\n- Verify claims against the record before acting on them.');
  });
});
