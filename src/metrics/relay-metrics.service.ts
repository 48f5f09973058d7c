import { Injectable } from '@nestjs/common';
import { counter, gauge, histogram, MILLISECONDS_BUCKETS, SECONDS_BUCKETS } from '@buzz-relay/read-path/internal';

/** Relay-side families; names and labels are the spec's (relay.md §6.3). */
@Injectable()
export class RelayMetrics {
  readonly wsConnectionsTotal = counter({ name: 'buzz_ws_connections_total', help: 'WebSocket connections accepted', labelNames: ['community'] });
  readonly wsUpgradesRefused = counter({
    name: 'buzz_ws_upgrades_refused_total',
    help: 'WebSocket upgrade requests answered with an HTTP error instead of a connection, by reason',
    labelNames: ['reason'],
  });
  readonly handlerRefusals = counter({
    name: 'buzz_ws_handler_refusals_total',
    help: 'EVENT/REQ/COUNT refused by the handler budget: reason=share, the key ran its share of it; reason=capacity, the budget was full',
    labelNames: ['reason'],
  });
  readonly handlerWaiting = gauge({ name: 'buzz_ws_handler_waiting', help: 'REQs waiting for a slot of the handler budget (BUZZ_MAX_CONCURRENT_HANDLERS)' });
  readonly wsConnectionsActive = gauge({ name: 'buzz_ws_connections_active', help: 'Open WebSocket connections' });
  readonly wsAuthenticatedActive = gauge({ name: 'buzz_ws_authenticated_connections_active', help: 'Authenticated WebSocket connections' });
  readonly wsAuthTimeouts = counter({ name: 'buzz_ws_auth_timeouts_total', help: 'Connections closed for not authenticating in time' });
  readonly wsBackpressureDisconnects = counter({ name: 'buzz_ws_backpressure_disconnects_total', help: 'Connections closed because their outbound buffer stayed full' });
  readonly wsOutputQueuedBytes = gauge({ name: 'buzz_ws_output_queued_bytes', help: 'Bytes queued for WebSocket clients and not yet written to the kernel, all connections' });
  readonly wsInputPaced = counter({ name: 'buzz_ws_input_paced_total', help: 'Times a connection stopped being read for sending frames faster than its input budget' });
  readonly wsPreauthPaced = counter({ name: 'buzz_ws_preauth_paced_total', help: "Times an unauthenticated connection stopped being read because its address's pre-AUTH input budget was spent" });
  readonly wsPreauthWaiting = gauge({ name: 'buzz_ws_preauth_waiting', help: "Unauthenticated connections not being read, waiting for their address's pre-AUTH input budget" });
  readonly wsSlowConsumerCloses = counter({ name: 'buzz_ws_slow_consumer_closes_total', help: 'Subscriptions ended with CLOSED because their output did not fit the budget' });
  readonly wsNotices = counter({ name: 'buzz_ws_notices_total', help: 'NOTICE frames sent, by reason class', labelNames: ['reason'] });
  readonly authAttempts = counter({ name: 'buzz_auth_attempts_total', help: 'Auth challenges issued', labelNames: ['method'] });
  readonly authOutcomes = counter({ name: 'buzz_auth_outcomes_total', help: 'Terminal auth outcomes', labelNames: ['method', 'outcome'] });
  readonly eventsReceived = counter({ name: 'buzz_events_received_total', help: 'Events accepted by kind class', labelNames: ['kind'] });
  readonly eventsRejected = counter({ name: 'buzz_events_rejected_total', help: 'Events rejected', labelNames: ['transport', 'reason'] });
  readonly eventsStored = counter({ name: 'buzz_events_stored_total', help: 'Events newly stored' });
  readonly eventProcessing = histogram({ name: 'buzz_event_processing_seconds', help: 'EVENT handling time until OK', buckets: SECONDS_BUCKETS });
  readonly channelEvictions = counter({ name: 'buzz_ws_channel_evictions_total', help: 'Subscriptions retired with CLOSED because their pubkey lost the channel' });
  readonly fanoutRecipients = histogram({ name: 'buzz_fanout_recipients', help: 'Subscriptions an event was sent to', buckets: [0, 1, 5, 10, 25, 50, 100, 500, 1000] });
  readonly countFallbackRejections = counter({ name: 'buzz_count_fallback_rejections_total', help: 'COUNT filters refused because their fallback had too many candidate rows' });
  readonly reqDuration = histogram({ name: 'buzz_req_history_seconds', help: 'REQ history time until EOSE', buckets: SECONDS_BUCKETS });
  readonly banListenerConnected = gauge({ name: 'buzz_ban_listener_connected', help: '1 while this pod LISTENs for ban changes on its own writer connection, 0 otherwise' });
  readonly readinessState = gauge({ name: 'buzz_readiness_state', help: '1 when ready, 0 otherwise' });
  // HTTP middleware (relay.md §6.3): `action` is the matched route pattern; see HttpObserver for what is skipped.
  readonly httpRequests = counter({ name: 'http_requests_total', help: 'HTTP requests answered, by status code, caller and route pattern', labelNames: ['code', 'caller', 'action'] });
  readonly httpRequestLatency = histogram({
    name: 'http_request_latency_ms',
    help: 'HTTP request time until the response was written, in milliseconds',
    labelNames: ['code', 'caller', 'action'],
    buckets: MILLISECONDS_BUCKETS,
  });
}
