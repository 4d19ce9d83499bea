#!/usr/bin/env bash
# Builds and checks every deployment file, as .ci/run's `infra` step:
#   1. Kubernetes: `kubectl kustomize` each overlay and infra/k8s/jobs, every resource validated
#      offline against the Kubernetes schemas, plus the deployment's promises (check-k8s.ts).
#   2. compose: infra/docker/compose.yaml parsed and checked by a script (check-compose.ts);
#      this machine's podman has no `compose` subcommand and no compose engine is installed.
#   3. Images: the base (a local stand-in when no registry is reachable, base-image.sh), one image
#      per deployable and the jobs image from infra/docker/Dockerfile; each server image grepped
#      for the other servers' tool names (0 found).
#   4. Run: a fresh database on the CI PostgreSQL (127.0.0.1:5432, trust); the jobs image
#      migrates it, creates the group roles and one login role per deployable, loads demo data
#      and issues tokens; each server image then runs under its own role (read-only root, no
#      capabilities), answers /readyz and its HEALTHCHECK, is called with a real client, and
#      exits 0 on SIGTERM. ops reads a real Alertmanager started on loopback for its run, holding
#      one posted alert, which its list_alerts must show.
# Container steps are skipped, loudly, only when this machine cannot run containers.
# Prints `infra: N passed, N failed` last and exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
started=$(date +%s)
passed=0
failed=0
skipped=()
report=$(mktemp /tmp/bulkhead-infra-report.XXXXXX)

ok() { passed=$((passed + 1)); echo "ok   infra: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL infra: $*"; }
check() { # check <description> <command...>: one result from a command's exit code
  local what=$1
  shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}
section() { printf '\n-- infra: %s\n' "$*"; }
skip() {
  skipped+=("$*")
  printf '\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n'
  printf '!!! infra: SKIPPED: %s\n' "$*"
  printf '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\n'
}
tsx() { "$root/node_modules/.bin/tsx" "$@"; }
# Adds the counts of a script's own `<label>: N passed, N failed` line.
tally() {
  local line
  line=$(grep -E "^$1: [0-9]+ passed, [0-9]+ failed$" "$report" | tail -n 1)
  if [ -z "$line" ]; then
    fail "$1 checks did not finish"
    return
  fi
  local p f
  p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
  f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed$/\1/')
  passed=$((passed + p))
  failed=$((failed + f))
}

section "Kubernetes manifests (kubectl kustomize, kubernetes-models)"
if command -v kubectl >/dev/null; then
  tsx infra/ci/check-k8s.ts | tee "$report"
  tally k8s
else
  fail "kubectl is not installed: the overlays cannot be rendered"
fi

section "compose file (parsed and checked by infra/ci/check-compose.ts)"
tsx infra/ci/check-compose.ts | tee "$report"
tally compose

# ---------------------------------------------------------------- containers
export CONTAINERS_CONF="$root/infra/ci/containers.conf"
export BUILDAH_ISOLATION=chroot
can_run=true
section "container tools"
if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v mmdebstrap >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc mmdebstrap uidmap) >/dev/null 2>&1 \
      || echo "infra: apt-get could not install podman, runc and mmdebstrap"
  fi
fi
if command -v podman >/dev/null && command -v runc >/dev/null; then
  podman --version
else
  can_run=false
  skip "no podman/runc on this machine (and not installable here): images not built, run or grepped"
fi

images=()
declare -A image_size build_seconds
if $can_run; then
  section "base image"
  t0=$(date +%s)
  if bash infra/ci/base-image.sh; then
    ok "base image ready ($(($(date +%s) - t0)) s)"
    base=$(awk '/^FROM /{print $2; exit}' infra/docker/Dockerfile)
    if ! podman run --rm --network host "$base" node -e 'process.exit(0)' >/dev/null 2>&1; then
      can_run=false
      skip "podman is installed but cannot run a container on this machine (runc, cgroups): images not built, run or grepped"
    fi
  else
    fail "base image could not be built (mmdebstrap or the npm registry unreachable?)"
    can_run=false
  fi
fi

