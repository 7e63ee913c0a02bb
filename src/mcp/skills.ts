// The skills loader: skills/<name>/SKILL.md (frontmatter name + description, a markdown procedure), served as MCP prompts
// for every client and through the SDK's skills extension for clients that support it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/server';
import { memorySkillFiles, SkillsExtension, type SkillCatalog } from '@modelcontextprotocol/server/ext/skills';
import { SoulsError } from '../engine/index.ts';

export type Skill = { name: string; description: string; body: string; source: string };

/** Where the project's skills live: skills/ at the root of the package. */
export const SKILLS_DIR = fileURLToPath(new URL('../../skills/', import.meta.url));

/** Frontmatter between `---` lines: `key: value` pairs, one a line. */
export function parseSkill(text: string, where: string): Skill {
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n([\s\S]*)$/.exec(text);
  if (!match) throw new SoulsError(`${where}: a SKILL.md starts with frontmatter between --- lines`);
  const fields = new Map(
    match[1]
      .split(/\r?\n/)
      .map((line) => /^([a-z-]+):\s*(.*)$/.exec(line))
      .filter((m) => m !== null)
      .map((m) => [m[1], m[2].trim()] as const),
  );
  const name = fields.get('name');
  const description = fields.get('description');
  if (!name || !/^[a-z0-9]+(-[a-z0-9]+)*$/.test(name)) throw new SoulsError(`${where}: frontmatter name must be lowercase words joined by "-"`);
  if (!description) throw new SoulsError(`${where}: frontmatter needs a description`);
  return { name, description, body: match[2].trim() + '\n', source: text };
}

/** Every skills/<name>/SKILL.md, by name; the folder name must be the skill's name. */
export function loadSkills(dir = SKILLS_DIR): Skill[] {
  const skills = readdirSync(dir)
    .filter((entry) => statSync(join(dir, entry)).isDirectory())
    .sort()
    .map((entry) => {
      const where = join(entry, 'SKILL.md');
      const skill = parseSkill(readFileSync(join(dir, where), 'utf8'), where);
      if (skill.name !== entry) throw new SoulsError(`${where}: frontmatter name "${skill.name}" must match its folder "${entry}"`);
      return skill;
    });
  return skills;
}

/** Identifiers in backticks that look like tool names (snake_case): what a skill tells a model to call. */
export function toolsNamedIn(skill: Skill): string[] {
  return [...new Set([...skill.body.matchAll(/`([a-z]+(?:_[a-z]+)+)`/g)].map((m) => m[1]))];
}

/** The skills extension's catalog, built once from the same files (it checks names, sizes and digests). */
export async function skillCatalog(skills: readonly Skill[]): Promise<SkillCatalog> {
  const files = Object.fromEntries(skills.map((s) => [`${s.name}/SKILL.md`, s.source]));
  return SkillsExtension.load(memorySkillFiles(files), { prefix: 'souls', strict: true });
}

export type SkillSet = { skills: readonly Skill[]; catalog: SkillCatalog | null };

export async function loadSkillSet(dir = SKILLS_DIR): Promise<SkillSet> {
  const skills = loadSkills(dir);
  return { skills, catalog: await skillCatalog(skills) };
}

/** Each skill as a prompt (optionally about one soul), for clients without skills support; and the extension. */
export function attachSkills(mcp: McpServer, set: SkillSet): void {
  for (const skill of set.skills) {
    mcp.registerPrompt(
      skill.name,
      {
        title: skill.name.replace(/-/g, ' '),
        description: skill.description,
        argsSchema: z.object({ soulId: z.string().regex(/^[1-9][0-9]{0,14}$/).optional().describe('the soul to work on, if you know it') }),
      },
      ({ soulId }) => ({
        description: skill.description,
        messages: [
          {
            role: 'user' as const,
            content: { type: 'text' as const, text: `${soulId ? `Work on soul ${soulId}.\n\n` : ''}Follow this procedure with the Souls tools.\n\n${skill.body}` },
          },
        ],
      }),
    );
  }
  set.catalog?.attach(mcp);
}
