import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  checkpointPublicKey,
  checkpointSigner,
  timestampCheckpoints,
  type CheckpointSigner,
} from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import { X509Certificate, type KeyObject } from 'node:crypto';
import type { CliEnv } from './env.ts';
import { CliError } from './io.ts';

/**
 * The key that signs audit prune checkpoints: `BULKHEAD_AUDIT_KEY`, or one
 * generated once into the data dir (fine for the embedded default; set the
 * variable when several machines prune and verify the same database).
 */
export async function auditKey(env: CliEnv, create: boolean): Promise<string | undefined> {
  if (env.BULKHEAD_AUDIT_KEY) return env.BULKHEAD_AUDIT_KEY;
  const file = join(env.BULKHEAD_DATA_DIR, 'audit.key');
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  if (!create) return undefined;
  await mkdir(env.BULKHEAD_DATA_DIR, { recursive: true });
  const key = randomBytes(32).toString('hex');
  await writeFile(file, key, { mode: 0o600, flag: 'wx' });
  return key;
}

/** {@link auditKey}, or a sentence saying where to set it when there is none. */
export async function requireKey(env: CliEnv, create: boolean): Promise<string> {
  const key = await auditKey(env, create);
  if (!key)
    throw new CliError(
      'no audit key: set BULKHEAD_AUDIT_KEY to the key the sealer uses (the embedded default keeps one in the data dir)',
    );
  return key;
}

/** The checkpoint signer from `BULKHEAD_AUDIT_SIGNING_KEY_FILE`, or undefined when it is unset. */
export async function auditSigner(env: CliEnv): Promise<CheckpointSigner | undefined> {
  const file = env.BULKHEAD_AUDIT_SIGNING_KEY_FILE;
  if (!file) return undefined;
  const pem = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new CliError(`BULKHEAD_AUDIT_SIGNING_KEY_FILE: cannot read ${file} (${err.code ?? err.message})`);
  });
  try {
    return checkpointSigner(pem);
  } catch (err) {
    throw new CliError(
      `BULKHEAD_AUDIT_SIGNING_KEY_FILE: ${file} is no Ed25519 private key in PEM (${(err as Error).message}); make one with \`bulkhead audit keys new\``,
    );
  }
}

/** The public key in `file` (PEM), for `audit verify --public-key`. */
export async function readPublicKey(file: string): Promise<KeyObject> {
  const pem = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new CliError(`--public-key: cannot read ${file} (${err.code ?? err.message})`);
  });
  try {
    return checkpointPublicKey(pem);
  } catch (err) {
    throw new CliError(`--public-key: ${file} is no Ed25519 public key in PEM (${(err as Error).message})`);
  }
}

/**
 * With `BULKHEAD_AUDIT_TSA_URL`: what the sealer runs after each seal, having the new checkpoints
 * timestamped (a failure is reported through `report`, never fails the seal). Refused without a signing
 * key: only signed checkpoints are timestamped.
 */
export function auditTimestamper(
  env: CliEnv,
  signer: CheckpointSigner | undefined,
  report: (line: string) => void,
): ((sql: Sql) => Promise<void>) | undefined {
  const url = env.BULKHEAD_AUDIT_TSA_URL;
  if (!url) return undefined;
  if (!signer)
    throw new CliError(
      'BULKHEAD_AUDIT_TSA_URL timestamps signed checkpoints: set BULKHEAD_AUDIT_SIGNING_KEY_FILE as well',
    );
  return (sql) =>
    timestampCheckpoints(sql, url).then(
      () => undefined,
      (err: unknown) =>
        report(
          `timestamping checkpoints at ${url} failed: ${err instanceof Error ? err.message : String(err)}`,
        ),
    );
}

/** The TSA certificate in `file` (PEM), for `audit verify --tsa-cert`. */
export async function readTsaCertificate(file: string): Promise<X509Certificate> {
  const pem = await readFile(file).catch((err: NodeJS.ErrnoException) => {
    throw new CliError(`--tsa-cert: cannot read ${file} (${err.code ?? err.message})`);
  });
  try {
    return new X509Certificate(pem);
  } catch (err) {
    throw new CliError(`--tsa-cert: ${file} is no X.509 certificate (${(err as Error).message})`);
  }
}
