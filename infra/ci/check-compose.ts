// Checks infra/docker/compose.yaml without a compose engine (this machine's podman has no
// `compose` subcommand): parses it as compose would (YAML with merge keys), then checks the
// structure compose validates — every reference (depends_on, secrets, build files) resolves —
// and what the stack promises: each deployable built from the one Dockerfile as its own image,
// under its own login role whose password comes from a secret file, never the superuser;
// one-shot setup that migrates, creates the group roles and every login role before any server
// starts; demo data only behind the `demo` profile; a server's upstreams (its manifest's
// `bulkhead.upstreams`) reached through variables compose requires from the environment, and
// only that server's.
//
//   pnpm exec tsx infra/ci/check-compose.ts
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { createReport, deployables, ROOT, upstreamsOf } from './deployables.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const report = createReport('compose');
const dir = join(ROOT, 'infra', 'docker');
const file = join(dir, 'compose.yaml');
let compose: Obj;
try {
  compose = parse(readFileSync(file, 'utf8'), { merge: true }) as Obj;
  report.check('compose.yaml parses (YAML 1.2 with merge keys)', true);
} catch (err) {
  report.check('compose.yaml parses (YAML 1.2 with merge keys)', false, String(err));
  process.exit(1);
}

const services: Record<string, Obj> = compose.services ?? {};
const secrets: Record<string, Obj> = compose.secrets ?? {};
const names = Object.keys(services);
const envOf = (s: Obj): Record<string, string> =>
  Array.isArray(s.environment)
    ? Object.fromEntries(s.environment.map((e: string) => [e.split('=')[0], e.split('=').slice(1).join('=')]))
    : (s.environment ?? {});
const dependsOn = (s: Obj): Record<string, Obj> =>
  Array.isArray(s.depends_on)
    ? Object.fromEntries(s.depends_on.map((d: string) => [d, { condition: 'service_started' }]))
    : (s.depends_on ?? {});
const secretNames = (s: Obj): string[] =>
  (s.secrets ?? []).map((x: string | Obj) => (typeof x === 'string' ? x : x.source));

// What compose itself would refuse.
const badDeps = names.flatMap((n) =>
  Object.keys(dependsOn(services[n]!))
    .filter((d) => !services[d])
    .map((d) => `${n} → ${d}`),
);
report.check('every depends_on names a service', !badDeps.length, badDeps.join(', '));
const conditions = names.flatMap((n) => Object.values(dependsOn(services[n]!)).map((d) => d.condition));
report.check(
  'every depends_on condition is one compose knows',
  conditions.every((c) =>
    ['service_started', 'service_healthy', 'service_completed_successfully'].includes(c),
  ),
);
const badSecrets = names.flatMap((n) =>
  secretNames(services[n]!)
    .filter((s) => !secrets[s])
    .map((s) => `${n}: ${s}`),
);
report.check('every secret a service uses is declared', !badSecrets.length, badSecrets.join(', '));
report.check(
  'every declared secret is a file under infra/docker/secrets/ (made by make-secrets.sh)',
  Object.values(secrets).every(
    (s) => typeof s.file === 'string' && resolve(dir, s.file).startsWith(join(dir, 'secrets')),
  ),
);
const builds = names.filter((n) => services[n]!.build);
report.check(
  'every build uses the repository root and infra/docker/Dockerfile',
  builds.every((n) => {
    const b = services[n]!.build;
    return (
      resolve(dir, b.context) === ROOT &&
      b.dockerfile === 'infra/docker/Dockerfile' &&
      existsSync(join(ROOT, b.dockerfile))
    );
  }),
);
const dockerfile = readFileSync(join(ROOT, 'infra/docker/Dockerfile'), 'utf8');
report.check(
  'every build target is a stage of the Dockerfile',
  builds.every((n) => new RegExp(`^FROM \\S+ AS ${services[n]!.build.target}$`, 'm').test(dockerfile)),
);
const published = names.flatMap((n) => (services[n]!.ports ?? []).map(String));
report.check(
  'published ports are on 127.0.0.1 only, each once',
  published.every((p) => p.startsWith('127.0.0.1:')) &&
    new Set(published.map((p) => p.split(':')[1])).size === published.length,
  published.join(', '),
);

// The stack.
const postgres = services.postgres;
report.check(
  'a PostgreSQL service with a health check and its password from a secret',
  !!postgres?.healthcheck && !!envOf(postgres ?? {}).POSTGRES_PASSWORD_FILE,
);
const setup = services.setup ?? {};
const setupArgs: string[] = setup.command ?? [];
report.check(
  'setup: the jobs image runs bulkhead-setup (migrate, group roles, login roles) once postgres is healthy',
  setup.build?.target === 'jobs' &&
    (setup.entrypoint ?? []).includes('bulkhead-setup') &&
    dependsOn(setup).postgres?.condition === 'service_healthy' &&
    setup.restart === 'no',
);
const setupScript = readFileSync(join(dir, 'setup-database.sh'), 'utf8');
report.check(
  'bulkhead-setup runs `db migrate`, `db roles`, then `db roles --login` per argument',
  /bulkhead db migrate\n/.test(setupScript) &&
    /bulkhead db roles\n/.test(setupScript) &&
    /bulkhead db roles --login "\$deployable" "\$role" --password-file "\$file"/.test(setupScript),
);

