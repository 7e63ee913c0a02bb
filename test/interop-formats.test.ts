// SOUL.md interop through the library: each convention's golden fixture (test/fixtures/soulmd/, written by hand)
// imports into the expected soul and shards, re-imports to nothing new, exports back to the same bytes, and after a
// level-up changes only the regions Souls owns.
import { readFileSync } from 'node:fs';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  addTrait,
  createSoul,
  getSoulDocument,
  NotFoundError,
  retireSoul,
  storeSoulDocument,
  updateSoul,
  DAY_MS,
  levelUp,
  listShards,
  listSouls,
  listTraits,
  manualClock,
  openSoulsDb,
  ValidationError,
  type SoulsDb,
} from '../src/engine/index.ts';
import { EditedRegionError, exportSoulMd, soulState, stateOfDocument } from '../src/interop/export.ts';
import { detectFormat, readWorkspace } from '../src/interop/formats.ts';
import { applyImport, planImport } from '../src/interop/import.ts';
import type { SoulMdFormat } from '../src/interop/document.ts';

const FIXTURES = new URL('./fixtures/soulmd/', import.meta.url).pathname;
type Expected = { format: SoulMdFormat; name: string; description: string; essence: string; traits: { principle: string; provenance: string }[]; shards: { content: string; source: string; createdAt: string }[] };
const expected = JSON.parse(readFileSync(`${FIXTURES}expected.json`, 'utf8')) as Record<string, Expected>;

/** The fixture's path, and the headings of its owned regions: essence, traits, and the heading after each. */
const fixtures = {
  openclaw: { path: 'openclaw', main: 'SOUL.md', essence: ['## Vibe', '## Continuity'], traits: ['## Core Truths', '## Boundaries'] },
  soulmd: { path: 'soulmd', main: 'SOUL.md', essence: ['## Who I Am', '---\n\n## Worldview'], traits: ['## Worldview', '---\n\n## Opinions'] },
  frontmatter: { path: 'frontmatter/brannoc.md', main: 'brannoc.md', essence: ['## Who You Are', '## Traits'], traits: ['## Traits', '## Tone'] },
} as const;

let clock: ReturnType<typeof manualClock>;
let db: SoulsDb;

beforeEach(() => {
  clock = manualClock(Date.UTC(2026, 10, 20, 12));
  db = openSoulsDb({ clock });
});

async function importFixture(name: keyof typeof fixtures) {
  const { files } = readWorkspace(`${FIXTURES}${fixtures[name].path}`);
  const plan = await planImport(db, files);
  return { files, plan, result: await applyImport(db, plan) };
}

async function allShards(soulId: number) {
  return (await listShards(db, { soulId, includeExpired: true, first: 500 })).items;
}

/** The text with the body of section `from` (up to `to`) replaced by a placeholder: what stays when that region changes. */
function withoutSection(text: string, [from, to]: readonly [string, string], placeholder: string): string {
  const start = text.indexOf(`${from}\n`) + from.length + 1;
  const end = text.indexOf(to, start);
  expect(start).toBeGreaterThan(from.length);
  expect(end).toBeGreaterThan(start);
  return `${text.slice(0, start)}${placeholder}${text.slice(end)}`;
}

