import { bounds } from './limits.ts';
import { useEffect, useId, useState } from 'preact/hooks';
import { request } from './api.ts';
import { appWords, errorText, resultProblem } from './fields.ts';
import { date, percent, plural } from './format.ts';
import { ImportSoulMdDocument, SoulMdExportDocument, type ImportSoulMdMutation, type SoulMdFormat } from './gql/graphql.ts';
import { useCan, useSession } from './session.ts';
import { Area, Button, Chip, Field, ProblemNote, why } from './ui.tsx';

const formats: { value: SoulMdFormat; label: string }[] = [
  { value: 'SOULMD', label: 'soul.md (Who I Am, Worldview)' },
  { value: 'OPENCLAW', label: 'OpenClaw (Core Truths, Vibe)' },
  { value: 'FRONTMATTER', label: 'YAML frontmatter over prose' },
];

function FormatSelect({ value, onChange, auto }: { value: SoulMdFormat | 'AUTO'; onChange: (value: SoulMdFormat | 'AUTO') => void; auto?: boolean }) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>Convention</label>
      <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value as SoulMdFormat | 'AUTO')}>
        {auto ? <option value="AUTO">Tell from the text</option> : null}
        {formats.map((f) => (
          <option key={f.value} value={f.value}>
            {f.label}
          </option>
        ))}
      </select>
    </div>
  );
}

/** The sheet's "Export SOUL.md": the soul written in a convention, to read, copy or download. */
export function ExportSoulMd({ soulId }: { soulId: string }) {
  const { notify } = useSession();
  const [format, setFormat] = useState<SoulMdFormat>('SOULMD');
  const [exported, setExported] = useState<{ text: string; file: string } | null>(null);
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => () => void (url && URL.revokeObjectURL(url)), [url]);
  const run = async () => {
    try {
      const { soul } = await request(SoulMdExportDocument, { id: soulId, format });
      if (!soul) return notify('This soul is gone', 'error');
      const file = format === 'FRONTMATTER' ? `${soul.slug ?? 'soul'}.md` : 'SOUL.md';
      setExported({ text: soul.soulMd, file });
      setUrl(URL.createObjectURL(new Blob([soul.soulMd], { type: 'text/markdown' })));
    } catch (error) {
      notify(`Nothing was exported. ${errorText(error)}`, 'error');
    }
  };
  return (
    <div class="soulmd-export">
      <p class="muted">
        The soul as a SOUL.md. Souls owns the essence and traits between the <code>&lt;!-- souls:… --&gt;</code> markers; <code>souls sync</code> keeps a file on disk current.
      </p>
      <div class="soulmd__row">
        <FormatSelect value={format} onChange={(v) => setFormat(v as SoulMdFormat)} />
        <Button onClick={() => void run()}>Export SOUL.md</Button>
      </div>
      {exported ? (
        <>
          <pre class="soulmd__text" aria-label="Exported SOUL.md" tabIndex={0}>
            {exported.text}
          </pre>
          {url ? (
            <a class="btn btn--plain" href={url} download={exported.file}>
              Download {exported.file}
            </a>
          ) : null}
        </>
      ) : null}
    </div>
  );
}

type ImportAnswer = ImportSoulMdMutation['importSoulMd'];

/** The import form's controls, by the field the server's refusal names. */
const importLabels: Record<string, string> = { format: 'Convention', essence: 'SOUL.md text', traits: 'SOUL.md text', path: 'SOUL.md text', text: 'SOUL.md text' };
type Plan = Extract<ImportAnswer, { __typename: 'SoulMdImportPlan' }>;

