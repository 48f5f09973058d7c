import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module.js';

// No top-level await, so the same source builds as an ES module app and as a CommonJS one.
async function main(): Promise<void> {
  const app = await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter());
  // AppModule binds DatabaseErrorFilter: database trouble and shed reads answer 503
  // {"error":"database unavailable"} with Retry-After, a statement deadline 503 {"error":"query timed out"}.
  app.enableShutdownHooks();
  await app.listen(Number(process.env.PORT ?? 3100), '127.0.0.1');
  console.log(`reports-service listening on ${await app.getUrl()}`);
}

void main();