describe.each(Object.keys(fixtures) as (keyof typeof fixtures)[])('the %s fixture', (name) => {
  const want = expected[name];

  it('is recognised and imports into the expected soul, traits and dated shards', async () => {
    const { files, plan, result } = await importFixture(name);
    expect(detectFormat(files)).toBe(want.format);
    expect(plan.format).toBe(want.format);
    expect(result.created).toBe(true);
    expect({ name: result.soul.name, description: result.soul.description, essence: result.soul.essence }).toEqual({ name: want.name, description: want.description, essence: want.essence });
    const traits = await listTraits(db, result.soul.id);
    expect(traits.map((t) => ({ principle: t.principle, provenance: t.provenance }))).toEqual(want.traits);
    const shards = await allShards(result.soul.id);
    const asStored = shards.map((s) => ({ content: s.content, source: s.source, createdAt: new Date(s.createdAt).toISOString() }));
    expect(asStored.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.content.localeCompare(b.content))).toEqual(
      [...want.shards].sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.content.localeCompare(b.content)),
    );
  });

  it('imports again to nothing new: no second soul, trait or shard', async () => {
    const first = await importFixture(name);
    clock.advance(DAY_MS);
    const again = await importFixture(name);
    expect(again.plan.existingSoulId).toBe(first.result.soul.id);
    expect(again.plan.traits.every((t) => t.present)).toBe(true);
    expect(again.plan.shards.every((s) => s.present)).toBe(true);
    expect(again.result).toMatchObject({ created: false, traitIds: [], shardIds: [] });
    expect((await listSouls(db)).length).toBe(1);
    expect((await allShards(first.result.soul.id)).length).toBe(want.shards.length);
  });

  it('exports an untouched import back to the same bytes', async () => {
    const { files, plan, result } = await importFixture(name);
    const original = files.get(plan.mainFile)!;
    expect(exportSoulMd(plan.format, await soulState(db, result.soul.id), original)).toBe(original);
  });

  it('after a level-up rewrites only the owned regions, between markers', async () => {
    const { files, plan, result } = await importFixture(name);
    const original = files.get(plan.mainFile)!;
    const [first, second, ...rest] = await listTraits(db, result.soul.id);
    clock.advance(2 * DAY_MS);
    await levelUp(db, result.soul.id, {
      newEssence: `${want.essence}\n\nA level wiser now.`,
      consolidations: [{ sourceTraitIds: [first.id, second.id], mergedPrinciple: 'Look it up, then say it plainly.', mergedProvenance: 'merged at level 1' }],
      promotedTraitIds: [],
      carriedTraitIds: rest.map((t) => t.id),
    });
    const exported = exportSoulMd(plan.format, await soulState(db, result.soul.id), original);
    expect(exported).not.toBe(original);
    const { essence, traits } = fixtures[name];
    const unowned = (text: string) => withoutSection(withoutSection(text, essence, '@@ESSENCE@@\n\n'), traits, '@@TRAITS@@\n\n');
    // Everything outside the two owned sections is byte for byte the same.
    expect(unowned(exported)).toBe(unowned(original));
    expect(exported).toMatch(/<!-- souls:essence:start -->\n[^]*A level wiser now\.\n<!-- souls:essence:end sha256=[0-9a-f]{12} -->/);
    expect(exported).toMatch(/<!-- souls:traits:start -->\n[^]*Look it up, then say it plainly\.[^]*<!-- souls:traits:end sha256=[0-9a-f]{12} -->/);
    const state = stateOfDocument(plan.format, exported, want.name);
    expect(state.principles).toEqual((await soulState(db, result.soul.id)).principles);
    expect(state.essence).toBe(`${want.essence}\n\nA level wiser now.`);
    // Written again with nothing new, the file is left as it is.
    expect(exportSoulMd(plan.format, await soulState(db, result.soul.id), exported)).toBe(exported);
  });

  it('refuses to overwrite an edit made inside an owned region, and keeps edits made outside', async () => {
    const { files, plan, result } = await importFixture(name);
    await addTrait(db, result.soul.id, { principle: 'Leave the forge cleaner than you found it.', provenance: 'a test' });
    const synced = exportSoulMd(plan.format, await soulState(db, result.soul.id), files.get(plan.mainFile)!);
    const outside = `${synced}\nA note a person added at the end.\n`;
    await addTrait(db, result.soul.id, { principle: 'Answer the question that was asked.', provenance: 'a test' });
    const next = exportSoulMd(plan.format, await soulState(db, result.soul.id), outside);
    expect(next).toContain('A note a person added at the end.');
    expect(next).toContain('Answer the question that was asked.');
    const inside = next.replace('Answer the question that was asked.', 'Answer the question that was asked, kindly.');
    expect(() => exportSoulMd(plan.format, { ...stateOfDocument(plan.format, next, want.name), principles: ['Something else entirely.'] }, inside)).toThrow(EditedRegionError);
    expect(exportSoulMd(plan.format, stateOfDocument(plan.format, next, want.name), inside, { force: true })).not.toContain('kindly');
  });

  it('exports a new file that imports back into the same soul', async () => {
    const { result } = await importFixture(name);
    const state = await soulState(db, result.soul.id);
    const fresh = exportSoulMd(want.format, state, null);
    const back = stateOfDocument(want.format, fresh, want.name);
    expect(back).toEqual(want.format === 'openclaw' ? { ...state, description: '' } : state);
  });
});

