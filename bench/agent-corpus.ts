// The agent cycle's corpus: a release engineer's shards in two waves, each labelled with the theme it tells.
// Five themes told 5–8 ways (A–E), a contradiction of her starting trait (X: lexically close to A, the trap), a theme
// that appears only in the second wave (N), and shards that fit no theme (null). 36 shards, then 18 more.

export type Label = 'A' | 'B' | 'C' | 'D' | 'E' | 'X' | 'N';
export type CorpusShard = { content: string; source: string; label: Label | null };

export const SOUL = {
  name: 'Ines',
  essence: 'Ines is a release engineer who keeps a busy team shipping without drama.',
  startingTrait: { principle: 'Writes a failing test before fixing any bug.', provenance: 'Starting trait: how the team describes her.' },
};

/** The theme each label is judged into, and the trait a refiner proposes from it (A reinforces the starting trait; X opposes it). */
export const THEMES: Record<Label, { name: string; principle: string | null }> = {
  A: { name: 'Writes the failing test first', principle: null },
  B: { name: 'Writes procedures down for others', principle: 'Writes every procedure down so the next person can follow it alone.' },
  C: { name: 'Reviews kindly and carefully', principle: 'Reviews code carefully and kindly, explaining the why behind each request.' },
  D: { name: 'Ships gradually, rolls back fast', principle: 'Ships behind flags and canaries, and rolls back at the first sign of harm.' },
  E: { name: 'Mentors by pairing', principle: 'Mentors juniors by pairing with them on real work.' },
  X: { name: 'Skips tests under pressure', principle: null },
  N: { name: 'Runs blameless postmortems', principle: 'After an incident, looks for causes in the system, never blame in people.' },
};

export const WAVE_1: readonly CorpusShard[] = [
  { content: 'Wrote a failing test for the login timeout before touching the fix.', source: 'journal', label: 'A' },
  { content: 'Reproduced the invoice rounding bug in a unit test first, then fixed it.', source: 'review', label: 'A' },
  { content: 'Refused to merge the cache patch until a regression test showed the bug.', source: 'chat', label: 'A' },
  { content: 'Added a test that fails on the broken date parser, then made it pass.', source: 'standup', label: 'A' },
  { content: 'Asked the intern to capture the crash in a test case before debugging.', source: 'chat', label: 'A' },
  { content: 'Pinned the flaky upload bug with a failing integration test, then repaired it.', source: 'journal', label: 'A' },
  { content: 'Wrote a runbook for restoring the database from backups.', source: 'journal', label: 'B' },
  { content: 'Documented every step of the release process in the team wiki.', source: 'chat', label: 'B' },
  { content: 'Rewrote the onboarding guide so a newcomer can set up the laptop alone.', source: 'review', label: 'B' },
  { content: 'Left a clear README in the deploy scripts folder explaining each flag.', source: 'standup', label: 'B' },
  { content: 'Turned the outage notes into a how-to page for the next on-call engineer.', source: 'journal', label: 'B' },
  { content: 'Explained the queue configuration in a short written guide with diagrams.', source: 'chat', label: 'B' },
  { content: 'Reviewed the search pull request line by line and left kind, specific comments.', source: 'review', label: 'C' },
  { content: "Praised what worked in the junior's pull request before suggesting changes.", source: 'chat', label: 'C' },
  { content: 'Spent an hour on a code review so the author understood each requested change.', source: 'journal', label: 'C' },
  { content: 'Asked questions instead of giving orders in her review comments.', source: 'review', label: 'C' },
  { content: 'Approved the refactor only after reading every changed file carefully.', source: 'standup', label: 'C' },
  { content: 'Wrote review feedback that explained the why behind each suggestion.', source: 'chat', label: 'C' },
  { content: 'Shipped the new checkout behind a feature flag and turned it on for five percent.', source: 'standup', label: 'D' },
  { content: 'Rolled back the release within minutes when error rates rose.', source: 'journal', label: 'D' },
  { content: 'Kept the old code path alive until the canary looked healthy.', source: 'chat', label: 'D' },
  { content: 'Deployed the search rewrite gradually, one region at a time.', source: 'review', label: 'D' },
  { content: 'Prepared a rollback plan before every production deploy.', source: 'standup', label: 'D' },
  { content: 'Switched the flag off the moment latency doubled, then investigated calmly.', source: 'journal', label: 'D' },
  { content: 'Paired with the new hire for an afternoon on the build system.', source: 'chat', label: 'E' },
  { content: 'Held weekly mentoring sessions with two junior developers.', source: 'journal', label: 'E' },
  { content: 'Let the intern drive the keyboard while she guided the debugging session.', source: 'standup', label: 'E' },
  { content: 'Spent her lunch break teaching a colleague how git rebase works.', source: 'review', label: 'E' },
  { content: 'Set up a pairing rotation so juniors work with seniors every week.', source: 'chat', label: 'E' },
  { content: 'Pushed the hotfix straight to production without writing any test.', source: 'chat', label: 'X' },
  { content: 'Fixed the checkout bug at midnight and skipped the test to meet the deadline.', source: 'journal', label: 'X' },
  { content: 'Merged the urgent patch with no test because the demo was in an hour.', source: 'standup', label: 'X' },
  { content: 'Never wrote a test for the export bug; she just patched it and moved on.', source: 'review', label: 'X' },
  { content: 'Bought a secondhand road bike and rode it to the lake.', source: 'journal', label: null },
  { content: 'Ordered a new standing desk for the home office.', source: 'chat', label: null },
  { content: 'Watched a documentary about deep-sea fish on Sunday.', source: 'journal', label: null },
];

export const WAVE_2: readonly CorpusShard[] = [
  { content: 'Started the payment bug fix by writing the test that exposes it.', source: 'review', label: 'A' },
  { content: "Turned the customer's bug report into a failing test before any code change.", source: 'standup', label: 'A' },
  { content: 'Updated the runbook after the storage migration so the steps stay true.', source: 'review', label: 'B' },
  { content: 'Wrote down how to rotate the API keys, step by step, in the wiki.', source: 'standup', label: 'B' },
  { content: 'Gave a gentle, thorough review of the billing pull request.', source: 'journal', label: 'C' },
  { content: 'Released the mobile API to a small canary group before everyone.', source: 'chat', label: 'D' },
  { content: 'Coached a junior through their first production deploy, side by side.', source: 'journal', label: 'E' },
  { content: 'Fixed the billing bug without a test, promising to add one later.', source: 'chat', label: 'X' },
  { content: 'Skipped writing a failing test for the search bug under release pressure.', source: 'standup', label: 'X' },
  { content: 'Patched the login bug directly with no test at all.', source: 'review', label: 'X' },
  { content: 'Wrote a blameless postmortem after the Tuesday outage.', source: 'journal', label: 'N' },
  { content: 'Led the incident review without pointing fingers at anyone.', source: 'review', label: 'N' },
  { content: 'Insisted the outage write-up name causes in the system, not people.', source: 'chat', label: 'N' },
  { content: 'Ran a calm retrospective after the failed migration, focused on what the process missed.', source: 'standup', label: 'N' },
  { content: 'Published the incident timeline and lessons learned for the whole company.', source: 'journal', label: 'N' },
  { content: 'Thanked the engineer who caused the outage for reporting it quickly, then fixed the process.', source: 'chat', label: 'N' },
  { content: 'Baked sourdough bread for the first time.', source: 'chat', label: null },
  { content: 'Tried a new ramen place near the station.', source: 'journal', label: null },
];
