/**
 * Kind registry and classification (relay.md §1.3, §5.2).
 *
 * Sets are `ReadonlySet<number>`; use the predicates below rather than re-listing ranges at call
 * sites. Where the spec ends a list with "…", the upstream kind registry filled the gap; each such
 * choice is commented.
 *
 * Over 350 lines: one table of every kind the relay treats specially, and the sets and predicates
 * built from it, read together.
 */

/** Named kinds the relay treats specially. Values are wire constants. */
export const KIND = {
  PROFILE: 0,
  TEXT_NOTE: 1,
  CONTACT_LIST: 3,
  DELETION: 5,
  REACTION: 7,
  STREAM_MESSAGE: 9,
  GIFT_WRAP: 1059,
  REPORT: 1984,
  NIP43_MEMBER_ADDED: 8000,
  NIP43_MEMBER_REMOVED: 8001,
  IA_ARCHIVED: 8002,
  IA_UNARCHIVED: 8003,
  NIP29_PUT_USER: 9000,
  NIP29_REMOVE_USER: 9001,
  NIP29_EDIT_METADATA: 9002,
  NIP29_DELETE_EVENT: 9005,
  NIP29_CREATE_GROUP: 9007,
  NIP29_DELETE_GROUP: 9008,
  NIP29_CREATE_INVITE: 9009,
  NIP29_JOIN_REQUEST: 9021,
  NIP29_LEAVE_REQUEST: 9022,
  RELAY_ADMIN_ADD_MEMBER: 9030,
  RELAY_ADMIN_REMOVE_MEMBER: 9031,
  RELAY_ADMIN_CHANGE_ROLE: 9032,
  RELAY_ADMIN_SET_WORKSPACE_PROFILE: 9033,
  IA_ARCHIVE_REQUEST: 9035,
  IA_UNARCHIVE_REQUEST: 9036,
  MODERATION_BAN: 9040,
  MODERATION_UNBAN: 9041,
  MODERATION_TIMEOUT: 9042,
  MODERATION_UNTIMEOUT: 9043,
  MODERATION_RESOLVE_REPORT: 9044,
  NIP43_MEMBERSHIP_LIST: 13534,
  IA_ARCHIVED_LIST: 13535,
  PRESENCE: 20001,
  TYPING: 20002,
  AGENT_OBSERVER_FRAME: 24200,
  AUTH: 22242,
  HTTP_AUTH: 27235,
  NIP43_LEAVE_REQUEST: 28936,
  AGENT_ENGRAM: 30174,
  PERSONA: 30175,
  TEAM_CATALOG: 30178,
  PRIVATE_MANAGED_AGENT: 30179,
  EVENT_REMINDER: 30300,
  PUSH_LEASE: 30350,
  DM_VISIBILITY: 30622,
  NIP29_GROUP_METADATA: 39000,
  NIP29_GROUP_ADMINS: 39001,
  NIP29_GROUP_MEMBERS: 39002,
  NIP29_GROUP_ROLES: 39003,
  THREAD_SUMMARY: 39005,
  WINDOW_BOUNDS: 39006,
  STREAM_MESSAGE_V2: 40002,
  STREAM_MESSAGE_EDIT: 40003,
  STREAM_MESSAGE_PINNED: 40004,
  STREAM_MESSAGE_BOOKMARKED: 40005,
  STREAM_MESSAGE_SCHEDULED: 40006,
  STREAM_REMINDER: 40007,
  STREAM_MESSAGE_DIFF: 40008,
  SYSTEM_MESSAGE: 40099,
  CANVAS: 40100,
  CHANNEL_SUMMARY: 40901,
  PRESENCE_SNAPSHOT: 40902,
  DM_OPEN: 41010,
  DM_ADD_MEMBER: 41011,
  DM_HIDE: 41012,
  PRODUCT_FEEDBACK: 42000,
  MEMBER_ADDED_NOTIFICATION: 44100,
  MEMBER_REMOVED_NOTIFICATION: 44101,
  AGENT_TURN_METRIC: 44200,
  FORUM_POST: 45001,
  FORUM_VOTE: 45002,
  FORUM_COMMENT: 45003,
  /** NIP-22 comment: in a channel when its parent is (NDK's `event.reply()` on a chat message). */
  COMMENT: 1111,
} as const;

