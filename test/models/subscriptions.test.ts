import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Subscription } from '../../schemas/index.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { buildStore } from '../../src/sandbox/model/store.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  killChildren,
  readWarehouse,
  runCli,
  scratchWarehouses,
  testSandbox,
  writeConfig,
} from '../cli/helpers.js';
import { decimal, milli } from './store.js';

/**
 * The subscription models (subscription_months, subscription_mrr_monthly, subscription_churn_monthly,
 * subscription_cohorts) over a store synced through the CLI, against the same figures computed here from the
 * sandbox's own subscription objects (not the warehouse), with the rules the view comments state: month-end
 * billing state per UTC month, the first observed version standing for the subscription since date_created, a
 * subscription first seen canceled billing until the end of its last paid period, monthly amounts in exact
 * thousandths. Then the store moves (a subscription canceled, one created, two change quantity, one fails) and
 * a second sync must move exactly the current month, leaving past months as they were.
 */

const SEED = 7;
const SCALE = 300;
const STORE = 'shop';
const DAY_MS = 86_400_000;
const BILLING = new Set(['active', 'past_due', 'retrying']);
/** Months per interval as a fraction (a year of 365.25 days is 12 months). */
const PER_MONTH: Record<string, [bigint, bigint]> = {
  day: [1461n, 48n],
  week: [1461n, 336n],
  month: [1n, 1n],
  year: [1n, 12n],
};

/** A renewal total per month in thousandths, rounded half up; null when the interval has no monthly rate. */
function monthlyAmount(s: Subscription): bigint | null {
  const factor = PER_MONTH[s.interval ?? ''];
  const count = BigInt(s.interval_count ?? 0);
  if (!factor || count < 1n || s.total === null || s.total === undefined) return null;
  const numerator = milli(s.total) * factor[0];
  const denominator = factor[1] * count;
  return (2n * numerator + denominator) / (2n * denominator);
}

/** Calendar months after a UTC time, the day clamped to the month's last (as DuckDB adds months). */
function addMonths(ms: number, months: number): number {
  const d = new Date(ms);
  const last = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months + 1, 0)).getUTCDate();
  return Date.UTC(
    d.getUTCFullYear(),
    d.getUTCMonth() + months,
    Math.min(d.getUTCDate(), last),
    d.getUTCHours(),
    d.getUTCMinutes(),
    d.getUTCSeconds(),
    d.getUTCMilliseconds(),
  );
}

/** `n` intervals after `ms`; null for an interval the models do not know. */
function addIntervals(ms: number, interval: string | null | undefined, n: number): number | null {
  if (interval === 'day') return ms + n * DAY_MS;
  if (interval === 'week') return ms + 7 * n * DAY_MS;
  if (interval === 'month') return addMonths(ms, n);
  if (interval === 'year') return addMonths(ms, 12 * n);
  return null;
}

/** The end of the last paid period of a subscription first seen canceled at `seenAt`. */
function paidThrough(s: Subscription, seenAt: number): number {
  const created = Date.parse(s.date_created!);
  const end = addIntervals(created, s.interval, (s.num_orders ?? 0) * (s.interval_count ?? 0));
  return end === null ? created : Math.max(created, Math.min(end, seenAt));
}

const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7);
const monthStart = (month: string) => Date.parse(`${month}-01T00:00:00Z`);
const nextMonth = (month: string) => monthOf(addMonths(monthStart(month), 1));
const fraction = (n: bigint, d: bigint) => {
  const q = (2n * n * 10000n + d) / (2n * d);
  return `${q / 10000n}.${String(q % 10000n).padStart(4, '0')}`;
};

/** One observed version of a subscription: the object a sync saw, from when. */
interface Observation {
  at: number;
  sub: Subscription;
}

interface Span {
  from: number;
  to: number | null;
  billing: boolean;
  currency: string;
  amount: bigint | null;
}

