# Sourced by up, down and tests/e2e/run: where the control plane keeps its
# state, the ports it listens on (all on 127.0.0.1), and the helpers that
# start, wait for and stop its processes.

STATE=${FI_E2E_STATE:-$ROOT/target/e2e-cluster}
KUBECONFIG=$STATE/kubeconfig

ETCD_PORT=${FI_E2E_ETCD_PORT:-12379}
ETCD_PEER_PORT=${FI_E2E_ETCD_PEER_PORT:-12380}
APISERVER_PORT=${FI_E2E_APISERVER_PORT:-16443}
CONTROLLER_MANAGER_PORT=${FI_E2E_CONTROLLER_MANAGER_PORT:-10257}
SCHEDULER_PORT=${FI_E2E_SCHEDULER_PORT:-10259}
KWOK_PORT=${FI_E2E_KWOK_PORT:-10247}
LWS_WEBHOOK_PORT=${FI_E2E_LWS_WEBHOOK_PORT:-19444}
PROVIDER_WEBHOOK_PORT=${FI_E2E_PROVIDER_WEBHOOK_PORT:-19443}
CROSSPLANE_METRICS_PORT=${FI_E2E_CROSSPLANE_METRICS_PORT:-18080}
CROSSPLANE_HEALTH_PORT=${FI_E2E_CROSSPLANE_HEALTH_PORT:-18081}
REGISTRY_PORT=${FI_E2E_REGISTRY_PORT:-15000}
# Crossplane dials a Function at <name>.<namespace>:9443; not movable.
FUNCTION_PORT=9443

# Crossplane's registry client speaks plain HTTP to localhost.
LOCAL_REGISTRY=localhost:$REGISTRY_PORT
# The name the package manager gives the Function: ToDNSLabel(repository).
FUNCTION_NAME=function-inference-function-inference
PACKAGE_VERSION=v0.1.0
REFERENCE_CRDS=$ROOT/tests/data/crds

step() { echo "== $*"; }
die() {
  echo "e2e cluster: $*" >&2
  exit 1
}

# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start NAME CMD...: runs CMD in a process group of its own, output to
# $STATE/logs/NAME.log, and records its PID for `down`.
start() {
  local name=$1
  shift
  setsid "$@" </dev/null >"$STATE/logs/$name.log" 2>&1 &
  echo "$name $!" >>"$STATE/pids"
}

# wait_for WHAT SECONDS CMD...: retries CMD every second until it succeeds;
# fails with the last output when SECONDS pass or a started process died.
wait_for() {
  local what=$1 seconds=$2 out deadline
  shift 2
  deadline=$((SECONDS + seconds))
  while true; do
    if out=$("$@" 2>&1); then
      return 0
    fi
    if ((SECONDS >= deadline)); then
      echo "$out" >&2
      die "gave up waiting for $what after ${seconds}s"
    fi
    check_alive
    sleep 1
  done
}

# check_alive: every process `start` recorded is still running.
check_alive() {
  local name pid
  while read -r name pid; do
    kill -0 "$pid" 2>/dev/null || {
      tail -n 40 "$STATE/logs/$name.log" >&2
      die "$name (pid $pid) exited; its log is $STATE/logs/$name.log"
    }
  done <"$STATE/pids"
}

# kubeconfig_for_cert FILE CERT KEY: a kubeconfig with a client certificate.
kubeconfig_for_cert() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 <"$STATE/pki/ca.crt")
users:
- name: e2e
  user:
    client-certificate-data: $(base64 -w0 <"$2")
    client-key-data: $(base64 -w0 <"$3")
contexts:
- name: e2e
  context: {cluster: e2e, user: e2e}
current-context: e2e
EOF
}

# kubeconfig_for_service_account FILE NAMESPACE NAME: a kubeconfig with a token
# of that ServiceAccount, as a pod running under it would have.
kubeconfig_for_service_account() {
  local file=$1 namespace=$2 name=$3 token
  kubectl get serviceaccount -n "$namespace" "$name" >/dev/null 2>&1 ||
    kubectl create serviceaccount -n "$namespace" "$name" >/dev/null
  token=$(kubectl create token -n "$namespace" "$name" --duration 48h)
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 <"$STATE/pki/ca.crt")
users:
- name: $name
  user:
    token: $token
contexts:
- name: e2e
  context: {cluster: e2e, user: $name, namespace: $namespace}
current-context: e2e
EOF
}

# secret_to_dir NAMESPACE NAME DIR: the Secret's keys as files, as a mounted
# Secret volume would give them.
secret_to_dir() {
  local key
  mkdir -p "$3"
  for key in $(kubectl get secret -n "$1" "$2" -o go-template='{{range $k, $v := .data}}{{$k}} {{end}}'); do
    kubectl get secret -n "$1" "$2" -o go-template="{{index .data \"$key\" | base64decode}}" >"$3/$key"
  done
}

