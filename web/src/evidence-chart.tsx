import { useEffect, useMemo, useState } from 'preact/hooks';
import { ApiError, request } from './api.ts';
import { date, plural } from './format.ts';
import { EvidenceTimelineDocument, type EvidenceTimelineQuery } from './gql/graphql.ts';
import { binEvidence, CHART_WEEKS, WEEK_MS, type Chart, type Point } from './chart-bins.ts';
import { ErrorNote, Loading, Panel } from './ui.tsx';

/** Pages of 300 per status before the chart gives up on older shards (and says so). */
const MAX_ROUNDS = 20;

/**
 * The soul's unsealed shards (pending and faded, expired included) created since `since`, newest first, paging
 * each connection back only as far as the window reaches.
 */
async function loadEvidence(soulId: string, since: number): Promise<{ points: Point[]; partial: boolean }> {
  const points: Point[] = [];
  let partial = false;
  for (const status of ['PENDING', 'FADED'] as const) {
    let after: string | null = null;
    for (let round = 0; ; round++) {
      if (round === MAX_ROUNDS) {
        partial = true;
        break;
      }
      const data: EvidenceTimelineQuery = await request(EvidenceTimelineDocument, { id: soulId, status, after });
      const page = data.soul?.shards;
      if (!page) break;
      const nodes = page.edges.map((e) => e.node);
      points.push(...nodes.filter((n) => Date.parse(n.createdAt) >= since));
      const last = nodes.at(-1);
      if (!page.pageInfo.hasNextPage || last === undefined || Date.parse(last.createdAt) < since) break;
      after = page.pageInfo.endCursor ?? null;
    }
  }
  return { points, partial };
}

const W = 600;
const H = 200;
const GAP = 6;

export function EvidenceChart({ soulId, version }: { soulId: string; version: number }) {
  const [state, setState] = useState<{ points: Point[]; partial: boolean; now: number } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  useEffect(() => {
    let live = true;
    const now = Date.now();
    loadEvidence(soulId, now - CHART_WEEKS * WEEK_MS)
      .then((loaded) => {
        if (!live) return;
        setState({ ...loaded, now });
        setError(null);
      })
      .catch((caught: unknown) => live && setError(caught instanceof ApiError ? caught : new ApiError(String(caught), 0)));
    return () => {
      live = false;
    };
  }, [soulId, version]);
  const chart = useMemo(() => (state ? binEvidence(state.points, state.now) : null), [state]);

  return (
    <Panel title={`Evidence over time (${CHART_WEEKS} weeks)`} id="chart-title" class="evidence-chart">
      {error ? <ErrorNote error={error} /> : null}
      {!chart ? (
        error ? null : <Loading what="the evidence" />
      ) : chart.total === 0 ? (
        <p class="muted">No evidence in the last {CHART_WEEKS} weeks.</p>
      ) : (
        <ChartBody chart={chart} partial={state!.partial} />
      )}
    </Panel>
  );
}

function ChartBody({ chart, partial }: { chart: Chart; partial: boolean }) {
  const slot = W / chart.weeks.length;
  const scale = (H - 4) / chart.max;
  const busiest = chart.weeks.reduce((best, w) => (w.total > best.total ? w : best), chart.weeks[0]);
  const summary = `${plural(chart.total, 'shard')} in ${CHART_WEEKS} weeks: ${chart.series.map((s) => `${s} ${chart.totals.get(s) ?? 0}`).join(', ')}. Busiest: the week of ${date(new Date(busiest.start).toISOString())}, ${busiest.total}.`;
  return (
    <figure class="chart">
      <div class="chart__plot">
        <span class="chart__max" aria-hidden="true">
          {chart.max}
        </span>
        <svg class="chart__svg" viewBox={`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-labelledby="chart-svg-title" aria-describedby="chart-svg-desc">
          <title id="chart-svg-title">Shards per week by source</title>
          <desc id="chart-svg-desc">{summary}</desc>
          <line class="chart__axis" x1={0} y1={H - 0.5} x2={W} y2={H - 0.5} />
          <line class="chart__grid" x1={0} y1={H - chart.max * scale} x2={W} y2={H - chart.max * scale} />
          {chart.weeks.map((week, i) => {
            let y = H;
            return (
              <g key={week.start} data-week={i}>
                {chart.series.map((source, k) => {
                  const count = week.counts.get(source) ?? 0;
                  if (!count) return null;
                  const height = count * scale;
                  y -= height;
                  return (
                    <rect key={source} class={`chart__bar chart-series--${k}`} x={i * slot + GAP / 2} y={y} width={slot - GAP} height={height} data-source={source} data-count={count}>
                      <title>{`Week of ${date(new Date(week.start).toISOString())}: ${source} ${count}`}</title>
                    </rect>
                  );
                })}
              </g>
            );
          })}
        </svg>
      </div>
      <div class="chart__axis-labels" aria-hidden="true">
        <span>{date(new Date(chart.weeks[0].start).toISOString())}</span>
        <span>this week</span>
      </div>
      <figcaption>
        <ul class="chart__legend" aria-label="Sources">
          {chart.series.map((source, k) => (
            <li key={source}>
              <span class={`chart__swatch chart-series--${k}`} aria-hidden="true" />
              {source} <span class="muted">{chart.totals.get(source) ?? 0}</span>
            </li>
          ))}
        </ul>
        <p class="muted chart__note">
          Unsealed shards attributed to the soul, pending or faded, by the week they were created.
          {partial ? ' Only the newest shards were loaded: older weeks may be incomplete.' : ''}
        </p>
      </figcaption>
      <details class="chart__table">
        <summary>The numbers</summary>
        <div class="chart__scroll">
          <table>
            <caption class="visually-hidden">Shards per week by source</caption>
            <thead>
              <tr>
                <th scope="col">Week of</th>
                {chart.series.map((s) => (
                  <th key={s} scope="col">
                    {s}
                  </th>
                ))}
                <th scope="col">All</th>
              </tr>
            </thead>
            <tbody>
              {chart.weeks.map((week) => (
                <tr key={week.start}>
                  <th scope="row">{date(new Date(week.start).toISOString())}</th>
                  {chart.series.map((s) => (
                    <td key={s}>{week.counts.get(s) ?? 0}</td>
                  ))}
                  <td>{week.total}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
