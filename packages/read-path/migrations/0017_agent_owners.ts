import { Kysely, sql } from 'kysely';

/**
 * `agent_owners` (relay.md §2.5 step 5): the agent → owner mapping recorded at NIP-42 AUTH when
 * the AUTH event carries a verified NIP-OA `auth` tag. First write wins: a later tag naming
 * another owner never replaces the row. Read by the kind-40003 edit validator (the owner of the
 * authoring agent may edit its messages), a primary-key probe.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE agent_owners (
      community_id uuid        NOT NULL REFERENCES communities (id) ON DELETE CASCADE,
      agent_pubkey text        NOT NULL,
      owner_pubkey text        NOT NULL,
      created_at   timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT agent_owners_pkey PRIMARY KEY (community_id, agent_pubkey),
      CONSTRAINT agent_owners_agent_hex CHECK (agent_pubkey ~ '^[0-9a-f]{64}$'),
      CONSTRAINT agent_owners_owner_hex CHECK (owner_pubkey ~ '^[0-9a-f]{64}$'),
      CONSTRAINT agent_owners_not_self CHECK (owner_pubkey <> agent_pubkey)
    )
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE agent_owners`.execute(db);
}
