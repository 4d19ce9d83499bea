// The deployment entries of a new server: its service in infra/docker/compose.yaml (with its login
// role in `setup` and its password secret) and its Kubernetes overlay under infra/k8s/overlays/.
// Lines are added next to the audit sealer's, which every stack has; nothing else is changed.
// A server with upstreams also gets, for each, its base URL and secrets from the environment (compose)
// or from a ConfigMap literal and its own Secret, and one NetworkPolicy egress rule to it (Kubernetes).
import { manifestSchema, type UpstreamManifest } from '@bulkhead/deployables';
import { loginRole } from '@bulkhead/db';
import { parseDocument } from 'yaml';
import { serverFiles, snake, type NewServer } from './templates.ts';

/** The compose file does not have the shape this generator knows: what is missing, for a person to add by hand. */
export class ComposeShapeError extends Error {
  override readonly name = 'ComposeShapeError';
}

/** A variable holding one of an upstream's secrets, and the key of its Secret in Kubernetes. */
interface UpstreamSecret {
  env: string;
  key: 'token' | 'username' | 'password' | 'value';
  /** What it holds, for the message compose prints when it is unset: "bearer token". */
  what: string;
}

/** What the deployment entries need of one upstream: where its base URL and its secrets come from. */
export interface UpstreamDeployment {
  name: string;
  baseUrlEnv: string;
  /** The variables its `auth` reads (none for `auth: none`, or for secrets read from mounted files). */
  secrets: UpstreamSecret[];
}

/** The placeholder base URL of an upstream in a Kubernetes overlay, and the port its egress rule opens. */
export const upstreamPlaceholder = (u: { name: string }) => ({
  url: `https://${u.name}.example.com`,
  port: 443,
});

/**
 * Never routed (RFC 5737 TEST-NET-1): the egress rule's destination until a person writes the
 * upstream's own address, so that a new overlay opens nothing it was not told to.
 */
export const PLACEHOLDER_CIDR = '192.0.2.1/32';

/** The Secret holding an upstream's credentials in Kubernetes: `bulkhead-ops-upstream-alertmanager`. */
export const upstreamSecretName = (server: string, upstream: string) =>
  `bulkhead-${server}-upstream-${upstream}`;

/**
 * The upstreams a manifest declares (`bulkhead.upstreams`), as the deployment needs them; the checks of
 * infra/ci read a server's deployment entries through it too.
 */
export function upstreamDeployments(upstreams: UpstreamManifest | undefined): UpstreamDeployment[] {
  return Object.entries(upstreams ?? {}).map(([name, u]) => {
    const auth = u.auth ?? { type: 'none' };
    const secrets: UpstreamSecret[] = [];
    const add = (env: string | undefined, key: UpstreamSecret['key'], what: string) => {
      if (env) secrets.push({ env, key, what });
    };
    if (auth.type === 'bearer') add(auth.tokenEnv, 'token', 'bearer token');
    if (auth.type === 'basic') {
      add(auth.usernameEnv, 'username', 'user name');
      add(auth.passwordEnv, 'password', 'password');
    }
    if (auth.type === 'header') add(auth.valueEnv, 'value', `${auth.header} header`);
    return { name, baseUrlEnv: u.baseUrlEnv, secrets };
  });
}

/** The upstreams of the manifest the templates write for `s`: what the server will read, so what is deployed. */
function templateUpstreams(s: NewServer): UpstreamManifest | undefined {
  if (!s.upstream) return undefined;
  // Through the manifest's one schema: a template writing a manifest the server would refuse fails here.
  const pkg = JSON.parse(serverFiles(s)['package.json']!) as { bulkhead: unknown };
  return manifestSchema.parse(pkg.bulkhead).upstreams;
}

/** Inserts `lines` before the first line matching `anchor`, or throws naming it. */
function insertBefore(text: string[], anchor: RegExp, lines: string[], what: string): string[] {
  const at = text.findIndex((line) => anchor.test(line));
  if (at === -1) throw new ComposeShapeError(`no line for ${what} (${anchor.source})`);
  return [...text.slice(0, at), ...lines, ...text.slice(at)];
}

/** The compose environment lines of a server's upstreams: each variable required, compose saying which is missing. */
function composeUpstreamLines(upstreams: UpstreamDeployment[]): string[] {
  const required = (env: string, what: string) => `      ${env}: \${${env}:?set ${env} to ${what}}`;
  return upstreams.flatMap((u) => [
    `      # ${u.name}: the upstream this server reaches (bulkhead.upstreams in its package.json).`,
    required(u.baseUrlEnv, `the ${u.name} upstream's base URL`),
    ...u.secrets.map((x) => required(x.env, `the ${u.name} upstream's ${x.what}`)),
  ]);
}

