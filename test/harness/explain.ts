/**
 * The plan Postgres actually executes for a statement run the way the relay runs its history
 * pages: as a named prepared statement on its generic plan. auto_explain sends the executed plan
 * (with row counts) back to the client as a notice.
 */
import { randomUUID } from 'node:crypto';
import { Pool, PoolClient } from 'pg';

export interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  /** A scan's row condition, as EXPLAIN prints it. */
  Filter?: string;
  Plans?: PlanNode[];
}

/** Every node of the plan tree, root first. */
export function flattenPlan(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(flattenPlan)];
}

/** Runs the statement on its generic plan; its rows and its executed plan's nodes. */
export async function executedGenericPlan(pool: Pool, text: string, values: readonly unknown[]): Promise<{ rows: unknown[]; plan: PlanNode[] }> {
  const client: PoolClient = await pool.connect();
  const notices: string[] = [];
  const onNotice = (m: { message?: string }) => void (m.message && notices.push(m.message));
  client.on('notice', onNotice);
  let rows: unknown[];
  try {
    for (const s of [`load 'auto_explain'`, 'set plan_cache_mode = force_generic_plan', 'set auto_explain.log_min_duration = 0', 'set auto_explain.log_analyze = on', 'set auto_explain.log_format = json', 'set auto_explain.log_level = notice']) {
      await client.query(s);
    }
    ({ rows } = await client.query({ name: `explained_${randomUUID()}`, text, values: [...values] }));
  } finally {
    client.off('notice', onNotice);
    await client.query('reset all');
    client.release();
  }
  const plan = notices.map((m) => m.slice(m.indexOf('{'))).find((m) => m.includes('"Plan"'));
  if (!plan) throw new Error(`auto_explain sent no plan: ${notices.join(' | ')}`);
  return { rows, plan: flattenPlan((JSON.parse(plan) as { Plan: PlanNode }).Plan) };
}