for (const server of deployables()) {
  const s = services[server.name];
  if (!report.check(`${server.name}: a service`, !!s)) continue;
  const env = envOf(s!);
  report.check(
    `${server.name}: its own image, built with --target server --build-arg SERVER=${server.name}`,
    s!.build?.target === 'server' &&
      s!.build?.args?.SERVER === server.name &&
      s!.image === `localhost/bulkhead-${server.name}`,
  );
  const login = env.PGUSER ?? '';
  const passwordSecret = (env.PGPASSWORD_FILE ?? '').replace('/run/secrets/', '');
  report.check(
    `${server.name}: connects as its own login role ${login}, not the superuser, no password in the URL`,
    /^bulkhead_[a-z_]+_login$/.test(login) &&
      login.includes(server.name.replaceAll('-', '_')) &&
      !/@/.test(env.DATABASE_URL ?? '@') &&
      !env.PGPASSWORD &&
      env.BULKHEAD_ALLOW_OWNER_ROLE === undefined,
    `PGUSER=${login} DATABASE_URL=${env.DATABASE_URL}`,
  );
  report.check(
    `${server.name}: password from the secret file ${passwordSecret}, its own, and no other secret`,
    secretNames(s!).join() === passwordSecret &&
      !!secrets[passwordSecret] &&
      passwordSecret !== 'postgres_password',
  );
  report.check(
    `${server.name}: setup creates ${login} with that password for ${server.name}`,
    setupArgs.includes(`${server.name}=${login}:/run/secrets/${passwordSecret}`) &&
      secretNames(setup).includes(passwordSecret),
  );
  report.check(
    `${server.name}: starts after setup completed, with migrations off (the image's default)`,
    dependsOn(s!).setup?.condition === 'service_completed_successfully' && env.BULKHEAD_MIGRATE === undefined,
  );
  report.check(
    `${server.name}: read-only root filesystem, no capabilities, no new privileges`,
    s!.read_only === true &&
      (s!.cap_drop ?? []).includes('ALL') &&
      (s!.security_opt ?? []).includes('no-new-privileges:true'),
  );
  report.check(
    `${server.name}: listens on its manifest's port ${server.port}`,
    env.PORT === String(server.port) && (s!.ports ?? []).includes(`127.0.0.1:${server.port}:${server.port}`),
  );
  for (const u of upstreamsOf(server))
    for (const variable of [u.baseUrlEnv, ...u.secrets.map((x) => x.env)]) {
      const others = names.filter((n) => n !== server.name && envOf(services[n]!)[variable] !== undefined);
      report.check(
        `${server.name}: upstream ${u.name}'s ${variable} required from the environment (\${${variable}:?…}), and no other service's`,
        new RegExp(`^\\$\\{${variable}:\\?[^}]+\\}$`).test(env[variable] ?? '') && !others.length,
        `${variable}: ${env[variable]}${others.length ? `; also in ${others.join(', ')}` : ''}`,
      );
    }
}
const sealer = services.sealer ?? {};
const sealerEnv = envOf(sealer);
report.check(
  'sealer: `audit seal --follow` from the jobs image, as bulkhead_sealer_login, with its own password and the audit key from secret files, migrations off',
  sealer.build?.target === 'jobs' &&
    (sealer.command ?? []).slice(0, 3).join(' ') === 'audit seal --follow' &&
    sealerEnv.PGUSER === 'bulkhead_sealer_login' &&
    sealerEnv.PGPASSWORD_FILE === '/run/secrets/sealer_db_password' &&
    sealerEnv.BULKHEAD_AUDIT_KEY_FILE === '/run/secrets/audit_key' &&
    sealerEnv.BULKHEAD_MIGRATE === 'false' &&
    secretNames(sealer).sort().join() === 'audit_key,sealer_db_password' &&
    setupArgs.includes('sealer=bulkhead_sealer_login:/run/secrets/sealer_db_password') &&
    dependsOn(sealer).setup?.condition === 'service_completed_successfully',
);
const keyHolders = names.filter((n) => secretNames(services[n]!).includes('audit_key'));
report.check('only the sealer holds the audit key', keyHolders.join() === 'sealer', keyHolders.join(', '));
const entrypoint = readFileSync(join(dir, 'entrypoint.sh'), 'utf8');
report.check(
  'the entrypoint turns PGPASSWORD_FILE and BULKHEAD_AUDIT_KEY_FILE into their variables',
  /for name in PGPASSWORD BULKHEAD_AUDIT_KEY; do/.test(entrypoint),
);
const superusers = names.filter((n) => envOf(services[n]!).PGUSER === 'postgres');
report.check(
  `only setup connects as the superuser (${superusers.join(', ')}), handing the database to bulkhead_owner with its secret`,
  superusers.join() === 'setup' &&
    envOf(setup).BULKHEAD_OWNER_PASSWORD_FILE === '/run/secrets/owner_db_password' &&
    secretNames(setup).includes('owner_db_password') &&
    /bulkhead db owner --password-file "\$BULKHEAD_OWNER_PASSWORD_FILE"\n/.test(setupScript) &&
    setupScript.indexOf('bulkhead db owner') < setupScript.indexOf('bulkhead db migrate'),
);
const owners = names.filter((n) => envOf(services[n]!).PGUSER === 'bulkhead_owner');
report.check(
  `only one-shot jobs connect as the schema owner bulkhead_owner, with its own secret (${owners.join(', ')})`,
  owners.length > 0 &&
    owners.every(
      (n) =>
        services[n]!.build?.target === 'jobs' &&
        services[n]!.restart === 'no' &&
        envOf(services[n]!).PGPASSWORD_FILE === '/run/secrets/owner_db_password' &&
        !secretNames(services[n]!).includes('postgres_password'),
    ),
);
const demo = names.filter((n) => JSON.stringify(services[n]!.command ?? '').includes('seed'));
report.check(
  'demo data (db seed --demo) only behind the opt-in profile `demo`',
  demo.length === 1 && (services[demo[0]!]!.profiles ?? []).join() === 'demo',
  demo.join(', '),
);

const { failed } = report.summary();
process.exit(failed ? 1 : 0);
