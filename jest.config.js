/**
 * NestJS 12 is ESM-only, so the project and its tests are ESM: jest runs with
 * --experimental-vm-modules (see the npm scripts) and ts-jest emits ESM.
 * Unit specs live beside the code; Postgres-backed and e2e suites live under test/.
 */
const tsJest = ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }];
const common = {
  testEnvironment: 'node',
  rootDir: import.meta.dirname,
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': tsJest },
};
export default {
  // Global (jest ignores it per project). Generous: these are correctness tests, not timing
  // tests, and CI shares two cores with the Postgres pair.
  testTimeout: 60000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/**/*.test.ts'],
      globalSetup: '<rootDir>/test/harness/global-setup.ts',
      globalTeardown: '<rootDir>/test/harness/global-teardown.ts',
    },
  ],
};
