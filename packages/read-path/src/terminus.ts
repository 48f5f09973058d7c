/**
 * `@buzz-relay/read-path/terminus`: the read path's `@nestjs/terminus` health indicator (README,
 * "Health"). A separate entry so that the main entry never loads terminus, an optional peer
 * dependency.
 */
export { ReadPathHealthIndicator } from './read-path.health.js';