/** The roster's "Import": paste a SOUL.md or choose a file, read the plan, then apply it. */
export function ImportSoulMd({ onImported }: { onImported: () => void }) {
  const { notify } = useSession();
  const can = useCan('REFINE');
  const fileId = useId();
  const blockedId = useId();
  const [text, setText] = useState('');
  const [fileName, setFileName] = useState('SOUL.md');
  const [name, setName] = useState('');
  const [format, setFormat] = useState<SoulMdFormat | 'AUTO'>('AUTO');
  const [plan, setPlan] = useState<Plan | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const send = async (apply: boolean): Promise<ImportAnswer | null> => {
    setBusy(true);
    try {
      const { importSoulMd } = await request(ImportSoulMdDocument, { input: { text, fileName, name: name.trim() || null, format: format === 'AUTO' ? null : format, apply } });
      return importSoulMd;
    } catch (error) {
      setProblem(errorText(error, importLabels));
      return null;
    } finally {
      setBusy(false);
    }
  };
  const showPlan = async (event: Event) => {
    event.preventDefault();
    setProblem(null);
    const answer = await send(false);
    if (!answer) return;
    if (answer.__typename === 'SoulMdImportPlan') setPlan(answer);
    else if (answer.__typename === 'ValidationError' || answer.__typename === 'ConflictError') {
      setPlan(null);
      setProblem(resultProblem(answer, importLabels));
    }
  };
  const apply = async () => {
    const answer = await send(true);
    if (!answer) return;
    if (answer.__typename === 'SoulMdImportPayload') {
      notify(`${answer.soul.name}: ${answer.created ? 'imported' : 'updated'}, ${plural(answer.traitsAdded, 'trait')} and ${plural(answer.shardsAdded, 'shard')} added`, 'success');
      setPlan(null);
      setText('');
      onImported();
    } else if (answer.__typename === 'ValidationError' || answer.__typename === 'ConflictError') setProblem(resultProblem(answer, importLabels));
  };
  const choose = async (input: HTMLInputElement) => {
    const file = input.files?.[0];
    if (!file) return;
    setText(await file.text());
    setFileName(file.name);
    setPlan(null);
  };
  return (
    <form id="import-soul" class="panel soulmd-import" onSubmit={(e) => void showPlan(e)} aria-labelledby="import-soul-title">
      <header class="panel__header">
        <h2 id="import-soul-title" class="panel__title">
          Import a SOUL.md
        </h2>
      </header>
      <div class="panel__body soulmd-import__body">
        <p class="muted">Paste an OpenClaw or soul.md SOUL.md, or a file with YAML frontmatter; the plan shows what would be created before anything is written.</p>
        <div class="field">
          <label for={fileId}>Choose a file</label>
          <input id={fileId} type="file" accept=".md,.markdown,text/markdown,text/plain" disabled={!can} onChange={(e) => void choose(e.currentTarget)} />
        </div>
        <Area label="SOUL.md text" value={text} onInput={(v) => (setText(v), setPlan(null))} rows={8} disabled={!can} maxBytes={bounds.documentBytes} />
        <div class="soulmd__row">
          <FormatSelect value={format} onChange={(v) => (setFormat(v), setPlan(null))} auto />
          <Field label="Name (when the text gives none)" value={name} onInput={(v) => (setName(v), setPlan(null))} disabled={!can} maxLength={bounds.nameLength} />
        </div>
        <ProblemNote problem={problem} />
        <div class="form-actions">
          <button type="submit" class="btn btn--plain" disabled={!can || busy || !text.trim()} title={why([!can, 'Your token has no refine scope'], [busy, 'Reading the text…'], [!text.trim(), 'Paste a SOUL.md or choose a file first'])}>
            Show the plan
          </button>
        </div>
        {plan ? <ImportPlanView plan={plan} /> : null}
        {plan ? (
          <div class="form-actions soulmd-plan__actions">
            <Button
              scope="REFINE"
              variant="primary"
              disabled={busy || plan.problems.length > 0}
              title={why([busy, 'Importing…'])}
              aria-describedby={plan.problems.length > 0 ? blockedId : undefined}
              onClick={() => void apply()}
            >
              {plan.existingSoul ? `Add to ${plan.existingSoul.name}` : `Import ${plan.name}`}
            </Button>
            {plan.problems.length > 0 ? (
              <p id={blockedId} class="muted soulmd-plan__blocked">
                Nothing can be imported until the {plan.problems.length === 1 ? 'problem above is' : 'problems above are'} fixed: change the text and show the plan again.
              </p>
            ) : null}
          </div>
        ) : null}
      </div>
    </form>
  );
}

function ImportPlanView({ plan }: { plan: Plan }) {
  const newTraits = plan.traits.filter((t) => !t.present);
  const newShards = plan.shards.filter((s) => !s.present);
  return (
    <section class="soulmd-plan" aria-label="Import plan">
      {plan.merge ? (
        <p class="soulmd-plan__merge">
          <strong>This import {plan.merge}.</strong>
        </p>
      ) : (
        <p>
          <strong>Creates {plan.name}</strong>
          {plan.description ? ` — ${plan.description}` : ''} ({plan.format.toLowerCase()}).
        </p>
      )}
      {plan.existingSoul ? null : (
        <figure class="soulmd-plan__essence">
          <figcaption>The essence it will write</figcaption>
          <blockquote aria-label="The essence it will write">{plan.essence}</blockquote>
        </figure>
      )}
      {plan.problems.length > 0 ? (
        <div class="error-note soulmd-plan__problems" role="alert">
          {plan.problems.map((p) => (
            <p key={p.message}>{resultProblem(p, importLabels)}</p>
          ))}
        </div>
      ) : null}
      <p>
        {plural(newTraits.length, 'trait')} to add{plan.traits.length > newTraits.length ? `, ${plan.traits.length - newTraits.length} already there` : ''}; {plural(newShards.length, 'shard')} to add
        {plan.shards.length > newShards.length ? `, ${plan.shards.length - newShards.length} already there` : ''}.
      </p>
      {plan.traits.length > 0 ? (
        <ul class="soulmd-plan__traits">
          {plan.traits.map((t) => (
            <li key={t.principle} class={t.present ? 'muted' : undefined}>
              {t.principle} <small class="muted">({t.present ? 'already there' : t.provenance})</small>
              {t.nearDuplicates.length > 0 ? (
                <ul class="soulmd-plan__near" aria-label={`Existing traits “${t.principle}” nearly repeats`}>
                  {t.nearDuplicates.map((d) => (
                    <li key={d.trait.id}>
                      <Chip tone="warn">nearly repeats</Chip> “{d.principle}” <small class="muted">({percent(d.similarity)} alike, already a trait of {plan.name})</small>
                    </li>
                  ))}
                </ul>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
      {plan.shards.length > 0 ? (
        <ul class="soulmd-plan__shards">
          {plan.shards.slice(0, 10).map((s, i) => (
            <li key={i}>
              {date(s.createdAt)} · {s.content} <small class="muted">({s.source})</small>
            </li>
          ))}
        </ul>
      ) : null}
      {plan.notes.length > 0 ? (
        <ul class="soulmd-plan__notes muted">
          {plan.notes.map((n) => (
            <li key={n}>{appWords(n)}</li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}
