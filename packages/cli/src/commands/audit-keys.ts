import { generateKeyPairSync } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { keyFingerprint } from '@bulkhead/audit';
import { parse, type Command } from '../command.ts';
import { CliError, UsageError } from '../io.ts';

// `bulkhead audit keys new`: the Ed25519 key pair of signed checkpoints (issue 49). The private key
// goes to the sealer (BULKHEAD_AUDIT_SIGNING_KEY_FILE), the public key to whoever checks the log.

/** The files `keys new` writes, in the directory it is given. */
export const SIGNING_KEY_FILE = 'audit-signing.key';
export const PUBLIC_KEY_FILE = 'audit-signing.pub';

export const keysCommand: Command = {
  name: 'keys',
  summary: 'make the key pair that signs checkpoints (keys new)',
  help: `Usage: bulkhead audit keys new [--out <dir>] [--json]

Writes an Ed25519 key pair for signed checkpoints: ${SIGNING_KEY_FILE} (the
private key, PEM, mode 0600) and ${PUBLIC_KEY_FILE} (the public key, PEM), and
prints the public key's fingerprint (SHA-256 of its DER SPKI, hex). Give the
sealer the private key (BULKHEAD_AUDIT_SIGNING_KEY_FILE): it then signs each
seal as a checkpoint. Give the public key to whoever checks the log:
\`audit verify --public-key ${PUBLIC_KEY_FILE}\` needs nothing else. Never
overwrites a key file.

Options:
  --out <dir>   where to write the two files (default: the current directory)
  --json        print { private_key_file, public_key_file, fingerprint }`,
  async run(argv, { env, io }) {
    const { values, positionals } = parse(
      argv,
      {
        out: { type: 'string' },
        json: { type: 'boolean', default: false },
      },
      true,
    );
    if (positionals.length !== 1 || positionals[0] !== 'new')
      throw new UsageError('usage: bulkhead audit keys new [--out <dir>] [--json]');
    const dir = resolve(env.cwd, values.out ?? '.');
    await mkdir(dir, { recursive: true });
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const privateFile = join(dir, SIGNING_KEY_FILE);
    const publicFile = join(dir, PUBLIC_KEY_FILE);
    // `wx`: an existing key is never replaced, since checkpoints it signed would no longer verify.
    const create = (file: string, text: string, mode: number) =>
      writeFile(file, text, { mode, flag: 'wx' }).catch((err: NodeJS.ErrnoException) => {
        throw new CliError(
          err.code === 'EEXIST'
            ? `${file} exists; a key pair is never overwritten (choose another --out)`
            : `cannot write ${file} (${err.code ?? err.message})`,
        );
      });
    await create(privateFile, privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, 0o600);
    await create(publicFile, publicKey.export({ type: 'spki', format: 'pem' }) as string, 0o644);
    const fingerprint = keyFingerprint(publicKey);
    if (values.json)
      io.out(JSON.stringify({ private_key_file: privateFile, public_key_file: publicFile, fingerprint }));
    else {
      io.out(`Private key: ${privateFile} (give it to the sealer as BULKHEAD_AUDIT_SIGNING_KEY_FILE)`);
      io.out(`Public key:  ${publicFile} (give it to whoever checks the log)`);
      io.out(`Fingerprint: ${fingerprint}`);
    }
    return 0;
  },
};