/** The spans a subscription's observations stand for (see the module comment). */
function spansOf(observations: Observation[]): Span[] {
  const spans: Span[] = [];
  observations.forEach(({ at, sub }, k) => {
    const created = Date.parse(sub.date_created!);
    const to = observations[k + 1]?.at ?? null;
    const base = { currency: sub.currency!, amount: monthlyAmount(sub) };
    if (k === 0 && sub.status === 'canceled' && created < at) {
      const paid = paidThrough(sub, at);
      spans.push({ ...base, from: created, to: paid, billing: true });
      spans.push({ ...base, from: paid, to, billing: false });
    } else {
      const from = k === 0 ? Math.min(created, at) : at;
      spans.push({ ...base, from, to, billing: BILLING.has(sub.status ?? '') });
    }
  });
  return spans;
}

interface MonthRow {
  id: number;
  currency: string;
  month: string;
  signup: string;
  active: boolean;
  mrr: bigint;
  previous: bigint;
  wasActive: boolean;
  movement: string | null;
}

/** subscription_months, computed from the observations of every (non-test) subscription. */
function subscriptionMonths(history: Map<number, Observation[]>, lastMonth: string): MonthRow[] {
  const rows: MonthRow[] = [];
  for (const [id, observations] of history) {
    if (observations.some((o) => o.sub.is_test)) continue;
    const spans = spansOf(observations);
    const signup = monthOf(Date.parse(observations[0]!.sub.date_created!));
    for (const currency of new Set(spans.map((s) => s.currency))) {
      const first = monthOf(Math.min(...spans.filter((s) => s.currency === currency).map((s) => s.from)));
      let previous = 0n;
      let wasActive = false;
      let billedBefore = false;
      for (let month = first; month <= lastMonth; month = nextMonth(month)) {
        const end = monthStart(nextMonth(month));
        const holding = spans.filter((s) => s.from < end && (s.to === null || s.to >= end)).at(-1);
        const active = !!holding && holding.billing && holding.currency === currency;
        const mrr = active ? (holding.amount ?? 0n) : 0n;
        const movement =
          active && !wasActive
            ? billedBefore
              ? 'reactivated'
              : 'new'
            : wasActive && !active
              ? 'churned'
              : active && mrr > previous
                ? 'expansion'
                : active && mrr < previous
                  ? 'contraction'
                  : null;
        rows.push({ id, currency, month, signup, active, mrr, previous, wasActive, movement });
        billedBefore ||= active;
        previous = mrr;
        wasActive = active;
      }
    }
  }
  return rows;
}

