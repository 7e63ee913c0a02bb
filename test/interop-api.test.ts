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

describe('importSoulMd of a pathological SOUL.md of 1 MiB', () => {
  const MiB = 1024 * 1024;
  const upTo = (head: string, unit: string) => head + unit.repeat(Math.floor((MiB - head.length) / unit.length));

  it('answers the plan of 1 MiB of "## Core Truths" lines: no essence, so a typed error', async () => {
    const server = await start(options);
    const text = upTo('', '## Core Truths\n');
    const plan = await server.request(IMPORT, { input: { text, name: 'Heady' } });
    expect(plan.body.data.importSoulMd).toEqual({ __typename: 'ValidationError', field: 'input.text', message: 'essence: SOUL.md has no essence (the "Vibe" section is missing or empty)' });
  });

  it('plans the essence and traits of a document padded with headings, long runs of spaces and unclosed comments', async () => {
    const server = await start(options);
    const head = '# SOUL.md\n\n## Vibe\n\nDry, exact, unhurried.\n\n## Core Truths\n\n**Look it up.** Then say it plainly.\n\n- Count twice, hand out once.\n\n';
    const tail = `## Core${' '.repeat(64 * 1024)}Notes ##\n<!--${'<!--'.repeat(16 * 1024)}\n`;
    const text = upTo(head + tail, '## Core Truths\n');
    const plan = await server.request(IMPORT, { input: { text, name: 'Mira' } });
    expect(plan.body.data.importSoulMd).toMatchObject({
      __typename: 'SoulMdImportPlan',
      format: 'OPENCLAW',
      name: 'Mira',
      essence: 'Dry, exact, unhurried.',
      traits: [
        { principle: 'Look it up. Then say it plainly.', provenance: 'imported from SOUL.md:Core Truths', present: false },
        { principle: 'Count twice, hand out once.', provenance: 'imported from SOUL.md:Core Truths', present: false },
      ],
    });
  });
});

