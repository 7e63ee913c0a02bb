import type { ButtonHTMLAttributes, ComponentChildren, CSSProperties } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.ts';
import { diffLines } from './diff.ts';
import { apiErrorText } from './fields.ts';
import { Term } from './glossary.tsx';
import { utf8Bytes } from './limits.ts';
import type { Scope } from './gql/graphql.ts';
import { scopeNeeds, useCan, useSession } from './session.ts';

export function LevelBadge({ level, size = 'medium', celebrate = false }: { level: number; size?: 'small' | 'medium' | 'large'; celebrate?: boolean }) {
  return (
    <span class={`level-badge level-badge--${size}${celebrate ? ' level-badge--celebrate' : ''}`} role="img" aria-label={`Level ${level}`} title={`Level ${level}`}>
      <span class="level-badge__label" aria-hidden="true">
        Lv
      </span>
      <span class="level-badge__value" aria-hidden="true">
        {level}
      </span>
    </span>
  );
}

/** Trait capacity as an XP bar: active traits out of the limit; pulses gently at capacity. */
export function XpBar({ active, limit, label = 'Traits' }: { active: number; limit: number; label?: string }) {
  const atCapacity = active >= limit;
  const fill = Math.min(100, (active / Math.max(1, limit)) * 100);
  return (
    <div class={`xp${atCapacity ? ' xp--full' : ''}`}>
      <div class="xp__caption">
        <span>{label}</span>
        <span class="xp__count">
          {active} / {limit}
          {atCapacity ? <span class="xp__note"> · ready to level up</span> : null}
        </span>
      </div>
      <div
        class="xp__track"
        role="meter"
        aria-label={`${label}: ${active} of ${limit}${atCapacity ? ', at capacity' : ''}`}
        aria-valuemin={0}
        aria-valuemax={limit}
        aria-valuenow={active}
      >
        <div class="xp__fill" style={{ width: `${fill}%` }} />
        {Array.from({ length: Math.max(0, limit - 1) }, (_, i) => (
          <span class="xp__tick" style={{ left: `${((i + 1) / limit) * 100}%` }} />
        ))}
      </div>
    </div>
  );
}

const MAX_MARKS = 18;
const MAX_READY_MARKS = 10;

/** Pending shards as small marks; when crystallization is ready they coalesce into one readiness signal. */
export function ShardMarks({ count, ready, unmet }: { count: number; ready: boolean; unmet?: string }) {
  // Ready marks huddle together before the signal, so fewer fit.
  const shown = Math.min(count, ready ? MAX_READY_MARKS : MAX_MARKS);
  const label = ready ? `${count} pending shards: ready to refine` : `${count} pending shard${count === 1 ? '' : 's'}${unmet ? `; needs ${unmet}` : ''}`;
  return (
    <div class={`marks${ready ? ' marks--ready' : ''}`} role="img" aria-label={label} title={label}>
      <span class="marks__row" aria-hidden="true">
        {Array.from({ length: shown }, (_, i) => (
          <span class="marks__mark" style={{ '--i': i } as CSSProperties} />
        ))}
        {count > shown ? <span class="marks__more">+{count - shown}</span> : null}
        {count === 0 ? <span class="marks__none">no pending shards</span> : null}
      </span>
      {ready ? (
        <span class="marks__signal" aria-hidden="true">
          <span class="marks__gem" />
          Ready to refine
        </span>
      ) : null}
    </div>
  );
}

export function Panel({ title, id, actions, children, class: extra }: { title: ComponentChildren; id?: string; actions?: ComponentChildren; children: ComponentChildren; class?: string }) {
  const generated = useId();
  const headingId = id ?? `panel-${generated}`;
  return (
    <section class={`panel${extra ? ` ${extra}` : ''}`} aria-labelledby={headingId}>
      <header class="panel__header">
        <h2 id={headingId} class="panel__title">
          {title}
        </h2>
        {actions ? <div class="panel__actions">{actions}</div> : null}
      </header>
      <div class="panel__body">{children}</div>
    </section>
  );
}

/** A disabled button's reason, as its title: the first of `cases` that holds (undefined when none does, and the button is enabled). */
export function why(...cases: [boolean, string][]): string | undefined {
  return cases.find(([holds]) => holds)?.[1];
}