describe('identity lines and line endings', () => {
  it('a renamed soul changes only the owned identity lines: the frontmatter values, the soul.md title and summary', async () => {
    const brannoc = await importFixture('frontmatter');
    await updateSoul(db, brannoc.result.soul.id, { name: 'Brannoc the Elder', description: 'Retired blacksmith: still opinionated' });
    const original = brannoc.files.get('brannoc.md')!;
    const renamed = exportSoulMd('frontmatter', await soulState(db, brannoc.result.soul.id), original);
    expect(renamed).toBe(original.replace('name: Brannoc\n', 'name: Brannoc the Elder\n').replace('role: Blacksmith of the lower ward\n', 'role: "Retired blacksmith: still opinionated"\n'));

    const relay = await importFixture('soulmd');
    await updateSoul(db, relay.result.soul.id, { name: 'Relay Prime', description: 'Coordinates the crew.' });
    const soulMd = relay.files.get('SOUL.md')!;
    const out = exportSoulMd('soulmd', await soulState(db, relay.result.soul.id), soulMd);
    expect(out).toBe(soulMd.replace('# Relay\n', '# Relay Prime\n').replace('An AI agent that coordinates a crew of coding agents and reviews their work.', 'Coordinates the crew.'));
  });

  it('keeps CRLF line endings: an untouched file round-trips, a rewritten region uses CRLF too', async () => {
    const crlf = readFileSync(`${FIXTURES}soulmd/SOUL.md`, 'utf8').replace(/\n/g, '\r\n');
    const plan = await planImport(db, new Map([['SOUL.md', crlf]]));
    expect(plan.traits.map((t) => t.principle)).toEqual(expected.soulmd.traits.map((t) => t.principle));
    const { soul } = await applyImport(db, plan);
    expect(exportSoulMd('soulmd', await soulState(db, soul.id), crlf)).toBe(crlf);
    await addTrait(db, soul.id, { principle: 'Small diffs, fast reviews.', provenance: 'a test' });
    const out = exportSoulMd('soulmd', await soulState(db, soul.id), crlf);
    expect(out).toContain('- Small diffs, fast reviews.\r\n<!-- souls:traits:end sha256=');
    expect(out.replace(/\r\n/g, '')).not.toContain('\n');
  });
});

