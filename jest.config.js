/**
 * NestJS 12 is ESM-only, so the project and its tests are ESM: jest runs with
 * --experimental-vm-modules (see the npm scripts) and ts-jest emits ESM.
 * Unit specs live beside the code (the relay's in src/, the read-path package's in packages/); Postgres-backed and e2e suites live under test/.
 */
const tsJest = ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }];
const common = {
  testEnvironment: 'node',
  rootDir: import.meta.dirname,
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    // The read-path package from its sources, as tsconfig.json's paths type it: a test that reaches
    // into the package by a relative path and the relay's import by name load one module.
    '^@buzz-relay/read-path$': '<rootDir>/packages/read-path/src/index.ts',
    '^@buzz-relay/read-path/(internal|terminus)$': '<rootDir>/packages/read-path/src/$1.ts',
  },
  transform: { '^.+\\.ts$': tsJest },
};
export default {
  // Global (jest ignores it per project). Generous: these are correctness tests, not timing
  // tests, and CI shares two cores with the Postgres pair.
  testTimeout: 60000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/packages/*/src/**/*.spec.ts'] },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/**/*.test.ts'],
      globalSetup: '<rootDir>/test/harness/global-setup.ts',
      globalTeardown: '<rootDir>/test/harness/global-teardown.ts',
    },
  ],
};