type ButtonProps = ButtonHTMLAttributes<HTMLButtonElement> & { scope?: Scope; variant?: 'primary' | 'quiet' | 'danger' | 'plain' };

/**
 * A button that needs a scope: disabled, with the reason as its description, when the caller's token lacks it,
 * so an operation the token may not run is never offered (not merely refused).
 */
export function Button({ scope, variant = 'plain', children, disabled, class: extra, title, ...rest }: ButtonProps) {
  const allowed = useCan(scope ?? 'READ');
  const reasonId = useId();
  const blocked = scope !== undefined && !allowed;
  return (
    <>
      <button
        type="button"
        class={`btn btn--${variant}${extra ? ` ${extra}` : ''}`}
        disabled={Boolean(disabled) || blocked}
        aria-describedby={blocked ? reasonId : undefined}
        title={blocked ? `Your token has no ${scope!.toLowerCase()} scope` : title}
        data-needs-scope={blocked ? scope!.toLowerCase() : undefined}
        {...rest}
      >
        {children}
      </button>
      {blocked ? (
        <span id={reasonId} class="visually-hidden">
          Not allowed: your token has no {scope!.toLowerCase()} scope ({scopeNeeds[scope!]}).
        </span>
      ) : null}
    </>
  );
}

/** A notice, shown above a form, that the token's scopes do not allow what the form does. */
export function ScopeNote({ scope }: { scope: Scope }) {
  const allowed = useCan(scope);
  const { caller } = useSession();
  if (allowed) return null;
  return (
    <p class="scope-note" role="note">
      The token <strong>{caller.name}</strong> has no <strong>{scope.toLowerCase()}</strong> scope, so {scopeNeeds[scope]} is disabled here.
    </p>
  );
}

/** The identity block: lean or full, with a copy button. Lines keep their Markdown, lightly styled. */
export function RenderedBlock({ text, full, onToggleFull, label = 'Rendered identity block' }: { text: string; full?: boolean; onToggleFull?: (full: boolean) => void; label?: string }) {
  const { notify } = useSession();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      notify('Copied the rendered block', 'success');
    } catch {
      notify('The browser refused the clipboard: select the text and copy it by hand', 'error');
    }
  };
  return (
    <div class="rendered">
      <div class="rendered__tools">
        {onToggleFull ? (
          <div class="toggle" role="group" aria-label="Rendering">
            <button type="button" class="toggle__option" aria-pressed={!full} onClick={() => onToggleFull(false)}>
              Lean
            </button>
            <button type="button" class="toggle__option" aria-pressed={Boolean(full)} onClick={() => onToggleFull(true)}>
              Full (with provenance)
            </button>
          </div>
        ) : (
          <span />
        )}
        <Button variant="quiet" onClick={copy} aria-label="Copy the rendered block">
          Copy
        </Button>
      </div>
      <MarkdownLines text={text} label={label} />
      <p class="field__hint rendered__note">
        Traits are listed by <Term name="density">citation density</Term>, the best evidenced first; ties, the oldest first.
      </p>
    </div>
  );
}

export function MarkdownLines({ text, label, lines }: { text?: string; label: string; lines?: { kind: string; text: string }[] }) {
  const rows = lines ?? (text ?? '').split('\n').map((line) => ({ kind: 'same', text: line }));
  return (
    <pre class="block" aria-label={label} tabIndex={0}>
      {/* Lines joined by newlines only, so what is selected and copied is the text the agent receives. */}
      {rows.map((row, i) => (
        <>
          {i > 0 ? '\n' : null}
          <span class={`block__line block__line--${lineKind(row.text)} diff--${row.kind}`}>
            {row.kind === 'added' ? <span class="visually-hidden">added: </span> : row.kind === 'removed' ? <span class="visually-hidden">removed: </span> : null}
            {row.text}
          </span>
        </>
      ))}
    </pre>
  );
}

function lineKind(line: string): string {
  if (line.startsWith('## ')) return 'h2';
  if (line.startsWith('# ')) return 'h1';
  if (line.startsWith('- ')) return 'item';
  if (/^\*[^*].*\*$/.test(line)) return 'em';
  return 'text';
}

