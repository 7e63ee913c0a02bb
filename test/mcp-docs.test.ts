import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DOCS_FILE, renderToolDocs } from '../scripts/mcp-docs.ts';
import { tools } from '../src/mcp/server.ts';

describe('docs/mcp-tools.md', () => {
  it('is what the server lists today (npm run docs:mcp rewrites it)', async () => {
    const text = await renderToolDocs();
    expect(readFileSync(DOCS_FILE, 'utf8')).toBe(text);
    for (const t of tools) expect(text).toContain(`## ${t.name}\n`);
  });
});
