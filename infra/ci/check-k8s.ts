// Renders every kustomization under infra/k8s with `kubectl kustomize` (offline) and checks what
// comes out: each resource against the Kubernetes schemas (kubernetes-models), then what the
// deployment promises — one overlay per deployable with its manifest's port, probes, resources,
// the restricted securityContext, secrets by reference only and only its own, a NetworkPolicy
// that lets ingress in from the ingress namespace alone and egress out to PostgreSQL and DNS
// alone, a PodDisruptionBudget, and a HorizontalPodAutoscaler for the MCP servers. A server with
// upstreams (its manifest's `bulkhead.upstreams`) gets each one's base URL from its ConfigMap, its
// credentials from its own Secret, and egress to the port of that URL, for its server pods alone.
//
//   pnpm exec tsx infra/ci/check-k8s.ts
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { upstreamSecretName } from '@bulkhead/cli/deployment';
import { createReport, deployables, ROOT, upstreamsOf } from './deployables.ts';

/** The namespace the ingress controller runs in: the only source of traffic to a server. */
const INGRESS_NAMESPACE = 'ingress-nginx';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const report = createReport('k8s');
const k8s = join(ROOT, 'infra', 'k8s');

function render(dir: string): Obj[] {
  const out = execFileSync('kubectl', ['kustomize', dir], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return parseAllDocuments(out)
    .map((d) => d.toJS() as Obj)
    .filter(Boolean);
}

async function validate(where: string, docs: Obj[]): Promise<void> {
  const problems: string[] = [];
  for (const doc of docs) {
    const id = `${doc.kind}/${doc.metadata?.name}`;
    try {
      const mod = (await import(`kubernetes-models/${doc.apiVersion}/${doc.kind}`)) as Record<
        string,
        new (data: Obj) => { validate(): void }
      >;
      new mod[doc.kind]!(doc).validate();
    } catch (err) {
      problems.push(`${id}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
    }
  }
  report.check(
    `${where}: ${docs.length} resources valid against the Kubernetes schemas`,
    !problems.length,
    problems.join('; '),
  );
}

const podSpecOf = (o: Obj): Obj | undefined =>
  o.kind === 'CronJob' ? o.spec?.jobTemplate?.spec?.template?.spec : o.spec?.template?.spec;
const podLabelsOf = (o: Obj): Obj =>
  (o.kind === 'CronJob'
    ? o.spec?.jobTemplate?.spec?.template?.metadata?.labels
    : o.spec?.template?.metadata?.labels) ?? {};
const selects = (selector: Obj | undefined, labels: Obj) =>
  !!selector && Object.entries(selector).every(([k, v]) => labels[k] === v);

/** `TCP/443`: the port an http(s) URL reaches. */
function portOf(url: string): string | undefined {
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined;
    return `TCP/${u.port || (u.protocol === 'https:' ? 443 : 80)}`;
  } catch {
    return undefined;
  }
}

const DATABASE_EGRESS = ['TCP/53', 'TCP/5432', 'UDP/53'];
/** A destination that stands for everywhere: an ipBlock of /0, or a selector of every namespace with no pod selector. */
const everywhere = (to: Obj) =>
  /\/0$/.test(to.ipBlock?.cidr ?? '') ||
  (to.namespaceSelector !== undefined &&
    !to.namespaceSelector.matchLabels &&
    !to.namespaceSelector.matchExpressions?.length &&
    !to.podSelector);

/**
 * Every check that holds for any pod Bulkhead runs, server or job. `upstreamEgress` says which
 * ports, beyond DNS and PostgreSQL, a workload may reach: its upstreams' (`TCP/443`), else none.
 */
function checkPods(
  where: string,
  docs: Obj[],
  allowedSecrets: (pod: Obj) => string[],
  upstreamEgress: (pod: Obj) => { name: string; port: string }[] = () => [],
): void {
  const policies = docs.filter((d) => d.kind === 'NetworkPolicy');
  for (const workload of docs.filter((d) => podSpecOf(d))) {
    const id = `${where} ${workload.kind}/${workload.metadata.name}`;
    const pod = podSpecOf(workload)!;
    const labels = podLabelsOf(workload);
    const psc = pod.securityContext ?? {};
    report.check(
      `${id}: pod runs as non-root with seccomp RuntimeDefault, no service account token`,
      psc.runAsNonRoot === true &&
        Number.isInteger(psc.runAsUser) &&
        psc.runAsUser > 0 &&
        psc.seccompProfile?.type === 'RuntimeDefault' &&
        pod.automountServiceAccountToken === false,
      JSON.stringify(psc),
    );
    const containers: Obj[] = [...(pod.initContainers ?? []), ...(pod.containers ?? [])];
    for (const c of containers) {
      const sc = c.securityContext ?? {};
      report.check(
        `${id} container ${c.name}: read-only root, no privilege escalation, ALL capabilities dropped, seccomp`,
        sc.readOnlyRootFilesystem === true &&
          sc.allowPrivilegeEscalation === false &&
          sc.runAsNonRoot === true &&
          (sc.capabilities?.drop ?? []).includes('ALL') &&
          !(sc.capabilities?.add ?? []).length &&
          sc.seccompProfile?.type === 'RuntimeDefault',
        JSON.stringify(sc),
      );
      report.check(
        `${id} container ${c.name}: cpu and memory requests, a memory limit`,
        !!c.resources?.requests?.cpu && !!c.resources?.requests?.memory && !!c.resources?.limits?.memory,
      );
      const literal = (c.env ?? []).filter(
        (e: Obj) =>
          e.value !== undefined &&
          (/PASSWORD|SECRET|KEY|TOKEN/i.test(e.name) || /:\/\/[^/]*@/.test(String(e.value))),
      );
      report.check(
        `${id} container ${c.name}: no secret value written into the manifest`,
        !literal.length,
        JSON.stringify(literal),
      );
    }
    const secretRefs = [
      ...containers.flatMap((c) => (c.env ?? []).map((e: Obj) => e.valueFrom?.secretKeyRef?.name)),
      ...containers.flatMap((c) => (c.envFrom ?? []).map((e: Obj) => e.secretRef?.name)),
      ...(pod.volumes ?? []).map((v: Obj) => v.secret?.secretName),
    ].filter(Boolean) as string[];
    const allowed = allowedSecrets(workload);
    const foreign = secretRefs.filter((s) => !allowed.includes(s));
    report.check(
      `${id}: references only its own Secrets (${[...new Set(secretRefs)].join(', ')})`,
      !foreign.length,
      foreign.join(', '),
    );

    const mine = policies.filter((p) => selects(p.spec?.podSelector?.matchLabels, labels));
    const egress = mine.filter((p) => (p.spec.policyTypes ?? []).includes('Egress'));
    const egressPorts = egress.flatMap((p) =>
      (p.spec.egress ?? []).flatMap((r: Obj) => (r.ports ?? []).map((x: Obj) => `${x.protocol}/${x.port}`)),
    );
    const openEgress = egress.some((p) =>
      (p.spec.egress ?? []).some((r: Obj) => !r.ports?.length || !r.to?.length || r.to.some(everywhere)),
    );
    const upstreams = upstreamEgress(workload);
    const expected = [...new Set([...DATABASE_EGRESS, ...upstreams.map((u) => u.port)])].sort();
    report.check(
      `${id}: egress only to DNS and PostgreSQL${upstreams.map((u) => `, ${u.name} (${u.port})`).join('')}, each to a named destination (${[...new Set(egressPorts)].join(', ')})`,
      egress.length > 0 && !openEgress && [...new Set(egressPorts)].sort().join(',') === expected.join(','),
    );
    const ingressPolicies = mine.filter((p) => (p.spec.policyTypes ?? []).includes('Ingress'));
    const ingressRules = ingressPolicies.flatMap((p) => p.spec.ingress ?? []);
    const fromIngressOnly = ingressRules.every(
      (r: Obj) =>
        (r.from ?? []).length > 0 &&
        r.from.every(
          (f: Obj) =>
            !f.ipBlock &&
            !f.podSelector &&
            f.namespaceSelector?.matchExpressions?.length === 1 &&
            f.namespaceSelector.matchExpressions[0].key === 'kubernetes.io/metadata.name' &&
            f.namespaceSelector.matchExpressions[0].values.join() === INGRESS_NAMESPACE,
        ) &&
        (r.ports ?? []).length > 0,
    );
    const isServer = labels['app.kubernetes.io/component'] === 'server';
    report.check(
      `${id}: ingress ${isServer ? `only from namespace ${INGRESS_NAMESPACE}, on its port` : 'from nowhere'}`,
      ingressPolicies.length > 0 &&
        fromIngressOnly &&
        (isServer ? ingressRules.length > 0 : ingressRules.length === 0),
      JSON.stringify(ingressRules),
    );
  }
  report.check(
    `${where}: no Secret objects (secrets are referenced, never shipped)`,
    !docs.some((d) => d.kind === 'Secret'),
  );
}

const servers = deployables();
const overlaysDir = join(k8s, 'overlays');
const overlays = readdirSync(overlaysDir).filter((d) =>
  existsSync(join(overlaysDir, d, 'kustomization.yaml')),
);
report.check(
  `one overlay per deployable (${servers.map((s) => s.name).join(', ')})`,
  overlays.sort().join() === servers.map((s) => s.name).join(),
  `overlays: ${overlays.join(', ')}`,
);

for (const server of servers) {
  const where = `overlays/${server.name}`;
  let docs: Obj[];
  try {
    docs = render(join(overlaysDir, server.name));
  } catch (err) {
    report.check(
      `${where}: kubectl kustomize renders`,
      false,
      String((err as { stderr?: string }).stderr ?? err),
    );
    continue;
  }
  report.check(`${where}: kubectl kustomize renders`, true);
  await validate(where, docs);
  const name = `bulkhead-${server.name}`;
  const secret = `bulkhead-${server.name}-db`;
  report.check(
    `${where}: everything in namespace bulkhead`,
    docs.every((d) => d.metadata?.namespace === 'bulkhead'),
  );
  const deployments = docs.filter((d) => d.kind === 'Deployment');
  const dep: Obj = deployments[0] ?? {};
  if (
    !report.check(
      `${where}: one Deployment named ${name}`,
      deployments.length === 1 && dep.metadata?.name === name,
    )
  )
    continue;
  const pod = podSpecOf(dep)!;
  const c = pod.containers.find((x: Obj) => x.name === 'server') ?? {};
  const config = docs.find(
    (d) =>
      d.kind === 'ConfigMap' &&
      c.envFrom?.some((e: Obj) => e.configMapRef?.name === d.metadata.name) &&
      d.data?.PORT,
  );
  const http = (c.ports ?? []).find((p: Obj) => p.name === 'http');
  report.check(
    `${where}: container port http and PORT are the manifest's ${server.port}`,
    http?.containerPort === server.port && config?.data?.PORT === String(server.port),
    `containerPort ${http?.containerPort}, PORT ${config?.data?.PORT}`,
  );
  report.check(
    `${where}: runs under its own login role (PGUSER/PGPASSWORD from ${secret}), migrations off`,
    ['PGUSER', 'PGPASSWORD'].every((n) =>
      (c.env ?? []).some((e: Obj) => e.name === n && e.valueFrom?.secretKeyRef?.name === secret),
    ) && config?.data?.BULKHEAD_MIGRATE === 'false',
  );
  report.check(
    `${where}: image is the ${server.name} image`,
    new RegExp(`/${server.name}:[^/]+$`).test(c.image ?? ''),
    c.image,
  );
  report.check(
    `${where}: readiness on /readyz, liveness on /healthz, port http`,
    c.readinessProbe?.httpGet?.path === '/readyz' &&
      c.livenessProbe?.httpGet?.path === '/healthz' &&
      c.readinessProbe?.httpGet?.port === 'http' &&
      c.livenessProbe?.httpGet?.port === 'http',
  );
  const podLabels = podLabelsOf(dep);
  const svc = docs.find((d) => d.kind === 'Service');
  report.check(
    `${where}: Service ${name} selects the server pods only, to port http`,
    svc?.metadata.name === name &&
      selects(svc.spec.selector, podLabels) &&
      svc.spec.selector['app.kubernetes.io/component'] === 'server' &&
      svc.spec.ports.every((p: Obj) => p.targetPort === 'http'),
  );
  const pdb = docs.find((d) => d.kind === 'PodDisruptionBudget');
  report.check(
    `${where}: PodDisruptionBudget keeps at least one server pod`,
    !!pdb && selects(pdb.spec.selector?.matchLabels, podLabels) && pdb.spec.minAvailable >= 1,
  );
  const hpa = docs.find((d) => d.kind === 'HorizontalPodAutoscaler');
  if (server.kind === 'mcp')
    report.check(
      `${where}: HorizontalPodAutoscaler scales ${name} (min ${hpa?.spec?.minReplicas}, max ${hpa?.spec?.maxReplicas}); the Deployment leaves replicas to it`,
      hpa?.spec?.scaleTargetRef?.kind === 'Deployment' &&
        hpa.spec.scaleTargetRef.name === name &&
        hpa.spec.minReplicas >= 2 &&
        hpa.spec.maxReplicas > hpa.spec.minReplicas &&
        dep.spec.replicas === undefined,
    );
  else report.check(`${where}: ${dep.spec.replicas} replicas, no autoscaler`, !hpa && dep.spec.replicas >= 2);
  const login = docs.find((d) => d.kind === 'Job');
  const loginC = podSpecOf(login ?? {})?.containers?.[0] ?? {};
  report.check(
    `${where}: a Job makes its login role a member of its group (db roles --login ${server.name})`,
    loginC.args?.slice(0, 3).join(' ') === 'db roles --login' &&
      (loginC.env ?? []).some((e: Obj) => e.name === 'BULKHEAD_DEPLOYABLE') &&
      login &&
      docs.some((d) => d.kind === 'ConfigMap' && d.data?.BULKHEAD_DEPLOYABLE === server.name),
  );
  const upstreams = upstreamsOf(server);
  const egress: { name: string; port: string }[] = [];
  for (const u of upstreams) {
    const url = config?.data?.[u.baseUrlEnv] ?? '';
    const port = portOf(url);
    report.check(
      `${where}: upstream ${u.name}'s ${u.baseUrlEnv} an http(s) URL in the ConfigMap (${url})`,
      port !== undefined,
    );
    if (port) egress.push({ name: u.name, port });
    const credentials = upstreamSecretName(server.name, u.name);
    for (const x of u.secrets)
      report.check(
        `${where}: upstream ${u.name}'s ${x.env} from the Secret ${credentials}, key ${x.key}`,
        (c.env ?? []).some(
          (e: Obj) =>
            e.name === x.env &&
            e.valueFrom?.secretKeyRef?.name === credentials &&
            e.valueFrom.secretKeyRef.key === x.key,
        ),
      );
  }
  // A server that sends approved e-mail (admin) also reads its own SMTP Secret; one with upstreams, theirs.
  const smtp = `bulkhead-${server.name}-smtp`;
  const upstreamSecrets = upstreams
    .filter((u) => u.secrets.length)
    .map((u) => upstreamSecretName(server.name, u.name));
  checkPods(
    where,
    docs,
    (w) => (w.kind === 'Deployment' ? [secret, smtp, ...upstreamSecrets] : [secret, 'bulkhead-db-admin']),
    (w) => (w.kind === 'Deployment' ? egress : []),
  );
}

const jobsDocs = render(join(k8s, 'jobs'));
report.check('jobs: kubectl kustomize renders', true);
await validate('jobs', jobsDocs);
const migrate = jobsDocs.find((d) => d.kind === 'Job');
const steps = [
  ...(podSpecOf(migrate ?? {})?.initContainers ?? []),
  ...(podSpecOf(migrate ?? {})?.containers ?? []),
].map((c: Obj) => c.args.join(' '));
report.check(
  'jobs: the migration Job hands the database to its owner, runs `db migrate`, `db roles`, then the sealer login (`db roles --login sealer`)',
  steps.join(' | ') ===
    'db owner --role $(OWNER_ROLE) --password-file /run/secrets/owner/password | db migrate | db roles | db roles --login sealer $(LOGIN_ROLE) --password-file /run/secrets/login/password',
  steps.join(' | '),
);
const userOf = (c: Obj) =>
  (c.env ?? []).find((e: Obj) => e.name === 'PGUSER')?.valueFrom?.secretKeyRef?.name as string | undefined;
const steppers = [
  ...(podSpecOf(migrate ?? {})?.initContainers ?? []),
  ...(podSpecOf(migrate ?? {})?.containers ?? []),
] as Obj[];
report.check(
  'jobs: only creating roles and handing over the database run as the administrator; the schema is migrated as its owner',
  steppers.map((c) => `${c.args[1]}:${userOf(c)}`).join(' ') ===
    'owner:bulkhead-db-admin migrate:bulkhead-owner-db roles:bulkhead-db-admin roles:bulkhead-db-admin',
  steppers.map((c) => `${c.args[1]}:${userOf(c)}`).join(' '),
);
const cron = jobsDocs
  .filter((d) => d.kind === 'CronJob')
  .map((d) => podSpecOf(d)!.containers[0].args.join(' '));
report.check(
  'jobs: CronJobs run `audit seal` and `audit verify`, as the sealer, with migrations off',
  cron.sort().join() === 'audit seal,audit verify' &&
    jobsDocs
      .filter((d) => d.kind === 'CronJob')
      .every((d) =>
        (podSpecOf(d)!.containers[0].env ?? []).some(
          (e: Obj) => e.name === 'BULKHEAD_MIGRATE' && e.value === 'false',
        ),
      ),
  cron.join(', '),
);
checkPods('jobs', jobsDocs, (w) =>
  w.kind === 'CronJob'
    ? ['bulkhead-sealer-db', 'bulkhead-audit-key']
    : ['bulkhead-db-admin', 'bulkhead-owner-db', 'bulkhead-sealer-db'],
);

const namespaceDocs = parseAllDocuments(readFileSync(join(k8s, 'namespace.yaml'), 'utf8')).map(
  (d) => d.toJS() as Obj,
);
await validate('namespace.yaml', namespaceDocs);
report.check(
  'namespace.yaml: namespace bulkhead enforces the restricted Pod Security Standard',
  namespaceDocs[0]?.metadata?.labels?.['pod-security.kubernetes.io/enforce'] === 'restricted',
);

const { failed } = report.summary();
process.exit(failed ? 1 : 0);
