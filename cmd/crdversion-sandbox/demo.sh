#!/bin/sh
# The walk-through that `make demo` runs inside the sandbox: KUBECONFIG points
# at the sandbox and bin/ (with kubectl-crdversion) is first on PATH. Each
# command is printed as a user would type it, then run.
set -eu

crdversion() {
	printf '\n$ kubectl crdversion %s\n' "$*"
	if command -v kubectl >/dev/null 2>&1; then
		kubectl crdversion "$@"
	else
		kubectl-crdversion "$@"
	fi
}

crdversion version

# The README's quick start: ReferenceGrant as Gateway API v0.6.2 ships it.
crdversion status referencegrants.gateway.networking.k8s.io

# Gateway API v0.6.2 as released: HTTPRoute serves v1alpha2 (deprecated) and
# stores v1beta1, with one example route.
crdversion status httproutes.gateway.networking.k8s.io

# Retire v1alpha2 first. The plan: every step done, to do or blocked. The
# sandbox's API server started a minute ago, so its request counters hold
# none of the day that --usage-history looks back on by default (the check
# would say unknown): the sandbox had no client before, and we say so with
# --usage-history 0. On a real cluster, give Prometheus (--prometheus-url).
# --migrate: status.storedVersions without v1alpha2 is a claim; the
# migration pass proves it, writing only objects still stored there.
crdversion retire httproutes.gateway.networking.k8s.io v1alpha2 --usage-history 0 --migrate --dry-run
crdversion retire httproutes.gateway.networking.k8s.io v1alpha2 --usage-history 0 --migrate

# HTTPRoute now has one version. Add v1 with v1beta1's schema (same schema,
# so conversion None is safe), as Gateway API v1.0 did...
crdversion add-version httproutes.gateway.networking.k8s.io v1 --from v1beta1
crdversion status httproutes

# ...make it the storage version, after checking every route at v1...
crdversion promote-storage httproutes.gateway.networking.k8s.io v1
crdversion status httproute

# ...rewrite every stored route at v1, then trim storedVersions to [v1]...
crdversion migrate httproutes.gateway.networking.k8s.io
crdversion status httproutes.gateway.networking.k8s.io -o jsonpath='{.state}{" storedVersions="}{.storedVersions}{" next: "}{.next.command}{"\n"}'

# ...and deprecate v1beta1, so that its clients get a warning.
crdversion deprecate httproutes.gateway.networking.k8s.io v1beta1

# A controller made a ConfigMap for the example route while it read routes
# at v1beta1: its owner reference names gateway.networking.k8s.io/v1beta1,
# and nothing rewrites that. (The route's uid is read through v1, so that
# reading it is not a client of v1beta1.)
if command -v kubectl >/dev/null 2>&1; then
	uid=$(kubectl get httproutes.v1.gateway.networking.k8s.io http-app-1 -n default -o jsonpath='{.metadata.uid}')
	kubectl create -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: http-app-1-routing
  namespace: default
  ownerReferences:
  - {apiVersion: gateway.networking.k8s.io/v1beta1, kind: HTTPRoute, name: http-app-1, uid: "$uid"}
EOF
fi

# A client still reading v1beta1 blocks its retirement (and unserve): the
# API server's request counters show it.
if command -v kubectl >/dev/null 2>&1; then
	( while :; do kubectl get httproutes.v1beta1.gateway.networking.k8s.io -A >/dev/null 2>&1; sleep 0.2; done ) &
	client=$!
	crdversion retire httproutes.gateway.networking.k8s.io v1beta1 || echo "(refused, exit code $?; nothing was changed)"
	kill "$client"
	wait "$client" 2>/dev/null || true
	sleep 1 # let its last request finish
fi

# The client stopped, but its requests stay in the API server's counters,
# which carry no time, and the example route's managedFields record a write
# through v1beta1 minutes ago (the sandbox installed it). Within
# --usage-history (a day by default) both count: a client that calls less
# often than once a window, or an operator that applies the same object
# again and again, looks just like that. retire refuses, naming both.
crdversion retire httproutes.gateway.networking.k8s.io v1beta1 || echo "(refused, exit code $?; nothing was changed)"

# We know both are done, and say so: --usage-history 0 looks at the window
# only. The ConfigMap's owner reference names v1beta1: once v1beta1 is
# unserved the garbage collector cannot resolve it and would never delete
# the ConfigMap with its route. And the route's managedFields still name
# v1beta1, so server-side apply would fail once v1beta1 is gone. retire
# refuses until both are rewritten: --repair-references and
# --clean-managed-fields do it.
crdversion retire httproutes.gateway.networking.k8s.io v1beta1 --usage-history 0 --migrate || echo "(refused, exit code $?; nothing was changed)"
crdversion retire httproutes.gateway.networking.k8s.io v1beta1 --usage-history 0 --migrate --clean-managed-fields --repair-references
crdversion status httproutes.gateway.networking.k8s.io

# ReferenceGrant stores v1alpha2 and serves v1beta1 beside it: a promotion
# is due. A server-side dry run runs every check and writes nothing.
crdversion promote-storage referencegrants.gateway.networking.k8s.io v1beta1 --dry-run=server
crdversion status referencegrants.gateway.networking.k8s.io -o jsonpath='{.state}{" "}{.next.command}{"\n"}'