describe('importSoulMd into a soul that exists', () => {
  const PLAN = `mutation($input: ImportSoulMdInput!) {
    importSoulMd(input: $input) {
      __typename
      ... on SoulMdImportPlan { existingSoul { id activeTraitCount } merge traits { principle present nearDuplicates { trait { id principle } principle similarity } } problems { field message } }
      ... on SoulMdImportPayload { created traitsAdded }
      ... on ValidationError { field message }
    }
  }`;

  async function brannocWith(server: Awaited<ReturnType<typeof start>>, principles: string[]): Promise<{ soulId: string; traitIds: string[] }> {
    const created = await server.request(`mutation { createSoul(input: { name: "Brannoc", essence: "A smith." }) { ... on SoulPayload { soul { id } } } }`);
    const soulId = created.body.data.createSoul.soul.id;
    const traitIds: string[] = [];
    for (const principle of principles) {
      const added = await server.request(`mutation($id: ID!, $p: String!) { addTrait(soulId: $id, input: { principle: $p, provenance: "a test" }) { ... on TraitPayload { trait { id } } } }`, { id: soulId, p: principle });
      traitIds.push(added.body.data.addTrait.trait.id);
    }
    return { soulId, traitIds };
  }

  it('says it merges by name, lists near-duplicates beside the existing trait, and shows the plan with the trait-limit problem', async () => {
    const server = await start(options);
    const near = 'Judge a tool by how it fails, not by how it shines at the fair.';
    const others = Array.from({ length: 8 }, (_, i) => `Keep forge rule number ${i + 1} without exception.`);
    const { soulId, traitIds } = await brannocWith(server, [near, ...others]);
    const text = fixture('frontmatter/brannoc.md');

    const plan = (await server.request(PLAN, { input: { text, fileName: 'brannoc.md' } })).body.data.importSoulMd;
    expect(plan.__typename).toBe('SoulMdImportPlan');
    expect(plan.existingSoul).toEqual({ id: soulId, activeTraitCount: 9 });
    expect(plan.merge).toBe(`merges into the existing soul "Brannoc" (id ${soulId}), found by name: it keeps its name, description and essence and its 9 active traits; only the traits and shards it does not have are added`);
    expect(plan.traits[0]).toMatchObject({ principle: 'Judge a tool by how it fails, not by how it shines.', present: false, nearDuplicates: [{ trait: { id: traitIds[0], principle: near }, principle: near }] });
    expect(plan.traits[0].nearDuplicates[0].similarity).toBeGreaterThanOrEqual(0.3);
    expect(plan.traits[1]).toMatchObject({ principle: 'Quote the real delivery date, even when the customer frowns.', nearDuplicates: [] });
    expect(plan.problems).toEqual([
      {
        field: 'input.text',
        message: '"Brannoc" already has 9 active traits and brannoc.md adds 2 new ones: 11 in all, over the trait limit of 10 (a soul keeps few principles: merge or drop some in the file, level up "Brannoc" first, or raise --trait-limit)',
      },
    ]);

    const refused = (await server.request(PLAN, { input: { text, fileName: 'brannoc.md', apply: true } })).body.data.importSoulMd;
    expect(refused).toEqual({ __typename: 'ValidationError', field: 'input.text', message: plan.problems[0].message });
    expect((await server.request(`{ soul(id: "${soulId}") { activeTraitCount } }`)).body.data.soul.activeTraitCount).toBe(9);

    await server.request(`mutation($id: ID!) { revertTrait(id: $id) { __typename } }`, { id: traitIds[8] });
    const fits = (await server.request(PLAN, { input: { text, fileName: 'brannoc.md' } })).body.data.importSoulMd;
    expect(fits.problems).toEqual([]);
    const applied = (await server.request(PLAN, { input: { text, fileName: 'brannoc.md', apply: true } })).body.data.importSoulMd;
    expect(applied).toEqual({ __typename: 'SoulMdImportPayload', created: false, traitsAdded: 2 });
  });

  it('a new soul has no merge, and a file over the trait limit is a problem of the plan', async () => {
    const server = await start(options);
    const many = Array.from({ length: 11 }, (_, i) => `- Principle number ${i + 1} of many.`).join('\n');
    const plan = (await server.request(PLAN, { input: { text: `# Many\n\n## Who I Am\n\nSomeone.\n\n## Worldview\n\n${many}\n` } })).body.data.importSoulMd;
    expect(plan).toMatchObject({ __typename: 'SoulMdImportPlan', existingSoul: null, merge: null, problems: [{ field: 'input.text', message: expect.stringContaining('SOUL.md has 11 traits, over the trait limit of 10') }] });
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
    expect((await server.request(EXPORT, { name: 'Brannoc', format: 'FRONTMATTER' })).body.data.soulByName.soulMd).toBe(text);
    const fresh = (await server.request(EXPORT, { name: 'Brannoc', format: 'SOULMD' })).body.data.soulByName.soulMd;
    expect(fresh).toMatch(/^# Brannoc\n\nBlacksmith of the lower ward\n/);
    expect(fresh).toContain('<!-- souls:traits:start -->\n- Judge a tool by how it fails, not by how it shines.\n');

    const soulId = (await server.request('{ soulByName(name: "Brannoc") { id } }')).body.data.soulByName.id;
    await server.request(`mutation($id: ID!) { addTrait(soulId: $id, input: { principle: "Sharpen before you sell.", provenance: "a test" }) { __typename } }`, { id: soulId });
    const written = (await server.request(EXPORT, { name: 'Brannoc', format: 'FRONTMATTER', base: text })).body.data.soulByName.soulMd;
    expect(written).toContain('- Sharpen before you sell.\n<!-- souls:traits:end sha256=');
    expect(written.slice(0, text.indexOf('## Who You Are'))).toBe(text.slice(0, text.indexOf('## Who You Are')));
    expect((await server.request(EXPORT, { name: 'Brannoc', format: 'FRONTMATTER' })).body.data.soulByName.soulMd).toBe(written);
    // A re-import stores its document in place of the first one.
    const reimported = `${text}\n## Forge\n\nThe lower ward's, by the river.\n`;
    await server.request(IMPORT, { input: { text: reimported, fileName: 'brannoc.md', apply: true } });
    const stored = (await server.request(EXPORT, { name: 'Brannoc', format: 'FRONTMATTER' })).body.data.soulByName.soulMd;
    expect(stored).toContain('## Forge\n\nThe lower ward\'s, by the river.\n');
    expect(stored).toContain('- Sharpen before you sell.\n<!-- souls:traits:end sha256=');
    const edited = written.replace('- Sharpen before you sell.', '- Sharpen before you sell, always.');
    const refused = await server.request(EXPORT, { name: 'Brannoc', format: 'FRONTMATTER', base: edited });
    expect(refused.body.data).toEqual({ soulByName: null });
    expect(refused.body.errors[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'base' } });
    expect(refused.body.errors[0].message).toContain('traits region was edited');
  });
});

describe("docs/soulmd.md's operations over GraphQL", () => {
  it('run as written', async () => {
    const doc = readFileSync(new URL('../docs/soulmd.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## Over GraphQL'));
    const block = /```graphql[^\n]*\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
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