/** 0, 3 and 10000–19999: keyed by (community, pubkey, kind). */
export function isReplaceable(kind: number): boolean {
  return kind === 0 || kind === 3 || (kind >= 10000 && kind <= 19999);
}

/** 20000–29999: never stored, never in REQ history. */
export function isEphemeral(kind: number): boolean {
  return kind >= 20000 && kind <= 29999;
}

/** 30000–39999: keyed by (community, pubkey, kind, d). */
export function isAddressable(kind: number): boolean {
  return kind >= 30000 && kind <= 39999;
}

/**
 * Kinds that need a channel (`h` tag) — §5.2 step 9 `invalid: channel-scoped events must include
 * an h tag`. The spec's "NIP-29 admin, …" is the upstream list: every NIP-29 admin kind except
 * 9007 (create: it makes the channel) and 9021 (join: its validator answers `invalid: channel not
 * found`). 40004–40007 (pins, bookmarks, scheduled, reminders) and the huddle lifecycle kinds
 * 48100–48106 are channel-scoped upstream too.
 */
export const REQUIRES_CHANNEL_KINDS: ReadonlySet<number> = new Set([
  KIND.STREAM_MESSAGE,
  KIND.STREAM_MESSAGE_V2,
  KIND.STREAM_MESSAGE_EDIT,
  KIND.STREAM_MESSAGE_PINNED,
  KIND.STREAM_MESSAGE_BOOKMARKED,
  KIND.STREAM_MESSAGE_SCHEDULED,
  KIND.STREAM_REMINDER,
  KIND.STREAM_MESSAGE_DIFF,
  KIND.CANVAS,
  KIND.FORUM_POST,
  KIND.FORUM_VOTE,
  KIND.FORUM_COMMENT,
  KIND.NIP29_PUT_USER,
  KIND.NIP29_REMOVE_USER,
  KIND.NIP29_EDIT_METADATA,
  KIND.NIP29_DELETE_EVENT,
  KIND.NIP29_DELETE_GROUP,
  KIND.NIP29_CREATE_INVITE,
  KIND.NIP29_LEAVE_REQUEST,
  48100,
  48101,
  48102,
  48103,
  48106,
]);

/**
 * Kinds whose channel is forced to none (§5.2 step 9): user-owned global state, relay/moderation
 * commands and NIP-IA requests. Beyond the spec's explicit list this carries the upstream members:
 * agent profile 10100, the NIP-AE/ER/AP/PL/PMA addressable kinds, 44200, the NIP-43 and
 * moderation command kinds and NIP-34 git kinds.
 */
export const GLOBAL_ONLY_KINDS: ReadonlySet<number> = new Set([
  KIND.PROFILE,
  KIND.TEXT_NOTE,
  KIND.CONTACT_LIST,
  10000, // NIP-51 mute list
  10001, // NIP-51 pin list
  10002, // NIP-65 relay list
  10003, // NIP-51 bookmark list
  10030, // NIP-51 emoji list
  10100, // agent profile
  30000, // NIP-51 follow set
  30003, // NIP-51 bookmark set
  30023, // NIP-23 long form
  30030, // NIP-30 emoji set
  30078, // NIP-78 read state
  30315, // NIP-38 user status
  KIND.AGENT_ENGRAM,
  KIND.PERSONA,
  30176, // NIP-AP team
  30177, // NIP-AP managed agent
  KIND.TEAM_CATALOG,
  KIND.PRIVATE_MANAGED_AGENT,
  KIND.EVENT_REMINDER,
  KIND.PUSH_LEASE,
  KIND.AGENT_TURN_METRIC,
  KIND.RELAY_ADMIN_ADD_MEMBER,
  KIND.RELAY_ADMIN_REMOVE_MEMBER,
  KIND.RELAY_ADMIN_CHANGE_ROLE,
  KIND.RELAY_ADMIN_SET_WORKSPACE_PROFILE,
  KIND.NIP43_LEAVE_REQUEST,
  KIND.IA_ARCHIVE_REQUEST,
  KIND.IA_UNARCHIVE_REQUEST,
  KIND.MODERATION_BAN,
  KIND.MODERATION_UNBAN,
  KIND.MODERATION_TIMEOUT,
  KIND.MODERATION_UNTIMEOUT,
  KIND.MODERATION_RESOLVE_REPORT,
  30617, // NIP-34 repo announcement
  30618, // NIP-34 repo state
  1617, // NIP-34 patch
  1618, // NIP-34 pull request
  1619, // NIP-34 PR update
  1621, // NIP-34 issue
  1630, // NIP-34 status open
  1631, // NIP-34 status merged
  1632, // NIP-34 status closed
  1633, // NIP-34 status draft
]);