describe('bad input', () => {
  const files = (entries: Record<string, string>) => new Map(Object.entries(entries));

  it('names the frontmatter file when its YAML does not parse', async () => {
    const error = await planImport(db, files({ 'x.md': '---\nname: [unclosed\n---\n\n## Who You Are\n\nSomeone.\n' })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe('x.md frontmatter');
  });

  it('asks for a name when an OpenClaw SOUL.md comes without IDENTITY.md, and takes one given', async () => {
    const soul = readFileSync(`${FIXTURES}openclaw/SOUL.md`, 'utf8');
    const error = await planImport(db, files({ 'SOUL.md': soul })).catch((e: unknown) => e);
    expect(error).toMatchObject({ field: 'name' });
    expect((await planImport(db, files({ 'SOUL.md': soul }), { name: 'Mira' })).name).toBe('Mira');
  });

  it('refuses memory dated in the future, naming the file, and writes nothing', async () => {
    const workspace = files({ 'SOUL.md': readFileSync(`${FIXTURES}openclaw/SOUL.md`, 'utf8'), 'IDENTITY.md': '- **Name:** Mira\n', 'memory/2027-01-01.md': 'Counted sacks.\n' });
    await expect(planImport(db, workspace)).rejects.toMatchObject({ field: 'memory/2027-01-01.md' });
    expect(await listSouls(db)).toEqual([]);
  });

  it('refuses more traits than the trait limit allows, in the plan, before writing anything', async () => {
    const many = Array.from({ length: 11 }, (_, i) => `- Principle number ${i + 1} of many.`).join('\n');
    const plan = await planImport(db, files({ 'SOUL.md': `# Many\n\n## Who I Am\n\nSomeone.\n\n## Worldview\n\n${many}\n` }));
    expect(plan.traits).toHaveLength(11);
    expect(plan.problems).toMatchObject([{ field: 'traits', message: expect.stringContaining('SOUL.md has 11 traits, over the trait limit of 10') }]);
    await expect(applyImport(db, plan)).rejects.toMatchObject({ field: 'traits' });
    expect(await listSouls(db)).toEqual([]);
  });

  it('looks for near-duplicates only while the new principles alone fit the trait limit, and says so', async () => {
    const soul = await createSoul(db, { name: 'Many', essence: 'Someone.' });
    await addTrait(db, soul.id, { principle: 'Count twice, hand out once.', provenance: 'a test' });
    const document = (count: number) => {
      const others = Array.from({ length: count - 1 }, (_, i) => `- Principle number ${i + 1} of many.`).join('\n');
      return files({ 'SOUL.md': `# Many\n\n## Who I Am\n\nSomeone.\n\n## Worldview\n\n- Count twice, then hand out once.\n${others}\n` });
    };
    const fits = await planImport(db, document(10));
    expect(fits.traits[0].nearDuplicates).toMatchObject([{ principle: 'Count twice, hand out once.' }]);
    const over = await planImport(db, document(11));
    expect(over.traits.every((t) => t.nearDuplicates.length === 0)).toBe(true);
    expect(over.notes).toContain('SOUL.md adds 11 new traits, more than the trait limit of 10 alone: near-duplicates of the existing traits are looked for once it adds at most 10');
    expect(over.problems).toMatchObject([{ field: 'traits' }]);
  });

  it('keeps a document only within its bounds, naming the field, and refuses a text file with NUL before writing', async () => {
    const soul = await createSoul(db, { name: 'Doc', essence: 'e' });
    await expect(storeSoulDocument(db, soul.id, { format: 'Open Claw', file: 'SOUL.md', text: 'x' })).rejects.toMatchObject({ field: 'format' });
    await expect(storeSoulDocument(db, soul.id, { format: 'openclaw', file: 'a\nb', text: 'x' })).rejects.toMatchObject({ field: 'file' });
    await expect(storeSoulDocument(db, soul.id, { format: 'openclaw', file: 'SOUL.md', text: 'x'.repeat(1024 * 1024 + 1) })).rejects.toMatchObject({ field: 'text' });
    await expect(storeSoulDocument(db, soul.id, { format: 'openclaw', file: 'SOUL.md', text: 'a\0b' })).rejects.toMatchObject({ field: 'text' });
    await expect(storeSoulDocument(db, 999, { format: 'openclaw', file: 'SOUL.md', text: 'x' })).rejects.toBeInstanceOf(NotFoundError);
    expect(await getSoulDocument(db, soul.id, 'openclaw')).toBeNull();
    await storeSoulDocument(db, soul.id, { format: 'openclaw', file: 'SOUL.md', text: 'kept' });
    await retireSoul(db, soul.id);
    expect(await getSoulDocument(db, soul.id, 'openclaw')).toMatchObject({ text: 'kept' });
    const nul = files({ 'SOUL.md': `# Nul\n\n## Who I Am\n\nSomeone.\u0000\n` });
    await expect(planImport(db, nul)).rejects.toMatchObject({ field: 'SOUL.md' });
  });

  it('cannot guess a file that follows no convention', async () => {
    await expect(planImport(db, files({ 'notes.md': '# Notes\n\nJust notes.\n' }))).rejects.toMatchObject({ field: 'format' });
  });
});