/** The compose environment lines of an upstream MCP server's header variable (`--from-mcp <URL> --header`), if any. */
function composeMcpLines(server: NewServer): string[] {
  const header = server.mcp?.upstream.header;
  if (!header?.env) return [];
  return [
    `      # ${server.mcp!.upstream.name}: the MCP server it stands in front of (bulkhead.mcpUpstream in its package.json).`,
    `      ${header.env}: \${${header.env}:?set ${header.env} to the value of the upstream MCP server's ${header.name} header}`,
  ];
}

/**
 * compose.yaml with the new server's service, its login role in `setup` and its password secret, and
 * its upstreams' variables (`upstreams`: its manifest's, by default those the templates write).
 */
export function composeWithServer(
  compose: string,
  server: NewServer,
  upstreams: UpstreamManifest | undefined = templateUpstreams(server),
): string {
  const login = loginRole(server.name);
  const secret = `${snake(server.name)}_db_password`;
  const before = parseDocument(compose).toJS() as { services?: Record<string, unknown> };
  if (before.services?.[server.name])
    throw new ComposeShapeError(`it has a service named ${server.name} already`);
  let lines = compose.split('\n');
  lines = insertBefore(
    lines,
    /^ {6}- sealer=bulkhead_sealer_login:/,
    [`      - ${server.name}=${login}:/run/secrets/${secret}`],
    "the sealer's login role in setup's command",
  );
  lines = insertBefore(lines, /^ {6}- sealer_db_password$/, [`      - ${secret}`], "setup's secrets");
  lines = insertBefore(
    lines,
    /^ {2}sealer_db_password: \{ file: /,
    [`  ${secret}: { file: ./secrets/${secret} }`],
    'the secrets at the end',
  );
  // The service goes last among the services: before the comment lines and the top-level `secrets:`.
  const secrets = lines.findIndex((line) => line === 'secrets:');
  if (secrets === -1) throw new ComposeShapeError('no top-level secrets: key');
  let at = secrets;
  while (at > 0 && lines[at - 1]!.startsWith('#')) at -= 1;
  const service = [
    `  ${server.name}:`,
    '    <<: *server',
    `    image: localhost/bulkhead-${server.name}`,
    `    build: { context: ../.., dockerfile: infra/docker/Dockerfile, target: server, args: { SERVER: ${server.name} } }`,
    '    environment:',
    '      DATABASE_URL: postgres://postgres:5432/bulkhead',
    `      PGUSER: ${login}`,
    `      PGPASSWORD_FILE: /run/secrets/${secret}`,
    `      PORT: '${server.port}'`,
    `      BULKHEAD_PUBLIC_URL: http://127.0.0.1:${server.port}`,
    '      BULKHEAD_AUTHORIZATION_SERVER: http://127.0.0.1:3100',
    ...composeUpstreamLines(upstreamDeployments(upstreams)),
    ...composeMcpLines(server),
    `    secrets: [${secret}]`,
    `    ports: ['127.0.0.1:${server.port}:${server.port}']`,
    '',
  ];
  lines = [...lines.slice(0, at), ...service, ...lines.slice(at)];
  const out = lines.join('\n');
  const after = parseDocument(out, { merge: true }).toJS() as {
    services?: Record<string, { environment?: Record<string, string> }>;
  };
  if (after.services?.[server.name]?.environment?.PORT !== String(server.port))
    throw new ComposeShapeError(`the service ${server.name} did not land under services:`);
  return out;
}

/** The overlay's file of one NetworkPolicy per upstream: this deployable's server pods may reach it, on its port. */
function upstreamEgress(server: NewServer, upstreams: UpstreamDeployment[]): string {
  return upstreams
    .map((u) => {
      const { url, port } = upstreamPlaceholder(u);
      return `# ${server.name}'s server pods may reach ${u.name} (${u.baseUrlEnv}, now ${url}), on its port, and nothing
# else beyond bulkhead-egress's PostgreSQL and DNS. Write its address in \`to\`: an ipBlock of its
# address for a system outside the cluster, or a namespaceSelector and podSelector (matchExpressions)
# for one inside; and keep \`port\` the port of ${u.baseUrlEnv} (infra/ci/check-k8s.ts compares them).
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: bulkhead-upstream-${u.name}
spec:
  podSelector:
    matchLabels:
      app.kubernetes.io/component: server
  policyTypes: [Egress]
  egress:
    - to:
        - ipBlock: { cidr: ${PLACEHOLDER_CIDR} }
      ports:
        - { protocol: TCP, port: ${port} }
`;
    })
    .join('---\n');
}

/**
 * The Kubernetes overlay of the new server: its Deployment, Service, PDB, HPA and NetworkPolicy from
 * the base, and for each upstream (`upstreams`: its manifest's, by default those the templates write)
 * its base URL, its secrets from the Secret bulkhead-<server>-upstream-<upstream> and its egress rule.
 */
export function k8sOverlay(
  server: NewServer,
  upstreams: UpstreamManifest | undefined = templateUpstreams(server),
): Record<string, string> {
  const ups = upstreamDeployments(upstreams);
  const upstreamNote = ups
    .map((u) => {
      const secrets = u.secrets.length
        ? `\n# Its credentials: the Secret ${upstreamSecretName(server.name, u.name)} (${u.secrets.map((x) => `key ${x.key}: its ${x.what}`).join(', ')};\n# optional keys, so that the server, not the kubelet, says at start which one is missing).`
        : '';
      return `\n# Upstream ${u.name}: set ${u.baseUrlEnv} below to its address, and the same address and port in\n# upstream-egress.yaml.${secrets}`;
    })
    .join('');
  const files: Record<string, string> = {
    'kustomization.yaml': `# bulkhead-${server.name}: kubectl apply -k infra/k8s/overlays/${server.name}
# Needs, in namespace bulkhead: the Secret bulkhead-${server.name}-db (type kubernetes.io/basic-auth:
# username = this deployable's login role, password), the Secret bulkhead-db-admin (the
# database administrator, which creates the login role in the login Job), and the migration Job of infra/k8s/jobs run once.
# Written by \`bulkhead new server\`; set BULKHEAD_PUBLIC_URL to the address clients use, and add
# ${server.name}=<that address> to the console's BULKHEAD_SERVER_URLS so that it grants OAuth access to it.${upstreamNote}
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: bulkhead
nameSuffix: -${server.name}
labels:
  - pairs:
      app.kubernetes.io/name: bulkhead-${server.name}
      app.kubernetes.io/part-of: bulkhead
    includeSelectors: true
resources:
  - ../../base${ups.length ? '\n  - upstream-egress.yaml' : ''}
components:
  - ../../components/autoscale
images:
  - { name: bulkhead-server, newName: registry.example.com/bulkhead/${server.name}, newTag: 0.1.0 }
  - { name: bulkhead-jobs, newName: registry.example.com/bulkhead/jobs, newTag: 0.1.0 }
configMapGenerator:
  - name: bulkhead-config
    literals:
      - BULKHEAD_DEPLOYABLE=${server.name}
      - HOST=0.0.0.0
      - PORT=${server.port}
      - BULKHEAD_MIGRATE=false
      - BULKHEAD_PUBLIC_URL=https://${server.name}.mcp.example.com
      - BULKHEAD_AUTHORIZATION_SERVER=https://approvals.example.com
      - LOG_LEVEL=info
${ups.map((u) => `      - ${u.baseUrlEnv}=${upstreamPlaceholder(u).url}\n`).join('')}patches:
  - path: secrets-and-port.yaml
`,
    'secrets-and-port.yaml': `# This deployable's port (its manifest's, servers/${server.name}/package.json) and its Secrets.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: bulkhead
spec:
  template:
    spec:
      containers:
        - name: server
          ports:
            - { name: http, containerPort: ${server.port}, protocol: TCP }
          env:
            - name: PGUSER
              valueFrom: { secretKeyRef: { name: bulkhead-${server.name}-db, key: username } }
            - name: PGPASSWORD
              valueFrom: { secretKeyRef: { name: bulkhead-${server.name}-db, key: password } }
${ups
  .flatMap((u) =>
    u.secrets.map(
      (x) => `            - name: ${x.env}
              valueFrom: { secretKeyRef: { name: ${upstreamSecretName(server.name, u.name)}, key: ${x.key}, optional: true } }
`,
    ),
  )
  .join('')}---
apiVersion: batch/v1
kind: Job
metadata:
  name: bulkhead-db-login
spec:
  template:
    spec:
      containers:
        - name: db-login
          env:
            - name: LOGIN_ROLE
              valueFrom: { secretKeyRef: { name: bulkhead-${server.name}-db, key: username } }
      volumes:
        - name: login
          secret: { secretName: bulkhead-${server.name}-db }
`,
  };
  if (ups.length) files['upstream-egress.yaml'] = upstreamEgress(server, ups);
  return files;
}
