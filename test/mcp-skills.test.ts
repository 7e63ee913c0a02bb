// Skills: each SKILL.md names only tools the server lists, and is served as a prompt and through the skills extension.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { openSoulsDb } from '../src/engine/index.ts';
import { loadSkills, toolsNamedIn } from '../src/mcp/skills.ts';
import { connect, type Connected } from './support/mcp.ts';

let session: Connected;
beforeAll(async () => {
  session = await connect(openSoulsDb());
});
afterAll(async () => {
  await session.close();
});

const skills = loadSkills();

describe('skills/*/SKILL.md', () => {
  it('are the four procedures the refiner follows', () => {
    expect(skills.map((s) => s.name)).toEqual(['judge-level-up', 'maintenance-pass', 'plan-level-up', 'propose-traits']);
    for (const skill of skills) {
      expect(skill.description.length, skill.name).toBeGreaterThan(40);
      expect(skill.body, skill.name).toMatch(/## When to use[\s\S]*## Steps[\s\S]*## How to judge|## When to use[\s\S]*## Steps/);
    }
  });

  it('name only tools the server lists', async () => {
    const listed = new Set((await session.client.listTools()).tools.map((t) => t.name));
    for (const skill of skills) {
      const named = toolsNamedIn(skill);
      expect(named.length, skill.name).toBeGreaterThanOrEqual(2);
      expect(named.filter((name) => !listed.has(name)), skill.name).toEqual([]);
    }
  });

  it('teach the judge loop: read the unjudged shards, assign them, then propose traits from themes, with the judge\'s real arguments', async () => {
    const { tools } = await session.client.listTools();
    const judge = tools.find((t) => t.name === 'evidence_judge')!;
    const evidence = tools.find((t) => t.name === 'soul_evidence')!;
    const inputs = Object.keys(judge.inputSchema.properties!);
    const assignmentFields = Object.keys((judge.inputSchema.properties!.assignments as { items: { properties: object } }).items.properties);
    for (const name of ['propose-traits', 'maintenance-pass']) {
      const skill = skills.find((s) => s.name === name)!;
      const body = skill.body;
      expect(toolsNamedIn(skill), name).toEqual(expect.arrayContaining(['soul_evidence', 'evidence_judge']));
      expect(body.indexOf('`soul_evidence`'), name).toBeLessThan(body.indexOf('`evidence_judge`'));
      expect(body.indexOf('`evidence_judge`'), name).toBeLessThan(body.search(/trait_change|propose-traits skill/));
      for (const word of ['unjudgedCount', 'themes']) expect(body, name).toContain(word);
      expect(Object.keys(evidence.outputSchema!.properties!)).toEqual(expect.arrayContaining(['unjudgedCount', 'themes']));
      for (const arg of ['assignments', 'themeId', 'dryRun']) {
        expect(body, `${name} ${arg}`).toContain(arg);
        expect(inputs, arg).toContain(arg);
      }
      expect(body).toContain('newThemeName');
      expect(assignmentFields).toEqual(['shardIds', 'themeId', 'newThemeName', 'opposes']);
    }
    const propose = skills.find((s) => s.name === 'propose-traits')!.body;
    for (const arg of ['shardIds', 'traitId', 'name']) expect(inputs).toContain(arg);
    for (const action of ['assign', 'unassign', 'rename', 'oppose']) expect(propose).toContain(`"${action}"`);
    expect(propose).toContain('suggestedTheme');
    expect(propose).toContain('`vectors`');
  });

  it('teach the cheap path (issue 34): read since a revision, judge and oppose in one call, cite many traits in one call, with the real arguments', async () => {
    const { tools } = await session.client.listTools();
    const inputOf = (name: string) => tools.find((t) => t.name === name)!.inputSchema.properties as Record<string, { items?: { properties?: object } }>;
    expect(Object.keys(inputOf('soul_evidence'))).toContain('since');
    expect(Object.keys(inputOf('trait_change').cites.items!.properties!)).toEqual(['traitId', 'shardIds']);
    const propose = skills.find((s) => s.name === 'propose-traits')!.body;
    for (const word of ['`since`', '`revision`', '`opposes`', '`cites`', 'Unjudged shards', 'Next: ']) expect(propose, word).toContain(word);
    // Reading a shard's text takes no second tool: shard_search only for a clipped line.
    expect(propose).not.toMatch(/Read the unjudged shards \(`shard_search`/);
    expect(skills.find((s) => s.name === 'maintenance-pass')!.body).toContain('`since`');
    expect(skills.find((s) => s.name === 'judge-level-up')!.body).toContain('`since`');
  });

  it('a tool name that does not exist is caught', () => {
    const dir = mkdtempSync(join(tmpdir(), 'souls-skills-'));
    try {
      mkdirSync(join(dir, 'bad-skill'));
      writeFileSync(join(dir, 'bad-skill', 'SKILL.md'), '---\nname: bad-skill\ndescription: A skill that calls a tool the server does not have.\n---\nCall `soul_delete` then `soul_read`.\n');
      expect(toolsNamedIn(loadSkills(dir)[0])).toEqual(['soul_delete', 'soul_read']);
      writeFileSync(join(dir, 'bad-skill', 'SKILL.md'), '---\nname: other-name\ndescription: x\n---\nbody\n');
      expect(() => loadSkills(dir)).toThrow('must match its folder "bad-skill"');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('skills over MCP', () => {
  it('serves each skill as a prompt, optionally about one soul', async () => {
    const { prompts } = await session.client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(skills.map((s) => s.name));
    const prompt = await session.client.getPrompt({ name: 'propose-traits', arguments: { soulId: '7' } });
    const text = (prompt.messages[0].content as { text: string }).text;
    expect(text).toMatch(/^Work on soul 7\./);
    expect(text).toContain(skills.find((s) => s.name === 'propose-traits')!.body.trim());
  });

  it('serves the skills through the SDK skills extension, verified against their digests', async () => {
    const client = new SkillsClient(session.client);
    expect(client.supported).toBe(true);
    const { skills: entries } = await client.list();
    expect(entries.map((e) => e.frontmatter.name).sort()).toEqual(skills.map((s) => s.name));
    const file = await client.read(entries.find((e) => e.frontmatter.name === 'plan-level-up')!);
    expect(entries[0].uri).toMatch(/^skill:\/\/souls\//);
    expect(file.body?.trim()).toBe(skills.find((s) => s.name === 'plan-level-up')!.body.trim());
  });
});
