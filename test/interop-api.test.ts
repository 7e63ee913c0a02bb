// SOUL.md over GraphQL: importSoulMd answers the plan or the applied import as a result union with typed errors;
// Soul.soulMd exports, over a base when given, and refuses to overwrite edits inside the owned regions.
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { serverPerTest } from './support/server.ts';

const FIXTURES = new URL('./fixtures/soulmd/', import.meta.url).pathname;
const fixture = (path: string) => readFileSync(`${FIXTURES}${path}`, 'utf8');
const start = serverPerTest(afterEach);
const options = { start: Date.UTC(2026, 10, 20, 12) };

const IMPORT = `mutation($input: ImportSoulMdInput!) {
  importSoulMd(input: $input) {
    __typename
    ... on SoulMdImportPlan { format name description essence existingSoul { id } traits { principle provenance present } shards { content createdAt present } notes }
    ... on SoulMdImportPayload { created traitsAdded shardsAdded soul { id name essence traits { principle provenance } } plan { traits { present } } }
    ... on ValidationError { field message }
    ... on ConflictError { field message }
  }
}`;

describe('importSoulMd', () => {
  it('answers the plan without writing, then applies it; importing again adds nothing', async () => {
    const server = await start(options);
    const text = fixture('soulmd/SOUL.md');
    const plan = await server.request(IMPORT, { input: { text } });
    expect(plan.body.data.importSoulMd).toMatchObject({
      __typename: 'SoulMdImportPlan',
      format: 'SOULMD',
      name: 'Relay',
      existingSoul: null,
      traits: [
        { principle: 'Most outages are two small assumptions that nobody wrote down.', provenance: 'imported from SOUL.md:Worldview', present: false },
        { present: false },
        { present: false },
      ],
      shards: [],
    });
    expect((await server.request('{ souls { id } }')).body.data.souls).toEqual([]);

    const applied = await server.request(IMPORT, { input: { text, apply: true } });
    expect(applied.body.data.importSoulMd).toMatchObject({ __typename: 'SoulMdImportPayload', created: true, traitsAdded: 3, soul: { name: 'Relay' } });
    expect(applied.body.data.importSoulMd.soul.traits).toHaveLength(3);

    const again = await server.request(IMPORT, { input: { text, apply: true } });
    expect(again.body.data.importSoulMd).toMatchObject({ __typename: 'SoulMdImportPayload', created: false, traitsAdded: 0, shardsAdded: 0, plan: { traits: [{ present: true }, { present: true }, { present: true }] } });
    expect((await server.request('{ souls { id } }')).body.data.souls).toHaveLength(1);
  });

  it('answers typed errors naming the input field', async () => {
    const server = await start(options);
    const noName = await server.request(IMPORT, { input: { text: fixture('openclaw/SOUL.md'), format: 'OPENCLAW' } });
    expect(noName.body.data.importSoulMd).toMatchObject({ __typename: 'ValidationError', field: 'input.name' });
    const badYaml = await server.request(IMPORT, { input: { text: '---\nname: [open\n---\n\n## Who You Are\n\nX.\n', apply: true } });
    expect(badYaml.body.data.importSoulMd).toMatchObject({ __typename: 'ValidationError', field: 'input.text' });
    expect(badYaml.body.data.importSoulMd.message).toMatch(/^SOUL\.md frontmatter: /);
    const named = await server.request(IMPORT, { input: { text: fixture('openclaw/SOUL.md'), name: 'Mira', fileName: 'SOUL.md' } });
    expect(named.body.data.importSoulMd).toMatchObject({ __typename: 'SoulMdImportPlan', format: 'OPENCLAW', name: 'Mira', essence: expect.stringContaining('Dry, exact') });
    expect((await server.request('{ souls { id } }')).body.data.souls).toEqual([]);
  });
});

describe('Soul.soulMd', () => {
  const EXPORT = `query($name: String!, $format: SoulMdFormat!, $base: String) { soulByName(name: $name) { soulMd(format: $format, base: $base) } }`;

  it('exports the soul; over the file it came from, the same bytes; an edited owned region is refused', async () => {
    const server = await start(options);
    const text = fixture('frontmatter/brannoc.md');
    await server.request(IMPORT, { input: { text, fileName: 'brannoc.md', apply: true } });
    const over = await server.request(EXPORT, { name: 'Brannoc', format: 'FRONTMATTER', base: text });
    expect(over.body.data.soulByName.soulMd).toBe(text);
    const fresh = (await server.request(EXPORT, { name: 'Brannoc', format: 'SOULMD' })).body.data.soulByName.soulMd;
    expect(fresh).toMatch(/^# Brannoc\n\nBlacksmith of the lower ward\n/);
    expect(fresh).toContain('<!-- souls:traits:start -->\n- Judge a tool by how it fails, not by how it shines.\n');

    const soulId = (await server.request('{ soulByName(name: "Brannoc") { id } }')).body.data.soulByName.id;
    await server.request(`mutation($id: ID!) { addTrait(soulId: $id, input: { principle: "Sharpen before you sell.", provenance: "a test" }) { __typename } }`, { id: soulId });
    const written = (await server.request(EXPORT, { name: 'Brannoc', format: 'FRONTMATTER', base: text })).body.data.soulByName.soulMd;
    expect(written).toContain('- Sharpen before you sell.\n<!-- souls:traits:end sha256=');
    expect(written.slice(0, text.indexOf('## Who You Are'))).toBe(text.slice(0, text.indexOf('## Who You Are')));
    const edited = written.replace('- Sharpen before you sell.', '- Sharpen before you sell, always.');
    const refused = await server.request(EXPORT, { name: 'Brannoc', format: 'FRONTMATTER', base: edited });
    expect(refused.body.data).toEqual({ soulByName: null });
    expect(refused.body.errors[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'base' } });
    expect(refused.body.errors[0].message).toContain('traits region was edited');
  });
});

describe("the README's Bring your SOUL.md operations", () => {
  it('run as written', async () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Bring your SOUL.md'), readme.indexOf('## The engine as a library'));
    const block = /```graphql\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
    const operations = block.split(/\n\n(?=query|mutation)/);
    expect(operations).toHaveLength(2);
    const server = await start(options);
    await server.request(IMPORT, { input: { text: fixture('openclaw/SOUL.md'), name: 'Mira', apply: true } });
    const plan = await server.request(operations[0]);
    expect(plan.body.data.importSoulMd).toMatchObject({ __typename: 'SoulMdImportPlan', name: 'Tamsin', traits: [{ principle: 'Every crossing has a price.', provenance: 'imported from SOUL.md:Worldview', present: false }] });
    const exported = await server.request(operations[1]);
    expect(exported.body.data.soulByName.soulMd).toBe(fixture('openclaw/SOUL.md'));
  });
});