/**
 * Relay-signed kinds a client may never submit: `restricted: relay-only kind` (§5.2 step 1).
 * Upstream's set (13534, 30622, 39005, 39006, 40901, 40902) plus the other kinds §1.3 marks
 * relay-signed: NIP-29 group state 39000–39003, NIP-43 announcements 8000/8001, system messages
 * 40099, and the NIP-IA announcements 8002/8003/13535. 44100/44101 are deliberately absent: they
 * have their own reason, see {@link MEMBERSHIP_NOTIFICATION_KINDS}.
 */
export const RELAY_ONLY_KINDS: ReadonlySet<number> = new Set([
  KIND.NIP43_MEMBERSHIP_LIST,
  KIND.IA_ARCHIVED_LIST,
  KIND.NIP43_MEMBER_ADDED,
  KIND.NIP43_MEMBER_REMOVED,
  KIND.IA_ARCHIVED,
  KIND.IA_UNARCHIVED,
  KIND.DM_VISIBILITY,
  KIND.NIP29_GROUP_METADATA,
  KIND.NIP29_GROUP_ADMINS,
  KIND.NIP29_GROUP_MEMBERS,
  KIND.NIP29_GROUP_ROLES,
  KIND.THREAD_SUMMARY,
  KIND.WINDOW_BOUNDS,
  KIND.SYSTEM_MESSAGE,
  KIND.CHANNEL_SUMMARY,
  KIND.PRESENCE_SNAPSHOT,
]);

/**
 * The NIP-29 commands a client sends (9000–9009 as far as NIP-29 defines them, 9021 join, 9022
 * leave). Each names its group by an `h` tag that must be a channel UUID: `invalid: group id (h
 * tag) must be a UUID` otherwise, never a global event.
 */
export const NIP29_COMMAND_KINDS: ReadonlySet<number> = new Set([
  KIND.NIP29_PUT_USER,
  KIND.NIP29_REMOVE_USER,
  KIND.NIP29_EDIT_METADATA,
  KIND.NIP29_DELETE_EVENT,
  KIND.NIP29_CREATE_GROUP,
  KIND.NIP29_DELETE_GROUP,
  KIND.NIP29_CREATE_INVITE,
  KIND.NIP29_JOIN_REQUEST,
  KIND.NIP29_LEAVE_REQUEST,
]);

/** Moderation commands (§5.2 step 7): executed by the relay, never stored as events. */
export const MODERATION_KINDS: ReadonlySet<number> = new Set([
  KIND.MODERATION_BAN,
  KIND.MODERATION_UNBAN,
  KIND.MODERATION_TIMEOUT,
  KIND.MODERATION_UNTIMEOUT,
  KIND.MODERATION_RESOLVE_REPORT,
]);

/** Relay administration and NIP-43 leave (§5.2 step 11): executed, never stored. */
export const RELAY_ADMIN_KINDS: ReadonlySet<number> = new Set([
  KIND.RELAY_ADMIN_ADD_MEMBER,
  KIND.RELAY_ADMIN_REMOVE_MEMBER,
  KIND.RELAY_ADMIN_CHANGE_ROLE,
  KIND.RELAY_ADMIN_SET_WORKSPACE_PROFILE,
  KIND.NIP43_LEAVE_REQUEST,
]);

/** Reports (NIP-56): queued for the moderators, never stored as events. */
export const REPORT_KINDS: ReadonlySet<number> = new Set([KIND.REPORT]);

/** Every kind the relay executes instead of storing: one of them with no command to run it is refused, never stored. */
export const EXECUTED_KINDS: ReadonlySet<number> = new Set([...MODERATION_KINDS, ...RELAY_ADMIN_KINDS, ...REPORT_KINDS]);

/** 44100/44101: `invalid: membership notifications are relay-signed only` (§5.2 step 1). */
export const MEMBERSHIP_NOTIFICATION_KINDS: ReadonlySet<number> = new Set([
  KIND.MEMBER_ADDED_NOTIFICATION,
  KIND.MEMBER_REMOVED_NOTIFICATION,
]);