function groupBy<T>(rows: T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const k = key(row);
    groups.set(k, [...(groups.get(k) ?? []), row]);
  }
  return new Map([...groups].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const total = (rows: MonthRow[], pick: (r: MonthRow) => bigint) => rows.reduce((n, r) => n + pick(r), 0n);

/** The three views' rows as the test reads them (text, in month and currency order). */
function expectedViews(rows: MonthRow[]) {
  const perMonth = [...groupBy(rows, (r) => `${r.month} ${r.currency}`).values()];
  const mrr = perMonth.map((g) => ({
    month: `${g[0]!.month}-01`,
    currency: g[0]!.currency,
    mrr: decimal(total(g, (r) => r.mrr)),
    previous_mrr: decimal(total(g, (r) => r.previous)),
    new_mrr: decimal(total(g, (r) => (r.movement === 'new' ? r.mrr : 0n))),
    expansion_mrr: decimal(total(g, (r) => (r.movement === 'expansion' ? r.mrr - r.previous : 0n))),
    contraction_mrr: decimal(total(g, (r) => (r.movement === 'contraction' ? r.previous - r.mrr : 0n))),
    churned_mrr: decimal(total(g, (r) => (r.movement === 'churned' ? r.previous : 0n))),
    reactivated_mrr: decimal(total(g, (r) => (r.movement === 'reactivated' ? r.mrr : 0n))),
    subscriptions: g.filter((r) => r.active).length,
  }));
  const churn = perMonth.map((g) => {
    const start = g.filter((r) => r.wasActive).length;
    const churned = g.filter((r) => r.movement === 'churned').length;
    return {
      month: `${g[0]!.month}-01`,
      currency: g[0]!.currency,
      active_at_start: start,
      churned,
      new_subscriptions: g.filter((r) => r.movement === 'new').length,
      reactivated: g.filter((r) => r.movement === 'reactivated').length,
      active_at_end: g.filter((r) => r.active).length,
      churn_rate: start ? fraction(BigInt(churned), BigInt(start)) : null,
      churned_mrr: decimal(total(g, (r) => (r.movement === 'churned' ? r.previous : 0n))),
    };
  });
  const sizes = new Map(
    [...groupBy(rows, (r) => r.signup)].map(([signup, g]) => [signup, new Set(g.map((r) => r.id)).size]),
  );
  const cohorts = [...groupBy(rows, (r) => `${r.signup} ${r.month}`).values()]
    .filter((g) => g[0]!.month >= g[0]!.signup)
    .map((g) => {
      const active = new Set(g.filter((r) => r.active).map((r) => r.id)).size;
      const size = sizes.get(g[0]!.signup)!;
      return {
        signup_month: `${g[0]!.signup}-01`,
        month: `${g[0]!.month}-01`,
        cohort_subscriptions: size,
        active,
        active_share: fraction(BigInt(active), BigInt(size)),
      };
    });
  return { mrr, churn, cohorts };
}

describe('subscription models: MRR, churn and cohorts from the history of a synced store', () => {
  const scratch = scratchWarehouses();
  let sandbox: Sandbox;
  let warehouse: string;
  let config: string;
  let dir: string;
  /** Per subscription id, the objects the syncs saw and bounds of when (before and after each sync). */
  const history = new Map<number, { lo: number; hi: number; sub: Subscription }[]>();

  type Row = Record<string, string | number | null>;
  const q = <T = Row>(sql: string) => readWarehouse<T>(warehouse, sql);
  const snapshot = () => sandbox.store.snapshot('subscriptions') as Subscription[];

  /**
   * A sync through the CLI; each subscription whose object changed (or is new) is observed by it. After the
   * first, a full refresh: the incremental windows find created, canceled and recovered subscriptions, but only
   * a full scan sees a changed quantity (docs/streams.md).
   */
  async function sync(): Promise<void> {
    const lo = Date.now();
    const seen = snapshot();
    const full = history.size > 0 ? ['--full-refresh'] : [];
    assertExit(await runCli(['sync', ...full, '--config', config], { cwd: dir }), 0);
    const hi = Date.now();
    for (const sub of seen) {
      const versions = history.get(sub.id) ?? [];
      if (JSON.stringify(versions.at(-1)?.sub) !== JSON.stringify(sub)) versions.push({ lo, hi, sub });
      history.set(sub.id, versions);
    }
  }

  const readViews = async () => ({
    mrr: await q(
      `SELECT CAST(month AS VARCHAR) AS month, currency, mrr::VARCHAR AS mrr, previous_mrr::VARCHAR AS previous_mrr,
              new_mrr::VARCHAR AS new_mrr, expansion_mrr::VARCHAR AS expansion_mrr,
              contraction_mrr::VARCHAR AS contraction_mrr, churned_mrr::VARCHAR AS churned_mrr,
              reactivated_mrr::VARCHAR AS reactivated_mrr, subscriptions::INTEGER AS subscriptions
       FROM subscription_mrr_monthly WHERE _store = '${STORE}' ORDER BY month, currency`,
    ),
    churn: await q(
      `SELECT CAST(month AS VARCHAR) AS month, currency, active_at_start::INTEGER AS active_at_start,
              churned::INTEGER AS churned, new_subscriptions::INTEGER AS new_subscriptions,
              reactivated::INTEGER AS reactivated, active_at_end::INTEGER AS active_at_end,
              churn_rate::VARCHAR AS churn_rate, churned_mrr::VARCHAR AS churned_mrr
       FROM subscription_churn_monthly WHERE _store = '${STORE}' ORDER BY month, currency`,
    ),
    cohorts: await q(
      `SELECT CAST(signup_month AS VARCHAR) AS signup_month, CAST(month AS VARCHAR) AS month,
              cohort_subscriptions::INTEGER AS cohort_subscriptions, active::INTEGER AS active,
              active_share::VARCHAR AS active_share
       FROM subscription_cohorts WHERE _store = '${STORE}' ORDER BY signup_month, month`,
    ),
  });

  /**
   * The views read now equal the computation from the sandbox's objects. A version's time is known to lie
   * between the bounds of the sync that saw it, and the last month is the month of the reading: every
   * placement of them consistent with the bounds is a candidate (one, unless a month began meanwhile).
   */
  async function assertViewsMatchSandbox(): Promise<ReturnType<typeof expectedViews>> {
    const readLo = Date.now();
    const actual = await readViews();
    const readHi = Date.now();
    const candidates: ReturnType<typeof expectedViews>[] = [];
    for (const pick of ['lo', 'hi'] as const)
      for (const readAt of [readLo, readHi]) {
        const observations = new Map(
          [...history].map(([id, versions]) => [id, versions.map((v) => ({ at: v[pick], sub: v.sub }))]),
        );
        const expected = expectedViews(subscriptionMonths(observations, monthOf(readAt)));
        if (!candidates.some((c) => isDeepStrictEqual(c, expected))) candidates.push(expected);
      }
    if (candidates.length === 1) assert.deepEqual(actual, candidates[0]);
    else
      assert.ok(
        candidates.some((c) => isDeepStrictEqual(c, actual)),
        'the views match no placement',
      );
    return candidates[0]!;
  }

  before(async () => {
    ({ dir, warehouse } = await scratch.create());
    sandbox = await testSandbox({ seed: SEED, scale: SCALE });
    config = await writeConfig(dir, { warehouse, stores: [{ name: STORE, baseUrl: sandbox.baseUrl }] });
    await sync();
  });

  after(async () => {
    killChildren();
    await sandbox?.close();
    await scratch.removeAll();
  });

  it('the store has what the models distinguish: currencies, weekly and monthly intervals, every status, test subscriptions', () => {
    const subs = snapshot();
    assert.ok(new Set(subs.map((s) => s.currency)).size >= 3);
    assert.ok(subs.some((s) => s.interval === 'week') && subs.some((s) => s.interval === 'month'));
    for (const status of ['active', 'past_due', 'retrying', 'canceled'])
      assert.ok(
        subs.some((s) => s.status === status),
        status,
      );
    assert.ok(subs.some((s) => s.is_test));
  });

  it('MRR, churn and cohorts by month equal the computation from the sandbox subscriptions', async () => {
    const expected = await assertViewsMatchSandbox();
    // Exact: every amount is thousandths (no floating noise), and the figures move.
    for (const row of expected.mrr) assert.match(row.mrr, /^\d+\.\d{3}$/);
    assert.ok(expected.mrr.some((r) => r.churned_mrr !== '0.000'));
    assert.ok(expected.mrr.some((r) => r.new_mrr !== '0.000'));
    assert.ok(expected.cohorts.some((r) => r.active < r.cohort_subscriptions));
  });

  it('the inferred end of a subscription first seen canceled is within one billing period after its hidden cancel day', () => {
    const parts = buildStore({ seed: SEED, scale: SCALE });
    let checked = 0;
    for (const [, versions] of history) {
      const { sub, lo } = versions[0]!;
      if (sub.status !== 'canceled') continue;
      const facts = parts.book.factsOf(parts.book.items[sub.id - 1]!);
      const cancelMs = facts.cancelDay! * DAY_MS;
      const paid = paidThrough(sub, lo);
      const created = Date.parse(sub.date_created!);
      const periodBefore = addIntervals(
        created,
        sub.interval,
        ((sub.num_orders ?? 0) - 1) * sub.interval_count!,
      )!;
      assert.ok(cancelMs <= paid, `subscription ${sub.id} billed until before its cancellation`);
      assert.ok(
        cancelMs + DAY_MS > periodBefore,
        `subscription ${sub.id} cancelled before its last paid period`,
      );
      checked++;
    }
    assert.ok(checked > 10, `${checked} canceled subscriptions`);
  });

  it('movements sum to the change of MRR in every month; churn and cohorts reconcile with MRR and the base tables', async () => {
    assert.deepEqual(
      await q(`SELECT month, currency FROM subscription_mrr_monthly
               WINDOW w AS (PARTITION BY _store, currency ORDER BY month)
               QUALIFY mrr <> previous_mrr + new_mrr + expansion_mrr - contraction_mrr - churned_mrr + reactivated_mrr
                  OR previous_mrr IS DISTINCT FROM coalesce(lag(mrr) OVER w, 0)
                  OR month <> coalesce(lag(month) OVER w + INTERVAL 1 MONTH, month)`),
      [],
    );
    assert.deepEqual(
      await q(`SELECT c.month, c.currency FROM subscription_churn_monthly c
               JOIN subscription_mrr_monthly m USING (_store, month, currency)
               QUALIFY c.active_at_end <> m.subscriptions OR c.churned_mrr <> m.churned_mrr
                  OR c.active_at_end <> c.active_at_start + c.new_subscriptions + c.reactivated - c.churned
                  OR c.active_at_start IS DISTINCT FROM
                     coalesce(lag(c.active_at_end) OVER (PARTITION BY c._store, c.currency ORDER BY c.month), 0)`),
      [],
    );
    // The current month against the subscriptions table as it is now (no history involved).
    const current = await q<{ currency: string; total: string; interval: string; interval_count: number }>(
      `SELECT currency, total::VARCHAR AS total, interval, interval_count::INTEGER AS interval_count
       FROM subscriptions WHERE status IN ('active', 'past_due', 'retrying') AND _deleted_at IS NULL AND NOT is_test`,
    );
    const byCurrency = new Map<string, { mrr: bigint; n: number }>();
    for (const s of current) {
      const c = byCurrency.get(s.currency) ?? { mrr: 0n, n: 0 };
      c.mrr += monthlyAmount(s as unknown as Subscription)!;
      c.n++;
      byCurrency.set(s.currency, c);
    }
    const latest = await q<{ currency: string; mrr: string; subscriptions: number }>(
      `SELECT currency, mrr::VARCHAR AS mrr, subscriptions::INTEGER AS subscriptions FROM subscription_mrr_monthly
       WHERE month = (SELECT max(month) FROM subscription_mrr_monthly) AND subscriptions > 0 ORDER BY currency`,
    );
    assert.deepEqual(
      latest,
      [...byCurrency]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([currency, c]) => ({ currency, mrr: decimal(c.mrr), subscriptions: c.n })),
    );
    // Cohorts: every non-test subscription in the month of its date_created; their active ones add up to MRR's.
    assert.deepEqual(
      await q(`SELECT signup_month FROM (SELECT DISTINCT signup_month, cohort_subscriptions FROM subscription_cohorts) c
               FULL JOIN (SELECT CAST(date_trunc('month', timezone('UTC', date_created)) AS DATE) AS signup_month,
                                 count(*) AS n FROM subscriptions WHERE NOT is_test GROUP BY ALL) s USING (signup_month)
               WHERE c.cohort_subscriptions IS DISTINCT FROM s.n`),
      [],
    );
    assert.deepEqual(
      await q(`SELECT month FROM (SELECT month, sum(active) AS n FROM subscription_cohorts GROUP BY month) c
               FULL JOIN (SELECT month, sum(subscriptions) AS n FROM subscription_mrr_monthly GROUP BY month) m USING (month)
               WHERE c.n IS DISTINCT FROM m.n`),
      [],
    );
    // Months are UTC months whatever the reader's TimeZone.
    const utc = await (async () => {
      const instance = await DuckDBInstance.create(warehouse, { access_mode: 'READ_ONLY' });
      const connection = await instance.connect();
      try {
        await connection.run("SET TimeZone = 'UTC'");
        const reader = await connection.runAndReadAll(
          'SELECT * FROM subscription_mrr_monthly UNION ALL BY NAME SELECT * FROM subscription_cohorts ORDER BY ALL',
        );
        return reader.getRowObjectsJson();
      } finally {
        connection.closeSync();
        instance.closeSync();
      }
    })();
    for (const zone of ['Pacific/Kiritimati', 'Pacific/Pago_Pago']) {
      const instance = await DuckDBInstance.create(warehouse, { access_mode: 'READ_ONLY' });
      const connection = await instance.connect();
      try {
        await connection.run(`SET TimeZone = '${zone}'`);
        const reader = await connection.runAndReadAll(
          'SELECT * FROM subscription_mrr_monthly UNION ALL BY NAME SELECT * FROM subscription_cohorts ORDER BY ALL',
        );
        assert.deepEqual(reader.getRowObjectsJson(), utc, zone);
      } finally {
        connection.closeSync();
        instance.closeSync();
      }
    }
  });

  it('a moving store: cancel, create, change quantities and fail between syncs move this month only, by the changes', async () => {
    const before = await readViews();
    const old = new Map(snapshot().map((s) => [s.id, s]));
    const summary = sandbox.store.mutate({
      cancelSubscriptions: 1,
      createSubscriptions: 1,
      requantifySubscriptions: 2,
      failSubscriptions: 1,
      seed: 27,
    });
    await sync();
    const expected = await assertViewsMatchSandbox();
    const after = await readViews();
    const now = new Map(snapshot().map((s) => [s.id, s]));
    const month = after.mrr.at(-1)!['month'];

    // Past months keep the state of their time.
    const past = (rows: Row[]) => rows.filter((r) => String(r['month']) < String(month));
    assert.deepEqual(past(after.mrr), past(before.mrr));
    assert.deepEqual(past(after.churn), past(before.churn));
    assert.deepEqual(past(after.cohorts), past(before.cohorts));

    // This month's movements change by exactly what the mutations did, per currency.
    const delta = new Map<string, Record<string, bigint>>();
    const add = (currency: string, field: string, amount: bigint) => {
      const d = delta.get(currency) ?? {};
      d[field] = (d[field] ?? 0n) + amount;
      delta.set(currency, d);
    };
    for (const id of summary.created['subscriptions']!)
      add(now.get(id)!.currency!, 'new_mrr', monthlyAmount(now.get(id)!)!);
    const changed = summary.changed['subscriptions']!.filter((id) => !old.get(id)!.is_test);
    let kinds = 0;
    for (const id of changed) {
      const [was, is] = [old.get(id)!, now.get(id)!];
      const [a, b] = [monthlyAmount(was)!, monthlyAmount(is)!];
      if (is.status === 'canceled') add(was.currency!, 'churned_mrr', a);
      else if (b > a) add(is.currency!, 'expansion_mrr', b - a);
      else if (b < a) add(is.currency!, 'contraction_mrr', a - b);
      else assert.ok(BILLING.has(is.status!) && BILLING.has(was.status!), 'a failing renewal still bills');
      kinds++;
    }
    assert.equal(kinds, 4, JSON.stringify(summary));
    const row = (rows: Row[], currency: string) =>
      (rows.find((r) => r['month'] === month && r['currency'] === currency) ?? {}) as Record<string, string>;
    for (const [currency, fields] of delta)
      for (const [field, amount] of Object.entries(fields))
        assert.equal(
          milli(row(after.mrr, currency)[field]) - milli(row(before.mrr, currency)[field]),
          amount,
          `${currency} ${field}`,
        );
    assert.ok([...delta.values()].some((d) => d['churned_mrr'] && d['churned_mrr'] > 0n));
    assert.ok([...delta.values()].some((d) => d['new_mrr'] && d['new_mrr'] > 0n));
    assert.ok([...delta.values()].some((d) => d['expansion_mrr'] || d['contraction_mrr']));
    assert.equal(expected.mrr.at(-1)!.month, month);

    // A repeated sync of the unchanged store changes nothing.
    await sync();
    assert.deepEqual(await readViews(), after);
  });

  it('leaks no secret and no escape into any output', () => {
    assertNoSecretsOrEscapes();
  });
});