mapfile -t servers < <(tsx -e 'import { deployables } from "./infra/ci/deployables.ts"; for (const d of deployables()) console.log(`${d.name} ${d.kind} ${d.port}`);')
# From each manifest: whether its tokens are bound to a customer, and the read call that answers on the demo data.
declare -A customer_bound probe_tool probe_args
while read -r name bound tool args; do
  customer_bound[$name]=$bound
  probe_tool[$name]=$tool
  probe_args[$name]=$args
done < <(tsx -e 'import { deployables } from "./infra/ci/deployables.ts"; for (const d of deployables()) console.log(`${d.name} ${d.customerBound} ${d.probe?.tool ?? "-"} ${JSON.stringify(d.probe?.arguments ?? {})}`);')

build() { # build <tag> <podman build args...>
  local tag=$1 t0 log
  shift
  t0=$(date +%s)
  log=$(mktemp /tmp/bulkhead-build.XXXXXX)
  if podman build --isolation chroot --pull=never --format docker -f infra/docker/Dockerfile -t "$tag" "$@" . >"$log" 2>&1; then
    build_seconds[$tag]=$(($(date +%s) - t0))
    image_size[$tag]=$(podman image inspect --format '{{.Size}}' "$tag" | numfmt --to=iec --suffix=B)
    ok "image $tag built in ${build_seconds[$tag]} s, ${image_size[$tag]}"
  else
    tail -n 30 "$log"
    fail "image $tag did not build"
  fi
  rm -f "$log"
}

if $can_run; then
  section "images"
  for s in "${servers[@]}"; do
    name=${s%% *}
    build "localhost/bulkhead-$name" --target server --build-arg "SERVER=$name"
  done
  build localhost/bulkhead-jobs --target jobs

  section "no server image holds another server's tools"
  tools=$(mktemp /tmp/bulkhead-tools.XXXXXX)
  tsx infra/ci/tool-names.ts >"$tools"
  for s in "${servers[@]}"; do
    name=${s%% *}
    image=localhost/bulkhead-$name
    podman image exists "$image" || continue
    patterns=$(mktemp /tmp/bulkhead-patterns.XXXXXX)
    # Other servers' tools, less the names this server has itself (admin and customer both have get_ticket).
    comm -23 <(awk -v s="$name" '$1 != s {print $2}' "$tools" | sort -u) <(awk -v s="$name" '$1 == s {print $2}' "$tools" | sort -u) >"$patterns"
    mnt=$(podman image mount "$image")
    hits=$(grep -rowaFf "$patterns" "$mnt" 2>/dev/null | sed 's/^[^:]*://' | sort | uniq -c | sort -rn | head -n 20)
    count=$(grep -rowaFf "$patterns" "$mnt" 2>/dev/null | wc -l)
    # The same grep must find the server's own tool names (a grep that finds nothing proves nothing).
    own=$(grep -rowaFf <(awk -v s="$name" '$1 == s {print $2}' "$tools") "$mnt/app" 2>/dev/null | sed 's/^[^:]*://' | sort -u | wc -l)
    podman image unmount "$image" >/dev/null
    expected=$(awk -v s="$name" '$1 == s' "$tools" | wc -l)
    check "$image: the grep finds each of its own $expected tool names ($own found)" test "$own" = "$expected"
    if [ "$count" = 0 ]; then
      ok "$image: 0 of $(wc -l <"$patterns") other servers' tool names found"
    else
      fail "$image: $count occurrences of other servers' tool names: $(echo "$hits" | tr '\n' ' ')"
    fi
    rm -f "$patterns"
  done
  rm -f "$tools"
fi