# module_dir MODULE VERSION: the module's source in the Go module cache
# (tests/go-tools.sh downloaded it when it built the tool).
module_dir() {
  local dir
  dir=$(cd "$STATE" && GOFLAGS=-mod=mod go mod download -json "$1@$2" 2>/dev/null |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -n $dir && -d $dir ]] || die "cannot find $1@$2 in the Go module cache"
  echo "$dir"
}

# without_kinds KIND...: the YAML stream on stdin less the documents of those kinds.
without_kinds() {
  awk -v kinds=" $* " '
    function flush() { if (doc != "" && index(kinds, " " kind " ") == 0) printf "---\n%s", doc; doc = ""; kind = "" }
    /^---/ { flush(); next }
    /^kind: / { kind = $2 }
    { doc = doc $0 "\n" }
    END { flush() }'
}

# lws_webhooks: the LeaderWorkerSet webhook configurations of its
# kustomization (config/webhook with its patches), by URL on loopback.
lws_webhooks() {
  local ca url
  ca=$(base64 -w0 <"$STATE/pki/ca.crt")
  url=https://127.0.0.1:$LWS_WEBHOOK_PORT
  cat <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: lws-mutating-webhook-configuration}
webhooks:
- name: mleaderworkerset.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  rules: [{apiGroups: [leaderworkerset.x-k8s.io], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [leaderworkersets]}]
- name: mpod.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/mutate--v1-pod", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  objectSelector: {matchExpressions: [{key: leaderworkerset.sigs.k8s.io/name, operator: Exists}]}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: lws-validating-webhook-configuration}
webhooks:
- name: vleaderworkerset.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  rules: [{apiGroups: [leaderworkerset.x-k8s.io], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [leaderworkersets]}]
- name: vpod.kb.io
  admissionReviewVersions: [v1]
  clientConfig: {url: "$url/validate--v1-pod", caBundle: "$ca"}
  failurePolicy: Fail
  sideEffects: None
  objectSelector: {matchExpressions: [{key: leaderworkerset.sigs.k8s.io/name, operator: Exists}]}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}]
EOF
}

# make_volumes N: N static hostPath PersistentVolumes of the default
# StorageClass (no provisioner runs), and N of the shared one (ReadWriteMany,
# and ReadWriteOnce too, as a file store's volumes are).
# Nothing mounts them (kwok runs no container); each binds once.
make_volumes() {
  local i class mode
  for ((i = 1; i <= $1; i++)); do
    for class in standard shared; do
      mode=ReadWriteOnce
      [[ $class == shared ]] && mode="ReadWriteOnce, ReadWriteMany"
      mkdir -p "$STATE/volumes/$class-$i"
      cat <<EOF
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: e2e-$class-$i
  labels: {e2e.infer.dev/volume: "true"}
spec:
  capacity: {storage: 2Ti}
  accessModes: [$mode]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: $class
  hostPath: {path: $STATE/volumes/$class-$i}
EOF
    done
  done | kubectl apply -f - >/dev/null
}

# provider_service_account: the ServiceAccount of the Deployment the package
# manager made for provider-kubernetes (fails until there is one).
provider_service_account() {
  local sa
  sa=$(kubectl get deployment -n crossplane-system -o jsonpath='{.items[?(@.spec.selector.matchLabels.pkg\.crossplane\.io/provider=="crossplane-contrib-provider-kubernetes")].spec.template.spec.serviceAccountName}' 2>/dev/null)
  [[ -n $sa ]] && echo "$sa"
}

# packages_healthy: every package and revision is Healthy.
packages_healthy() {
  kubectl wait configuration.pkg,function.pkg,provider.pkg --all --for condition=Healthy --timeout 5s
}

# chart_args COMMAND SUBCOMMAND: the further arguments the rendered chart
# ($STATE/crossplane-chart.yaml) gives the container that runs
# `crossplane COMMAND SUBCOMMAND`, one per line, quotes removed.
chart_args() {
  awk -v w1="$1" -v w2="$2" '
    /^ *args:$/ { inargs = 1; n = 0; split("", a); next }
    inargs && /^ *- / { line = $0; sub(/^ *- /, "", line); gsub(/"/, "", line); a[++n] = line; next }
    inargs { inargs = 0; if (n >= 2 && a[1] == w1 && a[2] == w2) for (i = 3; i <= n; i++) print a[i] }
  ' "$STATE/crossplane-chart.yaml"
}