/** Before and after of the rendered block, changed lines marked on each side. */
export function BlockDiff({ before, after }: { before: string; after: string | null }) {
  if (after === null) {
    return (
      <div class="diff diff--single">
        <div class="diff__side">
          <h3 class="diff__title">Now</h3>
          <MarkdownLines text={before} label="The rendered block now" />
        </div>
      </div>
    );
  }
  const lines = diffLines(before, after);
  const changed = lines.some((l) => l.kind !== 'same');
  return (
    <div class="diff">
      <div class="diff__side">
        <h3 class="diff__title">Before</h3>
        <MarkdownLines label="The rendered block before" lines={lines.filter((l) => l.kind !== 'added')} />
      </div>
      <div class="diff__side diff__side--after">
        <h3 class="diff__title">After{changed ? '' : ' (no change)'}</h3>
        <MarkdownLines label="The rendered block after" lines={lines.filter((l) => l.kind !== 'removed')} />
      </div>
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" role="status">
      <span class="loading__quill" aria-hidden="true" />
      Loading {what}…
    </p>
  );
}

/** A form's problem, announced to screen readers as it appears; nothing while there is none. */
export function ProblemNote({ problem }: { problem: string | null | undefined }) {
  return problem ? (
    <p class="error-note" role="alert">
      {problem}
    </p>
  ) : null;
}

export function ErrorNote({ error, retry }: { error: Error; retry?: () => void }) {
  return (
    <div class="error-note" role="alert">
      <p>{error instanceof ApiError ? apiErrorText(error) : error.message}</p>
      {retry ? (
        <Button variant="quiet" onClick={retry}>
          Try again
        </Button>
      ) : null}
    </div>
  );
}

/**
 * The server's bound on a text: `maxLength` in characters, or `maxBytes` in UTF-8 bytes. The field never cuts what is
 * typed or pasted (a cut text loses its end without a word): it keeps it all, counts it, says how much is too much,
 * and makes itself invalid, so its form refuses to submit with that reason.
 */
type Bounded = { maxLength?: number; maxBytes?: number };

/** How the value measures against its bound, or null when the field has none. */
function measure(value: string, { maxLength, maxBytes }: Bounded): { used: number; max: number; unit: 'bytes' | 'characters' } | null {
  if (maxBytes) return { used: utf8Bytes(value), max: maxBytes, unit: 'bytes' };
  if (maxLength) return { used: [...value].length, max: maxLength, unit: 'characters' };
  return null;
}

/** The reason a bounded field refuses its value, or null when it fits. */
export function overBound(label: string, value: string, bound: Bounded): string | null {
  const m = measure(value, bound);
  if (!m || m.used <= m.max) return null;
  return `${label}: ${(m.used - m.max).toLocaleString('en')} ${m.unit === 'bytes' ? 'bytes' : m.used - m.max === 1 ? 'character' : 'characters'} too many (at most ${m.max.toLocaleString('en')} ${m.unit})`;
}

function describedBy(id: string, hint: string | undefined, counted: boolean, problem?: string | null): string | undefined {
  return [problem ? `${id}-problem` : '', hint ? `${id}-hint` : '', counted ? `${id}-count` : ''].filter(Boolean).join(' ') || undefined;
}

/** The server's refusal of this one field, under it. */
function FieldProblem({ id, problem }: { id: string; problem?: string | null }) {
  return problem ? (
    <p id={`${id}-problem`} class="error-note field__problem" role="alert">
      {problem}
    </p>
  ) : null;
}

/** A byte bound is always counted (bytes are not what people see); a character bound once the text nears it. */
function Count({ id, value, bound }: { id: string; value: string; bound: Bounded }) {
  const m = measure(value, bound);
  if (!m || (m.unit === 'characters' && m.used < m.max * 0.8)) return null;
  const over = m.used - m.max;
  return (
    <small id={`${id}-count`} class={`field__count${over > 0 ? ' field__count--over' : ''}`}>
      {m.used.toLocaleString('en')} / {m.max.toLocaleString('en')} {m.unit}
      {over > 0 ? `: ${over.toLocaleString('en')} too many` : ''}
    </small>
  );
}

/** Marks the control invalid with `reason` (the form then refuses to submit and says it), or valid again. */
function useValidity(reason: string | null) {
  const ref = useRef<HTMLInputElement & HTMLTextAreaElement>(null);
  useEffect(() => {
    ref.current?.setCustomValidity(reason ?? '');
  }, [reason]);
  return ref;
}