# ---------------------------------------------------------------- run
declare -A container_rss stop_ms
if $can_run && podman image exists localhost/bulkhead-jobs; then
  section "run each image against the CI PostgreSQL"
  db="bulkhead_infra_$(date +%s)_$$"
  pg() { psql -h 127.0.0.1 -p 5432 -U postgres -v ON_ERROR_STOP=1 -qtA "$@"; }
  secrets=$(mktemp -d /tmp/bulkhead-secrets.XXXXXX)
  chmod 755 "$secrets"
  logins=()
  # ops reads Prometheus Alertmanager (its upstream, bulkhead.upstreams.alertmanager): a real one on
  # loopback, with infra/prometheus/alertmanager.yml, its own storage and no cluster, holding one alert.
  alertmanager_pid=""
  alertmanager_dir=""
  start_alertmanager() {
    local am_port
    if ! command -v prometheus-alertmanager >/dev/null; then
      fail "prometheus-alertmanager is not installed (Debian: apt-get install prometheus-alertmanager): ops has no upstream to read"
      return 1
    fi
    am_port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
    alertmanager_dir=$(mktemp -d /tmp/bulkhead-alertmanager.XXXXXX)
    prometheus-alertmanager --config.file="$root/infra/prometheus/alertmanager.yml" --storage.path="$alertmanager_dir" \
      --web.listen-address="127.0.0.1:$am_port" --cluster.listen-address= >"$alertmanager_dir/log" 2>&1 &
    alertmanager_pid=$!
    alertmanager_url="http://127.0.0.1:$am_port"
    for _ in $(seq 1 40); do
      curl -fsS "$alertmanager_url/-/ready" >/dev/null 2>&1 && break
      kill -0 "$alertmanager_pid" 2>/dev/null || break
      sleep 0.25
    done
    if ! curl -fsS "$alertmanager_url/-/ready" >/dev/null 2>&1; then
      tail -n 20 "$alertmanager_dir/log"
      fail "Alertmanager $(prometheus-alertmanager --version 2>&1 | head -n 1 | awk '{print $3}') not ready on $alertmanager_url"
      return 1
    fi
    check "Alertmanager on $alertmanager_url: an alert posted (BulkheadInfraCheck)" curl -fsS -o /dev/null -X POST \
      -H 'content-type: application/json' "$alertmanager_url/api/v2/alerts" \
      -d '[{"labels":{"alertname":"BulkheadInfraCheck","severity":"warning","server":"infra-ci"},"annotations":{"summary":"posted by infra/ci/check.sh"}}]'
  }
  stop_alertmanager() {
    [ -n "$alertmanager_pid" ] && kill "$alertmanager_pid" 2>/dev/null && wait "$alertmanager_pid" 2>/dev/null
    [ -n "$alertmanager_dir" ] && rm -rf "$alertmanager_dir"
    alertmanager_pid=""
    alertmanager_dir=""
  }
  cleanup_run() {
    stop_alertmanager
    for s in "${servers[@]}"; do podman rm -f "bulkhead-ci-${s%% *}-$$" >/dev/null 2>&1; done
    pg -d postgres -c "drop database if exists $db with (force)" >/dev/null 2>&1
    for role in "${logins[@]}"; do pg -d postgres -c "drop role if exists $role" >/dev/null 2>&1; done
    rm -rf "$secrets"
  }
  trap cleanup_run EXIT
  check "fresh database $db" pg -d postgres -c "create database $db"
  url="postgres://127.0.0.1:5432/$db"
  # The jobs image as the superuser (the CI cluster's; trust auth, so no password) for setting up, as
  # the schema owner bulkhead_owner for everything after, as compose's setup and cli services do.
  superuser() { podman run --rm --network host --read-only --read-only-tmpfs=false --cap-drop ALL \
    --security-opt no-new-privileges -e "DATABASE_URL=$url" -e PGUSER=postgres "$@"; }
  jobs() { podman run --rm --network host --read-only --read-only-tmpfs=false --cap-drop ALL \
    --security-opt no-new-privileges -e "DATABASE_URL=$url" -e PGUSER=bulkhead_owner "$@"; }
  check "jobs image: bulkhead db migrate (as the superuser: hands the database to bulkhead_owner first)" \
    superuser localhost/bulkhead-jobs db migrate
  owner=$(pg -d "$db" -c "select r.rolname || ' superuser=' || r.rolsuper from pg_roles r where r.oid = (select relowner from pg_class where oid = 'public.bulkhead_migrations'::regclass)")
  check "the schema's owner is no superuser ($owner)" test "$owner" = "bulkhead_owner superuser=false"
  for s in "${servers[@]}"; do
    name=${s%% *}
    logins+=("bulkhead_ci_${name//-/_}_$$")
    head -c 18 /dev/urandom | base64 | tr -d '/+=\n' >"$secrets/$name"
    chmod 644 "$secrets/$name"
  done
  args=()
  for s in "${servers[@]}"; do
    name=${s%% *}
    args+=("$name=bulkhead_ci_${name//-/_}_$$:/run/secrets/$name")
  done
  # The audit sealer's login role, and the audit key only it holds.
  logins+=("bulkhead_ci_sealer_$$")
  head -c 18 /dev/urandom | base64 | tr -d '/+=\n' >"$secrets/sealer"
  head -c 32 /dev/urandom | base64 | tr -d '/+=\n' >"$secrets/audit-key"
  chmod 644 "$secrets/sealer" "$secrets/audit-key"
  args+=("sealer=bulkhead_ci_sealer_$$:/run/secrets/sealer")
  head -c 18 /dev/urandom | base64 | tr -d '/+=\n' >"$secrets/owner"
  chmod 644 "$secrets/owner"
  check "jobs image: bulkhead-setup (db owner, db migrate, db roles, db roles --login for ${#args[@]} login roles)" \
    superuser -v "$secrets:/run/secrets:ro" -e BULKHEAD_OWNER_PASSWORD_FILE=/run/secrets/owner --entrypoint /usr/local/bin/bulkhead-setup localhost/bulkhead-jobs "${args[@]}"
  check "jobs image: bulkhead db seed --demo" jobs localhost/bulkhead-jobs db seed --demo
  check "jobs image: bulkhead kb ingest (the handbook, docs/handbook, mounted)" \
    jobs -v "$root/docs/handbook:/docs:ro" localhost/bulkhead-jobs kb ingest /docs

  # A server with e-mail tools (admin) refuses to start without an SMTP server and a From: every
  # server run here gets them (nothing is approved here, so nothing is sent; the others ignore them).
  mail=(-e BULKHEAD_SMTP_URL=smtp://127.0.0.1:2525 -e BULKHEAD_MAIL_FROM=infra-ci@example.com)
  # A server image refuses the superuser: it stops at start, saying why, and serves nothing.
  refusal=$(podman run --rm --network host --read-only --read-only-tmpfs=false --cap-drop ALL \
    --security-opt no-new-privileges -e "DATABASE_URL=$url" -e PGUSER=postgres -e PORT=0 "${mail[@]}" \
    "localhost/bulkhead-${servers[0]%% *}" 2>&1)
  refusal_code=$?
  check "localhost/bulkhead-${servers[0]%% *} under the superuser: exit 1, \"$(echo "$refusal" | grep -o 'connected to PostgreSQL as "postgres", which owns the schema or is a superuser' | head -n 1)\"" \
    test "$refusal_code" = 1 -a -n "$(echo "$refusal" | grep -o 'which owns the schema or is a superuser')"

  for s in "${servers[@]}"; do
    read -r name kind _ <<<"$s"
    image=localhost/bulkhead-$name
    container="bulkhead-ci-$name-$$"
    podman image exists "$image" || continue
    port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
    if [ "$kind" = console ]; then
      token=$(jobs localhost/bulkhead-jobs approvers add --person infra-ci@example.com --label "infra CI approver" --json | node -pe 'JSON.parse(require("fs").readFileSync(0)).token')
    else
      extra=()
      [ "${customer_bound[$name]}" = true ] && extra=(--customer C-1001)
      token=$(jobs localhost/bulkhead-jobs tokens issue --server "$name" --label "infra CI" --owner infra-ci-client@example.com "${extra[@]}" --json | node -pe 'JSON.parse(require("fs").readFileSync(0)).token')
    fi
    identity=(-e "PGUSER=bulkhead_ci_${name//-/_}_$$" -e PGPASSWORD_FILE=/run/secrets/db-password -v "$secrets/$name:/run/secrets/db-password:ro")
    upstream=()
    if [ "$name" = ops ]; then
      start_alertmanager || { stop_alertmanager; continue; }
      upstream=(-e "BULKHEAD_OPS_ALERTMANAGER_URL=$alertmanager_url")
    fi
    podman run -d --name "$container" --network host --read-only --read-only-tmpfs=false --cap-drop ALL \
      --security-opt no-new-privileges -e "DATABASE_URL=$url" -e "PORT=$port" "${identity[@]}" "${mail[@]}" "${upstream[@]}" "$image" >/dev/null 2>&1
    ready=false
    for _ in $(seq 1 60); do
      if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then
        ready=true
        break
      fi
      [ "$(podman inspect -f '{{.State.Running}}' "$container" 2>/dev/null)" = true ] || break
      sleep 0.5
    done
    if ! $ready; then
      podman logs "$container" 2>&1 | tail -n 20
      fail "$image: not ready on /readyz"
      stop_alertmanager
      continue
    fi
    ok "$image: ready on /readyz (read-only root, no capabilities, uid $(podman exec "$container" id -u))"
    check "$image: HEALTHCHECK passes" podman healthcheck run "$container"
    user=$(pg -d "$db" -c "select string_agg(distinct usename, ',') from pg_stat_activity where datname = '$db' and application_name = 'bulkhead-$name'")
    check "$image: connected as its own login role ($user)" test "$user" = "bulkhead_ci_${name//-/_}_$$"
    case $name in
      console) call=(--console --expect 'infra CI approver') ;;
      dev-knowledge) call=(--tool search_docs --args '{"query":"kubernetes"}' --expect 'Deploying on Kubernetes') ;;
      customer) call=(--tool get_account_balance --expect '"customer_id": "C-1001"') ;;
      admin) call=(--tool get_customer --args '{"customer_id":"C-1002"}' --expect '"customer_id": "C-1002"') ;;
      ops) call=(--tool list_alerts --args '{"limit":5}' --expect 'BulkheadInfraCheck') ;;
      *) call=(--tool "${probe_tool[$name]}" --args "${probe_args[$name]}") ;;
    esac
    check "$image: called with a real client" tsx infra/ci/call-server.ts --url "http://127.0.0.1:$port" --token "$token" "${call[@]}"
    container_rss[$name]=$(podman stats --no-stream --format '{{.MemUsage}}' "$container" 2>/dev/null | cut -d/ -f1 | tr -d ' ')
    t0=$(date +%s%N)
    podman kill --signal TERM "$container" >/dev/null
    code=$(timeout 30 podman wait "$container" 2>/dev/null || echo timeout)
    stop_ms[$name]=$((($(date +%s%N) - t0) / 1000000))
    if [ "$code" = 0 ]; then
      ok "$image: SIGTERM → exit code 0 in ${stop_ms[$name]} ms"
    else
      podman logs "$container" 2>&1 | tail -n 20
      fail "$image: SIGTERM → exit code $code"
    fi
    podman rm -f "$container" >/dev/null 2>&1
    stop_alertmanager
  done
