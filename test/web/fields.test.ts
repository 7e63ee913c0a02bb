// The web app's words for the API's field paths and bounds, without a browser.
import { describe, expect, it } from 'vitest';
import { defaultBounds } from '../../src/engine/settings.ts';
import { appWords, fieldLabel, fieldProblem, resultProblem } from '../../web/src/fields.ts';
import { bounds, utf8Bytes } from '../../web/src/limits.ts';
import { MAX_DOCUMENT_BYTES } from '../../src/engine/documents.ts';

describe('field labels', () => {
  it('turns a ValidationError field path into a label people read', () => {
    expect(fieldLabel('input.name')).toBe('Name');
    expect(fieldLabel('input.content')).toBe('Observation');
    expect(fieldLabel('plan.newEssence')).toBe('New essence');
    expect(fieldLabel('plan.consolidations[0].mergedPrinciple')).toBe('Merged principle (group 1)');
    expect(fieldLabel('inputs[2].tags[0]')).toBe('Tag 1 (shard 3)');
    expect(fieldLabel('add[1].citeShardIds[4]')).toBe('Cited shard 5 (new trait 2)');
    expect(fieldLabel('plan.consolidations[1].mergedProvenance', (list, i) => (list === 'consolidations' ? `consolidation ${i + 2}` : undefined))).toBe('Merged provenance (consolidation 3)');
  });

  it('composes "label: message" whether or not the message repeats the path', () => {
    expect(fieldProblem('input.name', 'must be at most 200 characters')).toBe('Name: must be at most 200 characters');
    expect(fieldProblem('input.name', 'input.name: must be at most 200 characters')).toBe('Name: must be at most 200 characters');
    expect(fieldProblem('plan.consolidations[0].mergedPrinciple', 'consolidations[0].mergedPrinciple: must not be empty')).toBe('Merged principle (group 1): must not be empty');
    // A message that merely starts with another word and a colon keeps it.
    expect(fieldProblem('input.source', 'note: must be at most 128 characters')).toBe('Source: note: must be at most 128 characters');
  });
});

describe('input bounds in the web app', () => {
  it('are the engine’s documented defaults', () => {
    expect(bounds).toEqual({
      nameLength: defaultBounds.maxNameLength,
      descriptionBytes: defaultBounds.maxDescriptionBytes,
      essenceBytes: defaultBounds.maxEssenceBytes,
      shardContentBytes: defaultBounds.maxShardContentBytes,
      sourceLength: defaultBounds.maxSourceLength,
      tagLength: defaultBounds.maxTagLength,
      tagsPerShard: defaultBounds.maxTagsPerShard,
      principleBytes: defaultBounds.maxPrincipleBytes,
      provenanceBytes: defaultBounds.maxProvenanceBytes,
      documentBytes: MAX_DOCUMENT_BYTES,
    });
  });

  it('count UTF-8 bytes as the server does', () => {
    expect(utf8Bytes('Café ☕')).toBe(Buffer.byteLength('Café ☕', 'utf8'));
    expect(utf8Bytes('𝄞')).toBe(4);
  });
});

describe('the server’s messages in the app’s words', () => {
  it('names the form’s control, not the CLI’s flag, and labels a field by the form’s own name for it', () => {
    const format = { field: 'format', message: 'cannot tell the convention of SOUL.md (no frontmatter): give --format openclaw, soulmd or frontmatter' };
    expect(resultProblem(format, { format: 'Convention' })).toBe('Convention: cannot tell the convention of SOUL.md (no frontmatter): choose one under “Convention”');
    const limit = { field: 'traits', message: 'SOUL.md would give "X" 11 active traits; the trait limit is 10 (merge some in the file, or raise --trait-limit)' };
    expect(resultProblem(limit)).toBe('Traits: SOUL.md would give "X" 11 active traits; the trait limit is 10 (merge some in the file, or ask whoever runs the server to raise its trait limit)');
    expect(resultProblem({ field: 'input.createdAt', message: 'may not be in the future' }, { createdAt: 'Observed on' })).toBe('Observed on: may not be in the future');
    const unnamed = { field: 'name', message: 'SOUL.md names no soul (IDENTITY.md has no Name): give one with --name' };
    expect(resultProblem(unnamed)).toBe('Name: SOUL.md names no soul (IDENTITY.md has no Name): give one under “Name”');
  });

  it('points at the sheet’s control where an import note names a mutation', () => {
    expect(appWords(`the essence of "Hedda" differs from SOUL.md; the soul's is kept (a level-up or updateSoul changes it)`)).toBe(
      `the essence of "Hedda" differs from SOUL.md; the soul's is kept (a level-up or “Edit name, description and essence” on the sheet changes it)`,
    );
  });
});