/** A labelled text field; every input of the app goes through it or Area so none is unlabelled. */
export function Field({ label, hint, value, onInput, required, placeholder, name, type = 'text', disabled, list, maxLength, maxBytes, max, problem }: { label: string; hint?: string; value: string; onInput: (value: string) => void; required?: boolean; placeholder?: string; name?: string; type?: 'text' | 'search' | 'date'; disabled?: boolean; list?: string; max?: string; problem?: string | null } & Bounded) {
  const id = useId();
  const bound = { maxLength, maxBytes };
  const over = overBound(label, value, bound);
  const ref = useValidity(over);
  const counted = measure(value, bound) !== null;
  return (
    <div class="field">
      <label for={id}>
        {label}
        {required ? <span aria-hidden="true"> *</span> : null}
      </label>
      <input ref={ref} id={id} name={name} type={type} value={value} required={required} placeholder={placeholder} disabled={disabled} list={list} max={max} aria-invalid={problem || over ? true : undefined} aria-describedby={describedBy(id, hint, counted, problem)} onInput={(e) => onInput(e.currentTarget.value)} />
      <FieldProblem id={id} problem={problem} />
      {hint ? (
        <small id={`${id}-hint`} class="field__hint">
          {hint}
        </small>
      ) : null}
      <Count id={id} value={value} bound={bound} />
    </div>
  );
}

export function Area({ label, hint, value, onInput, required, rows = 3, placeholder, name, disabled, maxLength, maxBytes, problem }: { label: string; hint?: string; value: string; onInput: (value: string) => void; required?: boolean; rows?: number; placeholder?: string; name?: string; disabled?: boolean; problem?: string | null } & Bounded) {
  const id = useId();
  const bound = { maxLength, maxBytes };
  const over = overBound(label, value, bound);
  const ref = useValidity(over);
  const counted = measure(value, bound) !== null;
  return (
    <div class="field">
      <label for={id}>
        {label}
        {required ? <span aria-hidden="true"> *</span> : null}
      </label>
      <textarea ref={ref} id={id} name={name} rows={rows} value={value} required={required} placeholder={placeholder} disabled={disabled} aria-invalid={problem || over ? true : undefined} aria-describedby={describedBy(id, hint, counted, problem)} onInput={(e) => onInput(e.currentTarget.value)} />
      <FieldProblem id={id} problem={problem} />
      {hint ? (
        <small id={`${id}-hint`} class="field__hint">
          {hint}
        </small>
      ) : null}
      <Count id={id} value={value} bound={bound} />
    </div>
  );
}

/** Briefly true after `value` changes (for one-shot animations such as a badge increment). */
export function useFlash(value: unknown, ms = 1600): boolean {
  const [flash, setFlash] = useState(false);
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    setFlash(true);
    const timer = setTimeout(() => setFlash(false), ms);
    return () => clearTimeout(timer);
  }, [value]);
  return flash;
}

export function Chip({ children, tone = 'plain', title }: { children: ComponentChildren; tone?: 'plain' | 'warn' | 'good' | 'info'; title?: string }) {
  return (
    <span class={`chip chip--${tone}`} title={title}>
      {children}
    </span>
  );
}

const warningNames: Record<string, string> = {
  WEAK_CONSOLIDATION: 'weak consolidation',
  PREMATURE_PROMOTION: 'premature promotion',
  NEAR_DUPLICATE: 'near duplicate',
  POSSIBLE_CONTRADICTION: 'possible contradiction',
};

/** A dry run's advisory warnings (never blocking), each named by its kind. */
export function Warnings({ warnings, label = 'Warnings', words = (message) => message }: { warnings: readonly { kind: string; message: string; traitIds?: readonly string[] }[]; label?: string; words?: (message: string) => string }) {
  if (warnings.length === 0) return null;
  return (
    <ul class="warnings" aria-label={label}>
      {warnings.map((w) => (
        <li key={w.kind + w.message}>
          <Chip tone="warn">{warningNames[w.kind] ?? w.kind.toLowerCase().replaceAll('_', ' ')}</Chip> {words(w.message)}
        </li>
      ))}
    </ul>
  );
}