fi

if $can_run && podman image exists localhost/bulkhead-jobs && [ -n "${db:-}" ]; then
  section "the audit CronJobs' commands, as the sealer"
  sealer() { podman run --rm --network host --read-only --read-only-tmpfs=false --cap-drop ALL \
    --security-opt no-new-privileges -e "DATABASE_URL=$url" -e "PGUSER=bulkhead_ci_sealer_$$" \
    -e PGPASSWORD_FILE=/run/secrets/sealer -e BULKHEAD_AUDIT_KEY_FILE=/run/secrets/audit-key -e BULKHEAD_MIGRATE=false \
    -v "$secrets:/run/secrets:ro" localhost/bulkhead-jobs "$@"; }
  sealed=$(sealer audit seal --json 2>&1)
  echo "$sealed"
  check "jobs image: bulkhead audit seal as the sealer seals the servers' events" \
    node -e 'const r = JSON.parse(process.argv[1].trim().split("\n").pop()); process.exit(r.elected && r.events > 0 ? 0 : 1)' "$sealed"
  check "jobs image: bulkhead audit verify as the sealer finds the log intact" sealer audit verify
fi

section "summary"
if $can_run; then
  for tag in "${!build_seconds[@]}"; do echo "infra: $tag: ${image_size[$tag]}, built in ${build_seconds[$tag]} s"; done | sort
  for name in "${!stop_ms[@]}"; do echo "infra: bulkhead-$name: memory ${container_rss[$name]:-?} after one call, stopped in ${stop_ms[$name]} ms"; done | sort
fi
for s in "${skipped[@]}"; do echo "infra: SKIPPED: $s"; done
rm -f "$report"
echo "infra: ${passed} passed, ${failed} failed ($(($(date +%s) - started)) s)"
[ "$failed" = 0 ]
