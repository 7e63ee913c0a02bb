import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SqliteStore } from '../src/store/sqlite.ts';
import { compareSnapshots, createClient, formatReport, gql, leakPatterns, operations, runFuzz, snapshotKnownRows, type FuzzReport } from './support/fuzz.ts';
import { startServer, type LiveServer } from './support/server.ts';

const MAX_BODY_BYTES = 64 * 1024;
const CASES = 3000;
const SEED = 20260101;

let server: LiveServer;
let report: FuzzReport;
const logged: string[] = [];

beforeAll(async () => {
  server = await startServer({ app: { limits: { maxBodyBytes: MAX_BODY_BYTES } } });
  // The server logs what it could not handle (unexpected errors); a clean fuzz logs nothing.
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(' ')));
  try {
    report = await runFuzz({
      url: server.url,
      db: (server.app.db.store as SqliteStore).db,
      cases: CASES,
      seed: SEED,
      maxBodyBytes: MAX_BODY_BYTES,
      concurrency: 4,
    });
  } finally {
    vi.restoreAllMocks();
  }
  console.log(formatReport(report));
  // A bound for a hang: at load 20 on two cores the cases took over 60 s.
}, 300_000);

afterAll(async () => {
  await server?.stop();
});

describe(`fuzzing the API (${CASES} seeded cases against a live server)`, () => {
  it('survives: no crash, no 5xx, no stack trace, no masked internal error, no hang', () => {
    expect(report.cases).toBe(CASES);
    expect(report.violations).toEqual([]);
    expect(report.crashes).toBe(0);
    expect(report.status5xx).toBe(0);
    expect(report.stackTraces).toBe(0);
    expect(report.internalErrors).toBe(0);
    expect(report.timeouts).toBe(0);
    expect(report.transportErrors).toBe(0);
    expect(logged).toEqual([]);
  });

  it('keeps the database intact and every row written before the fuzz unchanged', () => {
    expect(report.integrity).toBe('ok');
    expect(report.knownRowsChanged).toBe(0);
  });

  it('reached every operation of the contract unmutated and the refusals of the envelope', () => {
    for (const op of operations) expect(report.validOps[op.name], `${op.name} was never sent unmutated`).toBeGreaterThan(0);
    // The mutators land on each layer: parse/validation (400), CSRF (403), method (405), Accept (406), body limit (413), chunked (411).
    for (const status of ['200', '400', '403', '405', '406', '411', '413']) expect(report.statuses[status], `no response had status ${status}`).toBeGreaterThan(0);
    for (const mutation of ['weirdString', 'weirdNumber', 'wrongType', 'deepList', 'hugeList', 'listSize.at', 'listSize.over', 'removeRequiredVariable', 'extraVariable', 'spliceToken', 'truncate', 'duplicateFields', 'duplicateFragments', 'deepSelection', 'bogusOperationName', 'http.get', 'http.noCsrfHeader', 'http.body', 'limit.over', 'limit.under']) {
      expect(report.mutations[mutation], `mutator ${mutation} never ran`).toBeGreaterThan(0);
    }
  });

  it('would recognise a stack trace or a source path in a response (the check can fail)', () => {
    const leaked = JSON.stringify({ errors: [{ message: 'boom', extensions: { stack: new TypeError('boom').stack } }] });
    const matched = leakPatterns.filter((p) => p.test(leaked) || p.test(JSON.parse(leaked).errors[0].extensions.stack));
    expect(matched.length).toBeGreaterThanOrEqual(4);
    expect(leakPatterns.some((p) => p.test('{"data":{"settings":{"traitLimit":10}}}'))).toBe(false);
  });

  // Last: it changes a known row on purpose.
  it('would notice a change to a row written before the fuzz (the check can fail)', async () => {
    const client = createClient(server.url, 1);
    try {
      const db = (server.app.db.store as SqliteStore).db;
      const before = await snapshotKnownRows(client, db, report.known!);
      const [soulId] = report.known!.souls;
      await gql(client, 'mutation($id: ID!) { updateSoul(id: $id, input: { essence: "Changed after the fuzz." }) { __typename } }', { id: String(soulId) });
      const problems = compareSnapshots(before, await snapshotKnownRows(client, db, report.known!));
      expect(problems.some((p) => p.startsWith(`API souls s${soulId} changed`))).toBe(true);
      expect(problems.some((p) => p.startsWith('rows of souls touching known ids changed'))).toBe(true);
    } finally {
      client.close();
    }
  });
});
