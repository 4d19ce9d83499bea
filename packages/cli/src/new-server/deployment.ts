// The deployment entries of a new server: its service in infra/docker/compose.yaml (with its login
// role in `setup` and its password secret) and its Kubernetes overlay under infra/k8s/overlays/.
// Lines are added next to the audit sealer's, which every stack has; nothing else is changed.
import { loginRole } from '@bulkhead/db';
import { parseDocument } from 'yaml';
import { snake, type NewServer } from './templates.ts';

/** The compose file does not have the shape this generator knows: what is missing, for a person to add by hand. */
export class ComposeShapeError extends Error {
  override readonly name = 'ComposeShapeError';
}

/** Inserts `lines` before the first line matching `anchor`, or throws naming it. */
function insertBefore(text: string[], anchor: RegExp, lines: string[], what: string): string[] {
  const at = text.findIndex((line) => anchor.test(line));
  if (at === -1) throw new ComposeShapeError(`no line for ${what} (${anchor.source})`);
  return [...text.slice(0, at), ...lines, ...text.slice(at)];
}

/** compose.yaml with the new server's service, its login role in `setup` and its password secret. */
export function composeWithServer(compose: string, s: NewServer): string {
  const login = loginRole(s.name);
  const secret = `${snake(s.name)}_db_password`;
  const before = parseDocument(compose).toJS() as { services?: Record<string, unknown> };
  if (before.services?.[s.name]) throw new ComposeShapeError(`it has a service named ${s.name} already`);
  let lines = compose.split('\n');
  lines = insertBefore(
    lines,
    /^ {6}- sealer=bulkhead_sealer_login:/,
    [`      - ${s.name}=${login}:/run/secrets/${secret}`],
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
    `  ${s.name}:`,
    '    <<: *server',
    `    image: localhost/bulkhead-${s.name}`,
    `    build: { context: ../.., dockerfile: infra/docker/Dockerfile, target: server, args: { SERVER: ${s.name} } }`,
    '    environment:',
    '      DATABASE_URL: postgres://postgres:5432/bulkhead',
    `      PGUSER: ${login}`,
    `      PGPASSWORD_FILE: /run/secrets/${secret}`,
    `      PORT: '${s.port}'`,
    `      BULKHEAD_PUBLIC_URL: http://127.0.0.1:${s.port}`,
    '      BULKHEAD_AUTHORIZATION_SERVER: http://127.0.0.1:3100',
    `    secrets: [${secret}]`,
    `    ports: ['127.0.0.1:${s.port}:${s.port}']`,
    '',
  ];
  lines = [...lines.slice(0, at), ...service, ...lines.slice(at)];
  const out = lines.join('\n');
  const after = parseDocument(out, { merge: true }).toJS() as {
    services?: Record<string, { environment?: Record<string, string> }>;
  };
  if (after.services?.[s.name]?.environment?.PORT !== String(s.port))
    throw new ComposeShapeError(`the service ${s.name} did not land under services:`);
  return out;
}

/** The Kubernetes overlay of the new server: its Deployment, Service, PDB, HPA and NetworkPolicy from the base. */
export function k8sOverlay(s: NewServer): Record<string, string> {
  return {
    'kustomization.yaml': `# bulkhead-${s.name}: kubectl apply -k infra/k8s/overlays/${s.name}
# Needs, in namespace bulkhead: the Secret bulkhead-${s.name}-db (type kubernetes.io/basic-auth:
# username = this deployable's login role, password), the Secret bulkhead-db-admin (the
# database administrator, which creates the login role in the login Job), and the migration Job of infra/k8s/jobs run once.
# Written by \`bulkhead new server\`; set BULKHEAD_PUBLIC_URL to the address clients use, and add
# ${s.name}=<that address> to the console's BULKHEAD_SERVER_URLS so that it grants OAuth access to it.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: bulkhead
nameSuffix: -${s.name}
labels:
  - pairs:
      app.kubernetes.io/name: bulkhead-${s.name}
      app.kubernetes.io/part-of: bulkhead
    includeSelectors: true
resources:
  - ../../base
components:
  - ../../components/autoscale
images:
  - { name: bulkhead-server, newName: registry.example.com/bulkhead/${s.name}, newTag: 0.1.0 }
  - { name: bulkhead-jobs, newName: registry.example.com/bulkhead/jobs, newTag: 0.1.0 }
configMapGenerator:
  - name: bulkhead-config
    literals:
      - BULKHEAD_DEPLOYABLE=${s.name}
      - HOST=0.0.0.0
      - PORT=${s.port}
      - BULKHEAD_MIGRATE=false
      - BULKHEAD_PUBLIC_URL=https://${s.name}.mcp.example.com
      - BULKHEAD_AUTHORIZATION_SERVER=https://approvals.example.com
      - LOG_LEVEL=info
patches:
  - path: secrets-and-port.yaml
`,
    'secrets-and-port.yaml': `# This deployable's port (its manifest's, servers/${s.name}/package.json) and its Secret.
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
            - { name: http, containerPort: ${s.port}, protocol: TCP }
          env:
            - name: PGUSER
              valueFrom: { secretKeyRef: { name: bulkhead-${s.name}-db, key: username } }
            - name: PGPASSWORD
              valueFrom: { secretKeyRef: { name: bulkhead-${s.name}-db, key: password } }
---
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
              valueFrom: { secretKeyRef: { name: bulkhead-${s.name}-db, key: username } }
      volumes:
        - name: login
          secret: { secretName: bulkhead-${s.name}-db }
`,
  };
}
