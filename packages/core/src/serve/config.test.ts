import { expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, parseEnv, serverEnvSchema, workspaceRoot } from './config.ts';

it('fills defaults from the server port', () => {
  const env = parseEnv(serverEnvSchema(3103), {});
  expect(env).toMatchObject({
    HOST: '127.0.0.1',
    PORT: 3103,
    BULKHEAD_PUBLIC_URL: 'http://127.0.0.1:3103',
    BULKHEAD_DATA_DIR: `${workspaceRoot()}/.bulkhead`,
    BULKHEAD_MAX_BODY_BYTES: 1048576,
    BULKHEAD_MIGRATE: true,
    LOG_LEVEL: 'info',
  });
});

it('names every bad variable on a line of its own', () => {
  let error: unknown;
  try {
    parseEnv(serverEnvSchema(3103), {
      PORT: 'eighty',
      LOG_LEVEL: 'loud',
      DATABASE_URL: 'mysql://x',
      BULKHEAD_MIGRATE: 'maybe',
    });
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(ConfigError);
  const lines = (error as ConfigError).problems;
  expect(lines).toHaveLength(4);
  expect(lines.find((l) => l.startsWith('PORT:'))).toMatch(/\(got "eighty"\)$/);
  expect(lines.find((l) => l.startsWith('LOG_LEVEL:'))).toContain('"loud"');
  expect(lines.find((l) => l.startsWith('DATABASE_URL:'))).toContain('"mysql://x"');
  expect(lines.find((l) => l.startsWith('BULKHEAD_MIGRATE:'))).toContain('"maybe"');
});

it('never echoes a secret or the password in a URL', () => {
  let error: ConfigError | undefined;
  try {
    parseEnv(serverEnvSchema(3103), {
      DATABASE_URL: 'postgresql+psycopg://bulkhead:S3cr3tpass@db/bulkhead',
      BULKHEAD_TOKEN: '',
    });
  } catch (err) {
    error = err as ConfigError;
  }
  expect(error!.message).not.toContain('S3cr3tpass');
  expect(error!.problems.find((l) => l.startsWith('DATABASE_URL:'))).toContain(
    '(got "postgresql+psycopg://db/bulkhead")',
  );
  const keyed = (() => {
    try {
      parseEnv(serverEnvSchema(3103).and(z.object({ BULKHEAD_AUDIT_KEY: z.string().min(16) })), {
        BULKHEAD_AUDIT_KEY: 'short-key-123',
      });
    } catch (err) {
      return (err as ConfigError).problems.join('\n');
    }
    return '';
  })();
  expect(keyed).toContain('BULKHEAD_AUDIT_KEY');
  expect(keyed).not.toContain('short-key-123');
});

it('shows a URL as scheme, host, port and database, even when its password holds a slash', () => {
  let error: ConfigError | undefined;
  try {
    parseEnv(serverEnvSchema(3103), {
      DATABASE_URL: 'postgres://bulkhead:se/cr@t@db.example:5432/bulkhead',
      BULKHEAD_SMTP_URL: 'smtp://mailer:pa/ss@smtp.example:587',
    });
  } catch (err) {
    error = err as ConfigError;
  }
  expect(error!.problems).toEqual([
    'DATABASE_URL: Invalid URL (got "postgres://db.example:5432/bulkhead")',
    'BULKHEAD_SMTP_URL: Invalid URL (got "smtp://smtp.example:587")',
  ]);
});

it('reads OpenTelemetry’s sampler variables by their names, and refuses others', () => {
  expect(parseEnv(serverEnvSchema(3103), {}).OTEL_TRACES_SAMPLER).toBe('parentbased_always_on');
  const env = parseEnv(serverEnvSchema(3103), {
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: '0.25',
  });
  expect([env.OTEL_TRACES_SAMPLER, env.OTEL_TRACES_SAMPLER_ARG]).toEqual(['parentbased_traceidratio', 0.25]);
  let error: ConfigError | undefined;
  try {
    parseEnv(serverEnvSchema(3103), { OTEL_TRACES_SAMPLER: 'sometimes', OTEL_TRACES_SAMPLER_ARG: '2' });
  } catch (err) {
    error = err as ConfigError;
  }
  expect(error?.problems.map((l) => l.split(':')[0]).sort()).toEqual([
    'OTEL_TRACES_SAMPLER',
    'OTEL_TRACES_SAMPLER_ARG',
  ]);
});