/** Read needs `#p` = reader (§1.3, §2.6 step 8). */
export const P_GATED_KINDS: ReadonlySet<number> = new Set([
  KIND.AGENT_OBSERVER_FRAME,
  KIND.MEMBER_ADDED_NOTIFICATION,
  KIND.MEMBER_REMOVED_NOTIFICATION,
  KIND.GIFT_WRAP,
  KIND.DM_VISIBILITY,
  KIND.AGENT_TURN_METRIC,
]);

/** Result-level `#p` gate: even an `ids` read must match the event's `p` (§1.3). */
export const RESULT_GATED_KINDS: ReadonlySet<number> = new Set([
  KIND.DM_VISIBILITY,
  KIND.AGENT_TURN_METRIC,
]);

/** Readable only by their author (§1.3). */
export const AUTHOR_ONLY_KINDS: ReadonlySet<number> = new Set([
  KIND.EVENT_REMINDER,
  KIND.PUSH_LEASE,
  KIND.PRIVATE_MANAGED_AGENT,
]);

/** Author-only unless exactly one `["shared","true"]` tag (§1.3). */
export const SHARED_GATED_KINDS: ReadonlySet<number> = new Set([KIND.PERSONA, KIND.TEAM_CATALOG]);

/** Agent engrams: readable by the agent that wrote them and by the `#p`-tagged owner (§1.3, §2.6 step 8). */
export const ENGRAM_KINDS: ReadonlySet<number> = new Set([KIND.AGENT_ENGRAM]);

/**
 * Reports: "moderator queue only; never stored publicly" (§1.3). No client read path serves
 * them, to anyone, the reporter included; the moderator queue (`/moderation/reports`) is their
 * only reader.
 */
export const MODERATOR_ONLY_KINDS: ReadonlySet<number> = new Set([KIND.REPORT]);

/** Every kind whose rows some reader may not see: the union of the gated sets above. */
export const VISIBILITY_GATED_KINDS: ReadonlySet<number> = new Set([
  ...P_GATED_KINDS,
  ...RESULT_GATED_KINDS,
  ...AUTHOR_ONLY_KINDS,
  ...SHARED_GATED_KINDS,
  ...ENGRAM_KINDS,
  ...MODERATOR_ONLY_KINDS,
]);

/** Kinds excluded from FTS at storage (§2.7b): gift wraps, reminders, DM visibility. */
export const PRIVATE_KINDS: ReadonlySet<number> = new Set([
  KIND.GIFT_WRAP,
  KIND.EVENT_REMINDER,
  KIND.DM_VISIBILITY,
]);

export function requiresChannel(kind: number): boolean {
  return REQUIRES_CHANNEL_KINDS.has(kind);
}

export function isGlobalOnlyKind(kind: number): boolean {
  return GLOBAL_ONLY_KINDS.has(kind);
}

export function isRelayOnlyKind(kind: number): boolean {
  return RELAY_ONLY_KINDS.has(kind);
}

export function isPrivateKind(kind: number): boolean {
  return PRIVATE_KINDS.has(kind);
}

/** Every kind this registry names; the metric label keeps these and folds the rest. */
const KNOWN_KINDS: ReadonlySet<number> = new Set<number>([
  ...Object.values(KIND),
  ...REQUIRES_CHANNEL_KINDS,
  ...GLOBAL_ONLY_KINDS,
  ...RELAY_ONLY_KINDS,
]);

/**
 * Stored kinds the relay accepts (relay.md §5.2 step 6: any other gives `restricted: unknown
 * event kind`). Ephemeral kinds are judged by their own path (§5.1 step 5), not by this list.
 */
export function isKnownKind(kind: number): boolean {
  return KNOWN_KINDS.has(kind);
}

/** Label for `buzz_events_received_total{kind}`: the number for a known kind, else `other`. */
export function kindMetricLabel(kind: number): string {
  return KNOWN_KINDS.has(kind) ? String(kind) : 'other';
}

/** The complete label vocabulary of {@link kindMetricLabel} (bounded by construction). */
export function kindMetricLabels(): string[] {
  return [...[...KNOWN_KINDS].sort((a, b) => a - b).map(String), 'other'];
}
