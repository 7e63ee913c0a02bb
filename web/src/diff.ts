export type DiffLine = { kind: 'same' | 'added' | 'removed'; text: string };

/** A line diff (longest common subsequence): what the before/after previews show. */
export function diffLines(before: string, after: string): DiffLine[] {
  return diffSequences(before.split('\n'), after.split('\n'));
}

/** The longest-common-subsequence diff of two token lists; on ties the removal comes first, so the result is deterministic. */
function diffSequences(a: readonly string[], b: readonly string[]): DiffLine[] {
  const n = a.length;
  const m = b.length;
  const width = m + 1;
  // lcs[i * width + j] = length of the LCS of a[i..] and b[j..]
  const lcs = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) lcs[i * width + j] = a[i] === b[j] ? lcs[(i + 1) * width + j + 1] + 1 : Math.max(lcs[(i + 1) * width + j], lcs[i * width + j + 1]);
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ kind: 'same', text: a[i] });
      i++;
      j++;
    } else if (lcs[(i + 1) * width + j] >= lcs[i * width + j + 1]) out.push({ kind: 'removed', text: a[i++] });
    else out.push({ kind: 'added', text: b[j++] });
  }
  while (i < n) out.push({ kind: 'removed', text: a[i++] });
  while (j < m) out.push({ kind: 'added', text: b[j++] });
  return out;
}

/** Words (letters, digits, inner apostrophes and hyphens), runs of space, and each other character alone. */
const WORD = /\s+|[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*|[^\s]/gu;
const words = (text: string): string[] => text.match(WORD) ?? [];

export type DiffWord = DiffLine;

/** Beyond this many LCS cells the changed middle is shown as one removal and one addition (essences reach 64 KiB). */
const MAX_WORD_CELLS = 2_000_000;

/**
 * A word diff of two texts (longest common subsequence over words and the spaces between them), deterministic:
 * ties prefer the removal first, and runs of one kind are joined. Concatenating the same + removed parts gives
 * `before`; the same + added parts give `after`.
 */
export function diffWords(before: string, after: string): DiffWord[] {
  const a = words(before);
  const b = words(after);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const parts: DiffWord[] = a.slice(0, start).map((text) => ({ kind: 'same', text }));
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  if ((midA.length + 1) * (midB.length + 1) > MAX_WORD_CELLS) {
    parts.push(...midA.map((text) => ({ kind: 'removed' as const, text })), ...midB.map((text) => ({ kind: 'added' as const, text })));
  } else {
    parts.push(...diffSequences(midA, midB));
  }
  parts.push(...a.slice(endA).map((text) => ({ kind: 'same' as const, text })));
  return joinRuns(groupChanges(parts));
}

/**
 * A space between two changes belongs to the change, and each changed stretch reads as one removal then one
 * addition: "a X Y b" → "a P Q b" gives [X Y] and [P Q], not four fragments around a kept space.
 */
function groupChanges(parts: DiffWord[]): DiffWord[] {
  const grouped: DiffWord[] = [];
  let k = 0;
  while (k < parts.length) {
    if (parts[k].kind === 'same') {
      grouped.push(parts[k++]);
      continue;
    }
    const removed: string[] = [];
    const added: string[] = [];
    while (k < parts.length) {
      const part = parts[k];
      const bridge = part.kind === 'same' && part.text.trim() === '' && k + 1 < parts.length && parts[k + 1].kind !== 'same';
      if (part.kind === 'same' && !bridge) break;
      if (part.kind !== 'added') removed.push(part.text);
      if (part.kind !== 'removed') added.push(part.text);
      k++;
    }
    if (removed.length) grouped.push({ kind: 'removed', text: removed.join('') });
    if (added.length) grouped.push({ kind: 'added', text: added.join('') });
  }
  return grouped;
}

function joinRuns(parts: DiffWord[]): DiffWord[] {
  const joined: DiffWord[] = [];
  for (const part of parts) {
    const last = joined.at(-1);
    if (last && last.kind === part.kind) last.text += part.text;
    else joined.push({ ...part });
  }
  return joined;
}
