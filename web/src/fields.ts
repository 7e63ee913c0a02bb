import type { ApiError } from './api.ts';

// A ValidationError's `field` is the path of the bad input ("plan.consolidations[0].mergedPrinciple"); people read a
// label ("Merged principle (group 1)") and the message beside it.

/** Leaves whose words differ from their spelled-out name; singular where the leaf is one item of a list. */
const leafWords: Record<string, string> = {
  content: 'observation',
  newEssence: 'new essence',
  citeShardIds: 'cited shard',
  sourceTraitIds: 'merged trait',
  promotedTraitIds: 'promoted trait',
  carriedTraitIds: 'carried trait',
  soulIds: 'soul',
  tags: 'tag',
  traitId: 'trait',
  soulId: 'soul',
};

/** Lists whose items are named in the label: "(group 1)", "(shard 3)". */
const itemWords: Record<string, string> = {
  consolidations: 'group',
  inputs: 'shard',
  add: 'new trait',
  revise: 'revision',
};

/** Wrappers that name no part of the form. */
const wrappers = new Set(['input', 'plan']);

const spelled = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/**
 * "input.name" → "Name"; "plan.consolidations[0].mergedPrinciple" → "Merged principle (group 1)";
 * "inputs[2].tags[0]" → "Tag 1 (shard 3)". `itemName` renames list items, e.g. the workshop's own group names.
 */
export function fieldLabel(field: string, itemName?: (list: string, index: number) => string | undefined): string {
  const segments = [...field.matchAll(/([A-Za-z_]\w*)((?:\[\d+\])*)/g)].map((m) => ({ name: m[1], index: m[2] ? Number(/\d+/.exec(m[2])![0]) : null }));
  const leaf = segments.pop();
  if (!leaf) return field;
  const context = segments
    .filter((s) => !(wrappers.has(s.name) && s.index === null))
    .map((s) => (s.index === null ? spelled(s.name) : (itemName?.(s.name, s.index) ?? `${itemWords[s.name] ?? spelled(s.name)} ${s.index + 1}`)));
  const words = leafWords[leaf.name] ?? spelled(leaf.name);
  const label = capitalized(leaf.index === null ? words : `${words} ${leaf.index + 1}`);
  return context.length ? `${label} (${context.join(', ')})` : label;
}

/** "Label: message", whether or not the server's message still starts with the field's path. */
export function fieldProblem(field: string, message: string, itemName?: (list: string, index: number) => string | undefined, label = fieldLabel(field, itemName)): string {
  const bare = message.replace(/^([A-Za-z_][\w.[\]]*): /, (prefix, path: string) => (field === path || field.endsWith(`.${path}`) || path.endsWith(`.${field}`) ? '' : prefix));
  return `${label}: ${bare}`;
}

/**
 * The server's messages are shared with the CLI, and some end by naming a flag or a mutation; in the app the same
 * advice points at the control that does it (or, for a server setting, at whoever runs the server).
 */
const flagAdvice: [RegExp, string][] = [
  [/give --format [\w, ]+/, 'choose one under “Convention”'],
  [/raise --trait-limit/, 'ask whoever runs the server to raise its trait limit'],
  [/give one with --name/, 'give one under “Name”'],
  [/updateSoul/, '“Edit name, description and essence” on the sheet'],
];

/** `message` with the CLI's flags and the API's mutations put in the app's words. */
export function appWords(message: string): string {
  return flagAdvice.reduce((text, [flag, words]) => text.replace(flag, words), message);
}

/** A result-union error for people: labelled when it names a field. `labels` names the form's own controls, by path or last name. */
export function resultProblem(error: { message: string; field?: string | null }, labels: Record<string, string> = {}): string {
  const message = appWords(error.message);
  if (!error.field) return message;
  return fieldProblem(error.field, message, undefined, labels[error.field] ?? labels[error.field.split('.').at(-1)!]);
}

/** A request's GraphQL errors for people; BAD_USER_INPUT errors carry their field in the extensions. */
export function apiErrorText(error: ApiError, labels: Record<string, string> = {}): string {
  if (error.errors.length === 0) return error.message;
  return error.errors.map((e) => resultProblem({ message: e.message, field: typeof e.extensions?.field === 'string' ? e.extensions.field : null }, labels)).join('; ');
}

/** Whatever an action threw, for people: the server's errors labelled, an unreachable server said plainly. */
export function errorText(error: unknown, labels: Record<string, string> = {}): string {
  return isApiError(error) ? apiErrorText(error, labels) : error instanceof Error ? error.message : String(error);
}

// By name, not instanceof: this module stays free of api.ts's socket client (its tests run without a browser).
const isApiError = (error: unknown): error is ApiError => error instanceof Error && error.name === 'ApiError';

/** The server names traits by id ("trait 24"); people know them by their principle: `trait “Keep the forge lit.”`. */
export function traitNames(message: string, traits: readonly { id: string; principle: string }[]): string {
  return message.replace(/\btrait (\d+)\b/g, (whole, id: string) => {
    const trait = traits.find((t) => t.id === id);
    return trait ? `trait “${trait.principle}”` : whole;
  });
}
